/**
 * The data layer in one object: the open database, every table's named queries, the group commit, and `tx()`,
 * which runs work in one SQLite transaction. Layers above keep in-memory state beside a transaction (the event
 * log's events to publish, the webhook outbox's claims) through `observeTransactions`: told to drop it when the
 * transaction rolls back, and to announce it once (and only if) the commit is on disk. The store itself knows
 * neither events nor webhooks beyond their tables.
 */
import path from 'node:path';
import { TransactionSerial } from './cache-generation.ts';
import { inTransaction, openDatabase, setSynchronous, type Db } from './database.ts';
import { WalSync } from './wal-sync.ts';
import type { Statement } from 'better-sqlite3';
import { authStateRepo } from './auth-state.ts';
import { billingRepo } from './billing.ts';
import { chatsRepo } from './chats.ts';
import { connectionsRepo } from './connections.ts';
import { contactsRepo } from './contacts.ts';
import { deliveriesRepo } from './deliveries.ts';
import { eventsRepo } from './events.ts';
import { groupMetadataRepo } from './group-metadata.ts';
import { idempotencyRepo } from './idempotency.ts';
import { MediaUrls } from './media-url.ts';
import { messagesRepo } from './messages.ts';
import { searchIndex } from './search.ts';
import { tokensRepo } from './tokens.ts';
import { usersRepo } from './users.ts';
import { webhooksRepo } from './webhooks.ts';

export type Store = ReturnType<typeof createStore>;

/**
 * Whether `err` means the disk cannot take writes (full, I/O error, read-only, gone), as opposed to a bug or a
 * constraint: better-sqlite3's `SqliteError.code` (SQLITE_FULL, SQLITE_IOERR_*, SQLITE_READONLY_*, SQLITE_CANTOPEN)
 * or a Node errno (ENOSPC, EIO, EROFS, EDQUOT).
 */
export function isStorageError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(SQLITE_(FULL|IOERR|READONLY|CANTOPEN)|ENOSPC|EIO|EROFS|EDQUOT)/.test(code);
}

/**
 * Whether `err` means a write could not get the database's write lock in time (SQLITE_BUSY from SQLite's busy
 * timeout or from the threads' write lock, SQLITE_LOCKED): nothing was written, and the same write can be retried.
 */
export function isBusyError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}

/** The store's view of its disk: `unavailable` from a failed commit until the next successful one. */
export interface StorageState {
  state: 'ok' | 'unavailable';
  /** What failed (e.g. `SQLITE_FULL: database or disk is full`), while unavailable. */
  error?: string;
  /** ISO time of the first failure of this episode. */
  since?: string;
}

/**
 * In-memory state that a layer above the store keeps beside the running transaction (the event log's events to
 * publish, the webhook outbox's claimed rows). `mark` is taken when a transaction, savepoint or group-commit batch
 * begins; `rolledBack` undoes what was added since; `committed` takes what the outermost commit left and returns
 * what to run once that commit is on disk (undefined: nothing). Announcements run in the order observers were
 * added.
 */
export interface TransactionObserver<Mark = unknown> {
  mark(): Mark;
  rolledBack(mark: Mark): void;
  committed(): (() => void) | undefined;
}

export interface StoreOptions {
  /** Told when an fsync of the WAL fails (default: a process warning). The commit is synced again at once. */
  onSyncError?: (err: Error) => void;
  /**
   * Backpressure for the WAL, in bytes (256 MiB): a group commit that finds the WAL file larger runs a TRUNCATE
   * checkpoint on this thread, holding the writers back until the database file has caught up. Only reached when
   * the checkpoint worker (checkpointer.ts) cannot keep up, or is not running.
   */
  walLimitBytes?: number;
  /**
   * Taken right before each `BEGIN IMMEDIATE` of this store and given back right after its `COMMIT`/`ROLLBACK`,
   * when several threads of the process write the file (write-lock.ts; `serve --workers N`). Absent: SQLite's
   * busy handler alone orders the writers. The main thread's lock does not block (`acquire` only tries) and has
   * `runLocked`, which `txAsync` waits in without stopping the event loop.
   */
  writeLock?: { acquire(): void; release(): void; runLocked?<T>(fn: () => T, deadline: number): Promise<T> };
  /**
   * How long a write of this store waits for SQLite's write lock when another connection (another process, a tool)
   * holds it, in ms: SQLite's busy timeout (5,000 by default, database.ts), during which the thread sleeps. The main
   * thread with session threads sets 0 (it never sleeps; `txAsync` retries on timers instead). A write that gives up
   * throws SQLITE_BUSY and has written nothing.
   */
  busyTimeoutMs?: number;
  /** How long `txAsync` waits for the write locks in all before SQLITE_BUSY, in ms (MAIN_THREAD_WRITE_WAIT_MS). */
  asyncWriteWaitMs?: number;
}

