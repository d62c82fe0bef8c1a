/**
 * The asynchronous Store (store-api.ts) over SQLite: the synchronous store (store.ts) underneath, its group commit,
 * WAL fsync off the event loop and observers unchanged. Every statement still runs synchronously on the one
 * connection; what this adds is the order: one transaction or group-commit unit at a time (a FIFO of waiters, free
 * when idle — the common case — so a unit starts in the same tick), each opened and ended through the store's
 * `begin()` halves so the work may `await` its repository calls in between. See docs/architecture.md § Storage
 * engines.
 */
import { MESSAGE_REPO_NAMES } from './pg/repos/message-repos.ts';
import { Serial } from './serial.ts';
import { runSteps, runStepsNow, stepsOver, stepsOverSync, type StepRepos, type Steps } from './steps.ts';
import { openStore, type Store as SyncStore, type StoreOptions } from './store.ts';
import type { Repos, Store, TxOptions, Work } from './store-api.ts';

/** Every repository of Repos, by the name the synchronous store has it under (a Repos key missing here fails to typecheck). */
const REPO_NAMES: Record<keyof Repos, true> = {
  users: true,
  tokens: true,
  connections: true,
  authState: true,
  events: true,
  webhooks: true,
  deliveries: true,
  idempotency: true,
  billing: true,
  ...MESSAGE_REPO_NAMES,
};
const REPOS = Object.keys(REPO_NAMES) as Array<keyof Repos>;

/**
 * Each method of `repo` as one returning a Promise; `call` runs the method (and decides when). A generator method
 * (messages.iterate) becomes an async iterable whose every step is such a call; an object of methods
 * (messages.rendered) is wrapped the same way.
 */
function wrapRepo(
  repo: Record<string, unknown>,
  call: (fn: (...a: unknown[]) => unknown, self: unknown, args: unknown[]) => Promise<unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(repo)) {
    if (typeof value === 'function' && value.constructor.name === 'GeneratorFunction') {
      out[name] = (...args: unknown[]): AsyncIterable<unknown> => {
        const it = (value as (...a: unknown[]) => Generator<unknown>).apply(repo, args);
        const step = (fn: (...a: unknown[]) => unknown, a: unknown[]) => call(fn, it, a) as Promise<IteratorResult<unknown>>;
        return { [Symbol.asyncIterator]: () => ({ next: () => step(it.next as (...a: unknown[]) => unknown, []), return: (v?: unknown) => step(it.return as (...a: unknown[]) => unknown, [v]) }) };
      };
    } else if (typeof value === 'function') out[name] = (...args: unknown[]) => call(value as (...a: unknown[]) => unknown, repo, args);
    else if (value !== null && typeof value === 'object') out[name] = wrapRepo(value as Record<string, unknown>, call);
  }
  return out;
}

function wrapRepos(sync: SyncStore, call: Parameters<typeof wrapRepo>[1]): Repos {
  const repos: Record<string, unknown> = {};
  for (const name of REPOS) repos[name] = wrapRepo(sync[name] as unknown as Record<string, unknown>, call);
  return repos as unknown as Repos;
}

/** Opens `<dataDir>/switchboard.db` as an asynchronous Store (openStore's options and errors). */
export function openSqliteStore(dataDir: string, opts: StoreOptions = {}): Store {
  return sqliteStore(openStore(dataDir, opts));
}

