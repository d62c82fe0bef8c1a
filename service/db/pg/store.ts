/**
 * The asynchronous Store (store-api.ts) over PostgreSQL. See docs/architecture.md § Storage engines.
 *
 * - **One writer per process.** Transactions (`tx`) and group-commit batches run one at a time, in the order they
 *   were asked for (Serial), each on a pooled connection: the observers' in-memory state (events to publish, claimed
 *   outbox rows) lives beside one transaction at a time, as on SQLite, and a batch reads everything the previous one
 *   wrote. Reads (`read`) run beside them on the other connections. Other hosts on the same database are ordered by
 *   PostgreSQL's row locks.
 * - **Group commit.** `ingest` queues a unit; a batch opens a transaction, runs the queued units one after another,
 *   each in a SAVEPOINT (a throwing unit is rolled back to it and the batch goes on), takes units arriving meanwhile
 *   until `batchWindowMs` after it opened (or `maxBatchUnits`), runs the `beforeCommit` writes, and COMMITs
 *   (`synchronous_commit` on: durable when it returns). Only then are the units' Promises resolved and the observers'
 *   announcements run; a failed COMMIT rejects every unit of the batch and tells `onCommitFailure`'s listeners.
 * - **Seq.** An event's per-user seq is taken in the committing transaction by the events repository
 *   (pg/repos/events.ts): gap-free and in commit order across hosts.
 */
import { runSteps, stepsOver } from '../steps.ts';
import { Serial } from '../serial.ts';
import type { StorageState, TransactionObserver } from '../store.ts';
import type { Store, TxOptions, Work } from '../store-api.ts';
import { openPg, type PgOptions, type Sql } from './client.ts';
import { hasPgSchema, migratePg, PgSchemaMissingError } from './migrations.ts';
import { pgRepos } from './repos/index.ts';

export interface PgStoreOptions {
  /** How long a batch takes units after it opened, in ms (4, as SQLite's group commit). */
  batchWindowMs?: number;
  /** Most units in one batch (1,000); the rest go to the next. */
  maxBatchUnits?: number;
}

/**
 * Whether `err` means the database cannot take writes (connection lost or refused, disk full, server shutting
 * down), as opposed to a bug or a constraint: PostgreSQL SQLSTATE classes 08 (connection), 53 (insufficient
 * resources), 57P (operator intervention), 58 (system error), the driver's connection errors, or a socket errno.
 */
export function isPgStorageError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    /^(08|53|57P|58|CONNECTION_|CONNECT_TIMEOUT|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH)/.test(code)
  );
}

/**
 * `sql` (a transaction's) that refuses new queries once `dead()` says its transaction is over, with a driver error
 * (code CONNECTION_CLOSED, a storage error). postgres.js 3.4 ends a transaction whose connection closed (`begin`
 * rejects) while the caller's code may still run; a query it made then would go to that connection object, which the
 * pool may since have reconnected for other work — outside any transaction. (A write queued for a connection that
 * closed threw from a setImmediate in 3.4.9: patches/postgres+3.4.9.patch, porsager/postgres#1154.) Savepoints
 * opened through it are guarded alike.
 */
function guarded<S extends object>(sql: S, dead: () => boolean): S {
  const refuse = (): never => {
    throw Object.assign(new Error("write refused: this transaction's connection was closed"), { code: 'CONNECTION_CLOSED' });
  };
  return new Proxy(sql as unknown as Sql, {
    apply(target, self, args: unknown[]) {
      // A tagged template makes a query; sql(value) helpers only make fragments.
      if (dead() && Array.isArray(args[0]) && 'raw' in args[0]) refuse();
      return Reflect.apply(target, self, args) as unknown;
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'unsafe') {
        return (...args: Parameters<Sql['unsafe']>) => (dead() ? refuse() : target.unsafe(...args));
      }
      if (prop === 'savepoint') {
        return (...args: unknown[]) => {
          if (dead()) refuse();
          const fn = args.pop() as (s: Sql) => unknown;
          return (target as unknown as { savepoint: (...a: unknown[]) => Promise<unknown> }).savepoint(...args, (s: Sql) => fn(guarded(s, dead)));
        };
      }
      return value;
    },
  }) as unknown as S;
}

/**
 * Opens the database at `url`, brings its schema up to date (migratePg) and returns the Store over it.
 * @param opts.existingSchema refuse a database without Switchboard's schema (PgSchemaMissingError; nothing created)
 */
