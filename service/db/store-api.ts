/**
 * The engine-neutral, asynchronous storage interface (docs/architecture.md § Storage engines): what the data plane
 * needs of a database, implemented over SQLite (sqlite-store.ts, the synchronous store.ts underneath) and over
 * PostgreSQL (pg/store.ts). Every repository is the SQLite one's methods returning Promises — `Async<>` of the
 * SQLite repository's type — so the two engines cannot drift apart: a PostgreSQL repository that misses a method, or
 * answers another shape, does not typecheck.
 *
 * The durability rules (docs/durability.md) are the interface's, whatever the engine:
 * - `ingest` is the group commit: many units in one transaction, a savepoint each (a unit that throws rolls back
 *   alone), resolved only once the batch's COMMIT is durable — commit before receipt;
 * - an event's per-user `seq` is taken in the transaction that commits it (gap-free, in commit order), and its
 *   webhook outbox rows are written in that same transaction;
 * - a unit reads what the earlier units of its batch wrote (read-your-writes), as does the next batch;
 * - layers above keep in-memory state beside a transaction through `observeTransactions` (TransactionObserver):
 *   told to drop it on rollback, to announce it once the commit is durable.
 */
import type { authStateRepo } from './auth-state.ts';
import type { billingRepo } from './billing.ts';
import type { connectionsRepo } from './connections.ts';
import type { deliveriesRepo } from './deliveries.ts';
import type { eventsRepo } from './events.ts';
import type { idempotencyRepo } from './idempotency.ts';
import type { MessageRepos } from './pg/repos/message-repos.ts';
import type { Steps } from './steps.ts';
import type { StorageState, TransactionObserver } from './store.ts';
import type { tokensRepo } from './tokens.ts';
import type { usersRepo } from './users.ts';
import type { webhooksRepo } from './webhooks.ts';

/** `T` with every method returning a Promise of what it returned (non-method members are dropped). */
export type Async<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

/** The repositories of both engines, each `Async<>` of its SQLite twin (service/db/<table>.ts). */
export interface Repos extends MessageRepos {
  users: Async<ReturnType<typeof usersRepo>>;
  tokens: Async<ReturnType<typeof tokensRepo>>;
  connections: Async<ReturnType<typeof connectionsRepo>>;
  /** The sessions' Baileys creds and Signal keys. */
  authState: Async<ReturnType<typeof authStateRepo>>;
  /** The per-user event log (`append` takes the next seq in the running transaction). */
  events: Async<ReturnType<typeof eventsRepo>>;
  webhooks: Async<ReturnType<typeof webhooksRepo>>;
  /** The webhook outbox and delivery log. */
  deliveries: Async<ReturnType<typeof deliveriesRepo>>;
  idempotency: Async<ReturnType<typeof idempotencyRepo>>;
  billing: Async<ReturnType<typeof billingRepo>>;
  // Chats, contacts, group metadata, messages and search: MessageRepos (pg/repos/message-repos.ts). A repository
  // added here is added to REPO_NAMES (sqlite-store.ts) and FACTORIES (pg/repos/index.ts) too, or neither compiles.
}

/** Which database a Store keeps its data in. */
export type StorageEngine = 'sqlite' | 'postgres';

export interface TxOptions {
  /**
   * Commit without waiting for the disk (SQLite `synchronous=NORMAL`, PostgreSQL `synchronous_commit = off`): safe
   * against a crash of the process, not against a power cut — for writes whose loss breaks no promise (webhook
   * claims and outcomes: a lost one is a redelivery). Default false: the commit is durable when `tx` resolves.
   */
  relaxed?: boolean;
}

/**
 * A transaction's work, or a unit of the group commit: gets the transaction's repositories and must use only them
 * (no other I/O it would wait for: on SQLite the connection is held meanwhile). There are no nested transactions:
 * `tx`/`ingest` called from inside one waits for it to end (on SQLite, forever; on PostgreSQL it would run on
 * another connection, outside it). Not detected (AsyncLocalStorage would cost every Promise of the process on
 * Node 20).
 */
export type Work<T> = (t: Repos) => Promise<T>;

export interface Store {
  readonly engine: StorageEngine;
  /**
   * Runs `work` in a transaction of its own; resolves with its result once the commit is durable (and after every
   * group-commit batch begun before it: events stay in seq order), rejects with its error after rolling back.
   * One writing transaction runs at a time per Store (a `tx` waits for the running batch, as on SQLite).
   */
  tx<T>(work: Work<T>, opts?: TxOptions): Promise<T>;
  /**
   * Runs `unit` in the group commit: in a savepoint of the current batch (opened when none is), batches closing a
   * few ms after they open. Resolves with its result once the batch's COMMIT is durable; rejects with its error at
   * once when it throws (its savepoint rolled back alone, the batch goes on), or with the commit's error when the
   * batch fails (every unit of it then rejects, and `onCommitFailure` listeners hear it first).
   */
  ingest<T>(unit: Work<T>): Promise<T>;
  /**
   * `tx` for work written as steps (steps.ts): the same transaction and durability. On SQLite, when no other work is
   * running, `work` runs to its end inside this call (as the synchronous store's `tx`); on PostgreSQL step by step.
   */
  txSteps<T>(work: Steps<T>, opts?: TxOptions): Promise<T>;
  /**
   * `ingest` for a unit written as steps (steps.ts): the same group commit, savepoint and durability. On SQLite, when
   * no other work is running, the unit runs to its end inside this call — in the order the calls came, with no
   * Promise per statement (the engine's hot path: docs/performance.md); on PostgreSQL step by step, in call order.
   * Rejects at once when the unit throws (its savepoint rolled back alone).
   */
  ingestSteps<T>(unit: Steps<T>): Promise<T>;
  /**
   * Runs `write` right before the next group-commit batch commits (opening one when none is): for writes their owner
   * coalesces until then (a burst rewrites a contact's Signal session many times; the last version is written once).
   * `write` issues all its repository calls before its first `await` (they run in order; on SQLite during the call
   * itself). If it fails, the whole batch fails (see `ingest`).
   */
  beforeCommit(write: Work<void>): void;
  /** Runs `cb` once everything written so far is durable: now, or after the batch in progress commits. */
  whenDurable(cb: () => void): void;
  /** Resolves once everything written so far is durable (commits the open batch without waiting for its window). */
  durable(): Promise<void>;
  /**
   * True when nothing written is waiting for its commit or sync (`durable()` would resolve at once): lets an API
   * response that follows no write skip the wait.
   */
  isDurable(): boolean;
  /**
   * The repositories outside any transaction: reads see what is committed (on SQLite also the open batch, as the
   * synchronous store does), a write commits on its own (a repository's multi-statement write, such as
   * `deliveries.claim`, in a transaction of its own).
   */
  read: Repos;
  /** Adds an observer of every transaction and batch from the next one on (see TransactionObserver). */
  observeTransactions(observer: TransactionObserver): void;
  /** The database as the last commit found it. */
  storage(): StorageState;
  /**
   * Calls `listener` synchronously when a commit fails (a batch, or a storage error in a transaction): whatever
   * waited for that commit must be dropped. Returns the unsubscribe function.
   */
  onCommitFailure(listener: (err: Error) => void): () => void;
  /** Commits what is pending and closes the database; the Store is unusable afterwards. */
  close(): Promise<void>;
}