/** The asynchronous Store over `sync`, which it owns from now on (use it only through this Store). */
export function sqliteStore(sync: SyncStore): Store {
  // ---- one transaction or unit at a time ------------------------------------------------------------------
  const turns = new Serial();
  const acquire = () => turns.acquire();
  const release = () => turns.release();
  /** Runs `fn` in a turn of its own (now when idle). */
  const inTurn = <T>(fn: () => T): Promise<T> => turns.run(fn);

  // ---- durability waiters: resolved by the sync store's whenDurable, rejected by a failed commit -------------
  const waiters = new Set<{ resolve: () => void; reject: (err: Error) => void }>();
  sync.onCommitFailure((err) => {
    for (const w of waiters) w.reject(err);
    waiters.clear();
  });
  /** Resolves with `value` once everything written so far is durable; rejects when that commit fails. */
  const durableWith = <T>(value: T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const w = { resolve: () => resolve(value), reject };
      waiters.add(w);
      sync.whenDurable(() => {
        if (waiters.delete(w)) w.resolve();
      });
    });
  const durableNow = (): Promise<void> => durableWith(undefined);

  /** Runs a repository method now; its result (or error) as a Promise. */
  const callNow = (fn: (...a: unknown[]) => unknown, self: unknown, args: unknown[]): Promise<unknown> => {
    try {
      return Promise.resolve(fn.apply(self, args));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  };
  /** The repositories a transaction's work gets: plain calls (the work holds the turn). */
  const inside = wrapRepos(sync, callNow);
  /** Outside any work: at once when idle, else after the running work (never inside its transaction). */
  const read = wrapRepos(sync, (fn, self, args) => (turns.busy ? inTurn(() => fn.apply(self, args)) : callNow(fn, self, args)));
  /**
   * For `beforeCommit` writes, which run inside the sync store's batch commit: a failing call is remembered, so the
   * batch's COMMIT fails with it (store.ts), and a call made after the write's first `await` (after that COMMIT)
   * fails instead of writing outside the batch.
   */
  let deferredError: unknown;
  let deferredOpen = false;
  const deferred = wrapRepos(sync, (fn, self, args) => {
    if (!deferredOpen) return Promise.reject(new Error('a beforeCommit write called a repository after its first await'));
    try {
      return Promise.resolve(fn.apply(self, args));
    } catch (err) {
      deferredError ??= err;
      return Promise.reject(err as Error);
    }
  });

  async function run<T>(kind: 'tx' | 'ingest', work: Work<T>, opts: TxOptions = {}): Promise<T> {
    const wait = acquire();
    if (wait) await wait;
    let handle: ReturnType<SyncStore['begin']>;
    try {
      handle = sync.begin(kind, opts.relaxed === true);
    } catch (err) {
      release();
      throw err;
    }
    let result: T;
    try {
      result = await work(inside);
    } catch (err) {
      try {
        handle.rollback();
      } finally {
        release();
      }
      throw err;
    }
    if (kind === 'tx') {
      try {
        handle.commit(); // durable (synchronous=FULL, or the WAL synced) unless relaxed; observers announced
      } finally {
        release();
      }
      return result;
    }
    const durable = durableNow(); // before the commit below, which may close the batch (and fail)
    durable.catch(() => undefined); // awaited below, unless the commit throws
    try {
      handle.commit();
    } finally {
      release();
    }
    await durable;
    return result;
  }

  // ---- steps units (steps.ts): synchronous when nothing else runs -------------------------------------------
  // Made on first use: a Store whose callers never run steps (the routes' reads) wraps no repository for them.
  let syncSteps: StepRepos | undefined;
  let insideSteps: StepRepos | undefined;
  /**
   * Runs a steps unit: when idle, to its end inside the synchronous store's own `tx`/`ingest` (this call, no Promise
   * per statement); behind running work, as asynchronous work in its turn.
   */
  function runStepsUnit<T>(kind: 'tx' | 'ingest', work: Steps<T>, opts: TxOptions = {}): Promise<T> {
    if (turns.busy || (kind === 'tx' && opts.relaxed)) return run(kind, () => runSteps(work((insideSteps ??= stepsOver(inside)))), opts);
    const steps = (syncSteps ??= stepsOverSync(sync as unknown as Record<string, unknown>, REPOS));
    let result: T;
    try {
      result = kind === 'tx' ? sync.tx(() => runStepsNow(work(steps))) : sync.ingest(() => runStepsNow(work(steps)));
    } catch (err) {
      return Promise.reject(err as Error);
    }
    // tx: committed and synced (FULL) already; ingest: once its batch's COMMIT is on disk
    return kind === 'tx' ? Promise.resolve(result) : durableWith(result);
  }

  return {
    engine: 'sqlite',
    tx: (work, opts) => run('tx', work, opts),
    ingest: (unit) => run('ingest', unit),
    txSteps: (work, opts) => runStepsUnit('tx', work, opts),
    ingestSteps: (unit) => runStepsUnit('ingest', unit),
    beforeCommit(write) {
      const register = () =>
        sync.beforeCommit(() => {
          deferredError = undefined;
          deferredOpen = true;
          try {
            void write(deferred).catch(() => undefined); // its calls ran synchronously; a failure is in deferredError
          } finally {
            deferredOpen = false;
          }
          if (deferredError !== undefined) throw deferredError;
        });
      if (turns.busy) void inTurn(register);
      else register();
    },
    whenDurable(cb) {
      if (turns.busy) void inTurn(() => sync.whenDurable(cb));
      else sync.whenDurable(cb);
    },
    // The turn is only for closing the batch: the wait for its fsync (on the thread pool) holds no one up.
    durable: () => inTurn(() => ({ synced: sync.durable() })).then(({ synced }) => synced),
    isDurable: () => !turns.busy && sync.isDurable(),
    read,
    observeTransactions(observer) {
      if (turns.busy) void inTurn(() => sync.observeTransactions(observer));
      else sync.observeTransactions(observer);
    },
    storage: () => sync.storage(),
    onCommitFailure: (listener) => sync.onCommitFailure(listener),
    close: () => inTurn(() => sync.close()),
  };
}