export async function openPgStore(url: string, opts: PgStoreOptions & { pool?: PgOptions; existingSchema?: boolean } = {}): Promise<Store> {
  const sql = openPg(url, opts.pool);
  try {
    if (opts.existingSchema && !(await hasPgSchema(sql))) throw new PgSchemaMissingError('the database holds no Switchboard schema');
    await migratePg(sql);
  } catch (err) {
    await sql.end({ timeout: 1 });
    throw err;
  }
  return pgStore(sql, opts);
}

interface Unit {
  work: Work<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  result?: unknown;
}

interface Batch {
  accepting: boolean;
  /** Set when the transaction ended (committed or failed): its loop must take no more units. */
  over: boolean;
  /** The unit running now (rejected with the batch if the connection dies under it). */
  running?: Unit;
  /** Commit as soon as the queue is empty, without waiting for the window (a tx or durable() waits for it). */
  closeEarly: boolean;
  units: Unit[];
  /** whenDurable callbacks: run after the COMMIT, dropped when it fails. */
  waiters: Array<() => void>;
  /** Settles with the batch: resolved after its COMMIT, rejected with the failure. */
  done: Promise<void>;
  settle: (err?: unknown) => void;
}

function newBatch(): Batch {
  let settle!: (err?: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(err as Error));
  });
  done.catch(() => undefined); // observed through the units and durable()
  return { accepting: true, over: false, closeEarly: false, units: [], waiters: [], done, settle };
}