/**
 * How long the main thread's writes (API writes, webhook claims and outcomes, retention) wait for the write lock
 * — the threads' lock (write-lock.ts) and SQLite's — before giving up with SQLITE_BUSY (the API answers 503 with
 * `retry-after`). They wait asynchronously (`txAsync`: `Atomics.waitAsync` and timers), so the event loop keeps
 * serving meanwhile; the lock's usual holders keep it for milliseconds (a group commit's 4 ms window) up to a few
 * hundred (a large history chunk).
 */
export const MAIN_THREAD_WRITE_WAIT_MS = 1_000;

/** Opens `<dataDir>/switchboard.db` (see openDatabase for errors). */
export function openStore(dataDir: string, opts: StoreOptions = {}): Store {
  return createStore(openDatabase(path.join(dataDir, 'switchboard.db')), opts);
}

export function createStore(db: Db, opts: StoreOptions = {}) {
  if (opts.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs))}`);
  /** The running outermost write transaction (`tx` or batch): cached repositories check their counters once per one. */
  const serial = new TransactionSerial();
  const webhooks = webhooksRepo(db, serial);
  const search = searchIndex(db);
  const mediaUrls = new MediaUrls();
  const observers: TransactionObserver[] = [];
  let storage: StorageState = { state: 'ok' };
  const failureListeners = new Set<(err: Error) => void>();
  /**
   * A commit failed: whatever waited for it (receipts, sent messages) must never leave. Every listener hears it at
   * once, synchronously, before any other frame can go out (the sessions drop their held frames and close).
   */
  const commitFailed = (err: unknown) => {
    const error = err instanceof Error ? err : new Error(String(err));
    if (storage.state === 'ok') storage = { state: 'unavailable', error: `${(error as { code?: string }).code ?? 'Error'}: ${error.message}`, since: new Date().toISOString() };
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
  let depth = 0;
  /** The observers' marks when a transaction (or savepoint, or batch) began. */
  const markUncommitted = (): unknown[] => observers.map((o) => o.mark());
  /**
   * After a rollback to `marks`: the observers forget what was added since, and in-memory copies of rows the
   * rollback may have undone are dropped.
   */
  const rollBackTo = (marks: readonly unknown[]) => {
    marks.forEach((mark, i) => observers[i]!.rolledBack(mark));
    webhooks.forgetCache();
  };
  const nothing = () => undefined;

  /**
   * Takes what the transaction just committed left to announce (every observer's) and returns the function that
   * announces it, to run once the commit is on disk.
   */
  function takeCommitted(): () => void {
    let runs: Array<() => void> | undefined;
    for (const o of observers) {
      const run = o.committed();
      if (run) (runs ??= []).push(run);
    }
    if (!runs) return nothing;
    return () => {
      for (const run of runs) {
        try {
          run();
        } catch {
          // One observer's announcement must not keep the others' from running, nor break the writer.
        }
      }
    };
  }

  // ---- group commit ------------------------------------------------------------------------------------
  // Incoming traffic (the engine's `ingest`) is written into one open transaction that commits BATCH_WINDOW_MS
  // after it opened: one fsync for every message of that window instead of one each. The batch commits with
  // synchronous=NORMAL and its WAL is then fsynced on the thread pool (wal-sync.ts), so the event loop does not
  // wait for the disk. Nothing leaves the process before that sync: events are published, the webhook dispatcher
  // handed its rows and the engine's held frames (receipts) sent only afterwards (`whenDurable`). Any other
  // transaction (`tx`, an API write) commits the open batch first and returns with everything synced (FULL), and
  // the HTTP layer waits for `durable()` before each response, so an answer never reports a write not on disk.
  const BATCH_WINDOW_MS = 4;
  let batchOpen = false;
  let batchTimer: NodeJS.Timeout | undefined;
  /** The observers' marks when the open batch began. */
  let batchMarks: unknown[] = [];
  const afterBatch: Array<() => void> = [];
  /** Writes deferred to the end of the open batch (coalesced by their owner), run right before its COMMIT. */
  const beforeBatchCommit: Array<() => void> = [];
  const onSyncError =
    opts.onSyncError ?? ((err: Error) => process.emitWarning(`fsync of the SQLite WAL failed: ${err.message}`, 'SwitchboardStorage'));
  const walLimitBytes = opts.walLimitBytes ?? 256 * 1024 * 1024;
  const writeLock = opts.writeLock;
  const asyncWriteWaitMs = opts.asyncWriteWaitMs ?? MAIN_THREAD_WRITE_WAIT_MS;
  /** True while `txAsync` holds the threads' write lock around its synchronous transaction. */
  let heldAhead = false;
  /** Absent for an in-memory database: its batches commit with FULL (a no-op) and announce at once. */
  // A WAL that cannot be synced even on the retry: what waited for those commits (receipts) must not leave either.
  const walSync = db.memory ? undefined : new WalSync(db.name, onSyncError, (err) => commitFailed(err));

  /** Commits the open batch, if any; what waited for it runs once the commit is on disk. */
  function commitBatch(): void {
    if (!batchOpen) return;
    clearTimeout(batchTimer);
    batchOpen = false;
    serial.end();
    try {
      while (beforeBatchCommit.length > 0) beforeBatchCommit.shift()!();
      db.exec('COMMIT');
      writeLock?.release();
    } catch (err) {
      // Deferred writes that did not run yet are dropped with the batch, like the ones it rolled back: their owners
      // (the sessions' Signal key stores) are discarded with the sockets the sessions close now (commitFailed), and
      // the reconnect reloads the keys as last committed — the state that matches what the server redelivers, as
      // after a crash.
      beforeBatchCommit.length = 0;
      try {
        if (db.inTransaction) db.exec('ROLLBACK');
      } catch {
        // SQLite rolls back by itself when it cannot; the batch is gone either way.
      }
      writeLock?.release();
      rollBackTo(batchMarks);
      afterBatch.length = 0; // held frames are dropped with the socket the sessions now close (commitFailed)
      commitFailed(err);
      throw err;
    } finally {
      try {
        if (walSync) setSynchronous(db, 'FULL');
      } catch {
        // A pragma on a failing disk; the next batch sets it again.
      }
    }
    committed();
    const announce = takeCommitted();
    const waiters = afterBatch.splice(0);
    const run = () => {
      announce();
      for (const cb of waiters) cb();
    };
    if (walSync) {
      walSync.committed(run);
      if (walSync.walBytes > walLimitBytes) {
        try {
          db.pragma('wal_checkpoint(TRUNCATE)'); // syncs the WAL first: the batch just committed is on disk too
          walSync.markAllDurable();
        } catch (err) {
          onSyncError(err as Error); // busy: the worker is mid-checkpoint; the next commit tries again
        }
      }
    } else run();
  }

  /**
   * Runs `fn`, a repository's own short write outside `tx`/`ingest` (the webhook dispatcher's claims and outcomes,
   * retention), holding the threads' write lock when there is one and this store does not hold it already: it then
   * waits for the session threads' commits in the lock, woken at once, instead of in SQLite's busy handler, which
   * sleeps up to 100 ms at a time with this thread's event loop stopped (that made webhook deliveries lag by up to a
   * second with sessions on threads).
   */
  function withWriteLock<T>(fn: () => T): T {
    if (!writeLock || db.inTransaction || heldAhead) return fn(); // inside tx/ingest/a batch this thread holds the lock already
    writeLock.acquire();
    try {
      return fn();
    } finally {
      writeLock.release();
    }
  }

  /** Runs `cb` once everything written so far is on disk: now, or after the open batch commits and syncs. */
  function whenDurable(cb: () => void): void {
    if (batchOpen) afterBatch.push(cb);
    else if (walSync) walSync.whenDurable(cb);
    else cb();
  }

  /**
   * Runs `fn` in a transaction (a savepoint when nested); what observers kept beside it is announced after the
   * outermost commit, which returns with every earlier batch on disk too (announced first, so events stay in seq
   * order).
   */
  function tx<T>(fn: () => T): T {
    if (asyncOpen) throw heldByAsync();
    if (depth === 0) commitBatch();
    // The outermost transaction takes the threads' write lock (given back right after its commit, before anything
    // it announces runs); inside a transaction opened on `db` directly, it joins that one.
    let locked = depth === 0 && writeLock !== undefined && !db.inTransaction && !heldAhead;
    if (locked) writeLock!.acquire();
    const mark = markUncommitted();
    if (depth === 0) serial.begin();
    depth++;
    try {
      const result = inTransaction(db, fn);
      depth--;
      if (depth === 0) serial.end();
      if (locked) {
        locked = false;
        writeLock!.release();
      }
      if (depth === 0) {
        walSync?.syncNow(); // usually free: a FULL commit that wrote has just synced the WAL
        committed();
        takeCommitted()();
      }
      return result;
    } catch (err) {
      depth--;
      if (depth === 0) serial.end();
      if (locked) writeLock!.release();
      rollBackTo(mark);
      if (isStorageError(err)) commitFailed(err);
      throw err;
    }
  }

  /**
   * `tx(fn)` for the main thread, which must never sleep (docs/architecture.md § Threads and the write lock): waits
   * for the threads' write lock without blocking (`runLocked`), runs the transaction synchronously holding it, and
   * when SQLite's own lock is taken by another connection (busy timeout 0: SQLITE_BUSY at once) tries again on a
   * timer. Without a write lock it is `tx(fn)` after the same retries.
   * @throws Error with code SQLITE_BUSY after `asyncWriteWaitMs` (nothing was written); whatever `fn` throws
   */
  function txAsync<T>(fn: () => T): Promise<T> {
    return whenLocked(() => tx(fn));
  }

  /**
   * `writeAsync(write)`: a repository's own short write (it opens its own transaction — often a relaxed one, like
   * the webhook dispatcher's claims and outcomes, which must not become a synchronous=FULL commit with an fsync each)
   * on the main thread, waiting for the write lock as `txAsync` does. Inside an open batch (sessions on the main
   * thread) it joins the batch, as `withWriteLock` does.
   * @throws Error with code SQLITE_BUSY after `asyncWriteWaitMs` (nothing was written); whatever `write` throws
   */
  function writeAsync<T>(write: () => T): Promise<T> {
    return whenLocked(write);
  }

  /** Runs `fn` synchronously holding the threads' write lock, waiting for it and for SQLite's without blocking. */
  async function whenLocked<T>(fn: () => T): Promise<T> {
    const deadline = Date.now() + asyncWriteWaitMs;
    const run = () => {
      heldAhead = true;
      try {
        return fn();
      } finally {
        heldAhead = false;
      }
    };
    for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
      try {
        return writeLock?.runLocked ? await writeLock.runLocked(run, deadline) : fn();
      } catch (err) {
        // BUSY at BEGIN IMMEDIATE: fn has not run, nothing was written; anything else is the caller's.
        if (!isBusyError(err) || Date.now() + pause >= deadline) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  function openBatch(): void {
    if (batchOpen) return;
    if (walSync) setSynchronous(db, 'NORMAL'); // durability comes from walSync's fsync (see above)
    writeLock?.acquire();
    try {
      db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      writeLock?.release();
      if (walSync) setSynchronous(db, 'FULL');
      if (isStorageError(err)) commitFailed(err);
      throw err;
    }
    batchOpen = true;
    serial.begin();
    batchMarks = markUncommitted();
    batchTimer = setTimeout(() => {
      // An asynchronous caller's unit is open (`begin`): the batch commits when it ends.
      if (depth > 0) return void (commitWhenIdle = true);
      try {
        commitBatch();
      } catch {
        // Reported through commitFailed (the sessions close and retry); nothing else to do from a timer.
      }
    }, BATCH_WINDOW_MS);
  }

  // ---- halves of tx/ingest for an asynchronous caller (sqlite-store.ts) ------------------------------------
  let commitWhenIdle = false;
  /**
   * True while a `begin()` is open: a synchronous `tx`/`ingest` then would join the asynchronous caller's
   * transaction (and roll back with it) — it throws instead.
   */
  let asyncOpen = false;
  let unitStatements: { begin: Statement; commit: Statement; rollback: Statement; savepoint: Statement; release: Statement; rollbackTo: Statement } | undefined;
  const statements = () =>
    (unitStatements ??= {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT async_unit'),
      release: db.prepare('RELEASE async_unit'),
      rollbackTo: db.prepare('ROLLBACK TO async_unit'),
    });
  const heldByAsync = () => new Error('the store is inside an asynchronous transaction (begin): use its repositories');
  /** After a unit of `begin`: the batch whose window closed while it ran commits now. */
  const unitEnded = () => {
    asyncOpen = false;
    if (!commitWhenIdle || depth > 0) return;
    commitWhenIdle = false;
    try {
      commitBatch();
    } catch {
      // Reported through commitFailed, as from the timer.
    }
  };

  /**
   * Opens a transaction (`tx`) or a unit of the group commit (`ingest`, a savepoint of the open batch) for a caller
   * that awaits between its statements, and returns how to end it: what `tx()`/`ingest()` do around their function,
   * in two halves. The caller ends it before anything else uses this store (sqlite-store.ts serialises its work);
   * a batch whose window closes meanwhile commits when the unit ends. `relaxed` (tx only): commit with
   * synchronous=NORMAL, as relaxedTransaction. @throws inside a transaction
   */
  function begin(kind: 'tx' | 'ingest', relaxed = false): { commit(): void; rollback(): void } {
    if (depth > 0) throw new Error('begin() inside a transaction');
    const st = statements();
    if (kind === 'ingest') {
      openBatch();
      const marks = markUncommitted();
      st.savepoint.run();
      depth++;
      asyncOpen = true;
      return {
        commit() {
          st.release.run();
          depth--;
          unitEnded();
        },
        rollback() {
          try {
            st.rollbackTo.run();
            st.release.run();
          } finally {
            depth--;
            rollBackTo(marks);
            unitEnded();
          }
        },
      };
    }
    commitBatch();
    const sync = relaxed && walSync !== undefined;
    if (sync) setSynchronous(db, 'NORMAL');
    writeLock?.acquire();
    const marks = markUncommitted();
    try {
      st.begin.run();
    } catch (err) {
      writeLock?.release();
      if (sync) setSynchronous(db, 'FULL');
      if (isStorageError(err)) commitFailed(err);
      throw err;
    }
    depth++;
    asyncOpen = true;
    const end = () => {
      depth--;
      asyncOpen = false;
      writeLock?.release();
      if (sync) setSynchronous(db, 'FULL');
    };
    return {
      commit() {
        try {
          st.commit.run();
        } catch (err) {
          try {
            if (db.inTransaction) st.rollback.run();
          } catch {
            // rolled back by SQLite itself
          }
          end();
          rollBackTo(marks);
          if (isStorageError(err)) commitFailed(err);
          throw err;
        }
        end();
        if (!relaxed) walSync?.syncNow();
        committed();
        takeCommitted()();
      },
      rollback() {
        try {
          if (db.inTransaction) st.rollback.run();
        } finally {
          end();
          rollBackTo(marks);
        }
      },
    };
  }

  /**
   * Runs `write` in the transaction that commits next: right away inside a `tx`, otherwise right before the
   * group-commit batch (opened now if none is) commits. For writes their owner coalesces until then (the Signal
   * session of a contact is rewritten by every message of a burst; only the last version needs to be written).
   * If `write` throws, the whole batch rolls back, as when its COMMIT fails; writes queued after it wait for the
   * next batch.
   */
  function beforeCommit(write: () => void): void {
    if (asyncOpen) throw heldByAsync();
    if (depth > 0) return write();
    openBatch();
    beforeBatchCommit.push(write);
  }

  /**
   * Runs `fn` (in a savepoint) inside the current group-commit batch, opening one when none is open. Its writes
   * are durable, and its events published, when the batch commits — at most BATCH_WINDOW_MS later.
   */
  function ingest<T>(fn: () => T): T {
    if (asyncOpen) throw heldByAsync();
    if (depth > 0) return tx(fn);
    openBatch();
    const mark = markUncommitted();
    depth++;
    try {
      const result = inTransaction(db, fn); // a savepoint inside the batch
      depth--;
      return result;
    } catch (err) {
      depth--;
      rollBackTo(mark);
      if (isStorageError(err)) commitFailed(err);
      throw err;
    }
  }

  return {
    db,
    users: usersRepo(db),
    tokens: tokensRepo(db),
    connections: connectionsRepo(db),
    authState: authStateRepo(db),
    chats: chatsRepo(db),
    contacts: contactsRepo(db),
    /** The group metadata cache of each connection (engine/groups.ts GroupCache). */
    groupMetadata: groupMetadataRepo(db),
    messages: messagesRepo(db, search, mediaUrls),
    /** The public API base URL that Messages' `media.url` is built from (media-url.ts); set by startService. */
    mediaUrls,
    /** The full-text index of messages (search.ts); written by `messages`, read by the search routes. */
    search,
    billing: billingRepo(db),
    events: eventsRepo(db, withWriteLock),
    webhooks,
    deliveries: deliveriesRepo(db, withWriteLock),
    /** Idempotency keys of send and operation requests (idempotency.ts). */
    idempotency: idempotencyRepo(db, withWriteLock),
    tx,
    txAsync,
    writeAsync,
    ingest,
    begin,
    beforeCommit,
    /** The disk as the last commit found it (see StorageState). */
    storage(): StorageState {
      return storage;
    },
    /**
     * Calls `listener` synchronously whenever a commit fails (any batch failure, or a storage error in a
     * transaction): what waited for that commit must be dropped. Returns the unsubscribe function.
     */
    onCommitFailure(listener: (err: Error) => void): () => void {
      failureListeners.add(listener);
      return () => failureListeners.delete(listener);
    },
    /** Commits the open group-commit batch and syncs it on this thread (shutdown, and callers that cannot wait). */
    commitPending(): void {
      commitBatch();
      walSync?.syncNow();
    },
    /**
     * True when everything written so far is on disk: no group-commit batch is open and no batch waits for its
     * fsync (`durable()` would resolve at once). Lets a response that follows no write skip the wait.
     */
    isDurable(): boolean {
      return !batchOpen && !(walSync?.pending ?? false);
    },
    /** Commits the open batch; resolves once everything written so far is on disk (before an API response). */
    durable(): Promise<void> {
      commitBatch();
      return new Promise<void>((resolve) => whenDurable(resolve));
    },
    whenDurable,
    /**
     * Runs `fn` inside the running transaction when there is one (no savepoint of its own: an error rolls back with
     * the caller's work), otherwise in a transaction of its own (`tx`).
     */
    atomic<T>(fn: () => T): T {
      return depth > 0 ? fn() : tx(fn);
    },
    /**
     * Adds an observer of every transaction from the next one on (see TransactionObserver); for the life of the
     * store. An open group-commit batch is committed first. @throws inside a transaction
     */
    observeTransactions(observer: TransactionObserver): void {
      if (depth > 0) throw new Error('observeTransactions inside a transaction');
      commitBatch();
      observers.push(observer);
    },
    close(): void {
      if (db.open) {
        commitBatch();
        walSync?.syncNow();
        walSync?.close();
        db.close();
      }
    },
  };
}