/** The Store over the pool `sql` (its schema migrated), which it owns from now on: `close()` ends it. */
export function pgStore(sql: Sql, opts: PgStoreOptions = {}): Store {
  const windowMs = opts.batchWindowMs ?? 4;
  const maxUnits = opts.maxBatchUnits ?? 1_000;
  const writer = new Serial();
  const read = pgRepos({ sql, inTx: false });

  // ---- observers, storage state ------------------------------------------------------------------------------
  const observers: TransactionObserver[] = [];
  const markAll = (): unknown[] => observers.map((o) => o.mark());
  const rollBackTo = (marks: readonly unknown[]) => marks.forEach((m, i) => observers[i]!.rolledBack(m));
  /** What the commit just made left to announce, as one function (run after the commit, in observer order). */
  const takeCommitted = (): (() => void) => {
    const runs = observers.map((o) => o.committed()).filter((r): r is () => void => r !== undefined);
    return () => {
      for (const run of runs) {
        try {
          run();
        } catch {
          // One observer's announcement must not keep the others' from running.
        }
      }
    };
  };
  let storage: StorageState = { state: 'ok' };
  const failureListeners = new Set<(err: Error) => void>();
  const commitFailed = (err: unknown) => {
    const error = err instanceof Error ? err : new Error(String(err));
    if (storage.state === 'ok') {
      storage = { state: 'unavailable', error: `${(error as { code?: string }).code ?? 'Error'}: ${error.message}`, since: new Date().toISOString() };
    }
    for (const listener of failureListeners) {
      try {
        listener(error);
      } catch {
        // A listener's failure must not keep the others from hearing it.
      }
    }
  };
  const committed = () => {
    if (storage.state !== 'ok') storage = { state: 'ok' };
  };

  // ---- group commit ------------------------------------------------------------------------------------------
  const queue: Unit[] = [];
  const deferred: Array<Work<void>> = [];
  /** The batch running now (accepting units, or committing). */
  let current: Batch | undefined;
  /** The batch asked for (its turn not come yet): takes whenDurable callbacks meanwhile. */
  let next: Batch | undefined;
  /** Wakes the running batch waiting for units (a unit arrived, or its window must close). */
  let wake: (() => void) | undefined;
  /** Closes `batch`'s window now (it commits once its queue is empty). */
  const hurry = (batch: Batch) => {
    batch.closeEarly = true;
    if (batch === current) wake?.();
  };

  /** Makes sure a batch runs for what is queued: wakes the accepting one, or asks for the next. */
  function kick(): void {
    if (current?.accepting) return wake?.();
    if (next) return;
    const batch = (next = newBatch());
    void writer.run(() => runBatch(batch));
  }

  async function runBatch(batch: Batch): Promise<void> {
    next = undefined;
    current = batch;
    const opened = performance.now();
    const marks = markAll();
    let failure: unknown;
    let began = false;
    try {
      await sql.begin(async (tx) => {
        began = true;
        const t = guarded(tx, () => batch.over);
        const repos = pgRepos({ sql: t, inTx: true });
        for (;;) {
          if (batch.over) return; // the connection died under the last unit: the batch failed without it
          const unit = queue.shift();
          if (unit) {
            const unitMarks = markAll();
            batch.running = unit;
            try {
              unit.result = await t.savepoint((s) => unit.work(pgRepos({ sql: s, inTx: true })));
              if (batch.over) return;
              batch.units.push(unit);
            } catch (err) {
              if (batch.over) return;
              rollBackTo(unitMarks);
              unit.reject(err);
            } finally {
              batch.running = undefined;
            }
            if (batch.units.length >= maxUnits) break;
            continue;
          }
          const left = windowMs - (performance.now() - opened);
          if (left <= 0 || batch.closeEarly) break;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, left);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
        batch.accepting = false;
        while (deferred.length > 0) await deferred.shift()!(repos);
      });
    } catch (err) {
      failure = err;
    }
    batch.accepting = false;
    batch.over = true;
    current = undefined;
    if (failure !== undefined) {
      rollBackTo(marks);
      commitFailed(failure);
      if (batch.running) batch.units.push(batch.running);
      for (const unit of batch.units) unit.reject(failure);
      // As on SQLite, the coalesced writes not yet run go with the batch (their owners heard commitFailed); and when
      // no transaction could even begin (the database unreachable), the queued units fail now rather than retry.
      deferred.length = 0;
      if (!began) for (const unit of queue.splice(0)) unit.reject(failure);
      batch.settle(failure);
    } else {
      committed();
      takeCommitted()();
      for (const unit of batch.units) unit.resolve(unit.result);
      for (const cb of batch.waiters) {
        try {
          cb();
        } catch {
          // A waiter's failure must not keep the others from running.
        }
      }
      batch.settle();
    }
    if (queue.length > 0 || deferred.length > 0) kick();
  }

  /** The batch that will commit everything written so far, if one is running or asked for. */
  const pendingBatch = (): Batch | undefined => {
    if (current?.accepting) return current;
    if (queue.length > 0 || deferred.length > 0 || next) {
      kick();
      return next ?? current;
    }
    return current;
  };

  async function tx<T>(work: Work<T>, opts: TxOptions = {}): Promise<T> {
    // As SQLite's tx commits the open batch first: the batches before this tx commit without waiting for their window.
    if (current?.accepting) hurry(current);
    if (next) hurry(next);
    return writer.run(async () => {
      const marks = markAll();
      let result: T;
      let over = false;
      try {
        result = await sql.begin(async (tx) => {
          const t = guarded(tx, () => over);
          if (opts.relaxed) await t`SET LOCAL synchronous_commit = off`;
          return work(pgRepos({ sql: t, inTx: true }));
        }) as T;
      } catch (err) {
        rollBackTo(marks);
        if (isPgStorageError(err)) commitFailed(err);
        throw err;
      } finally {
        over = true;
      }
      committed();
      takeCommitted()();
      return result;
    });
  }

  function ingest<T>(unit: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ work: unit as Work<unknown>, resolve: resolve as (v: unknown) => void, reject });
      kick();
    });
  }

  return {
    engine: 'postgres',
    tx,
    ingest,
    // Step by step: each statement is a round trip; the steps' wrappers are made per transaction (its Repos).
    txSteps: (work, opts) => tx((t) => runSteps(work(stepsOver(t))), opts),
    ingestSteps: (unit) => ingest((t) => runSteps(unit(stepsOver(t)))),
    beforeCommit(write) {
      deferred.push(write);
      kick();
    },
    whenDurable(cb) {
      const batch = pendingBatch();
      if (batch) batch.waiters.push(cb);
      else cb();
    },
    async durable() {
      const batch = pendingBatch();
      if (!batch) return;
      hurry(batch);
      await batch.done;
    },
    isDurable: () => current === undefined && next === undefined && queue.length === 0 && deferred.length === 0 && !writer.busy,
    read,
    observeTransactions(observer) {
      observers.push(observer);
    },
    storage: () => storage,
    onCommitFailure(listener) {
      failureListeners.add(listener);
      return () => failureListeners.delete(listener);
    },
    async close() {
      const batch = pendingBatch();
      if (batch) {
        hurry(batch);
        await batch.done.catch(() => undefined);
      }
      await writer.run(() => undefined);
      await sql.end({ timeout: 5 });
    },
  };
}

