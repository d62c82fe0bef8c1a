/**
 * The data plane (docs/architecture.md § Data plane): the store, the per-user event log and the webhook outbox,
 * assembled in one place. The service's main thread (service/index.ts), each session thread (session-worker.ts), the
 * CLI's commands on the store, the test harnesses and the benchmarks all open it here, so none of them can have an
 * event log without its outbox (events logged without webhook rows, and nothing said).
 *
 * The service runs on SQLite (`<dataDir>/switchboard.db`) in this build; `openToolStore` opens the asynchronous Store
 * of either engine for the programs that need only the repositories (the CLI's `token` and `user`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { isPostgresUrl } from './config/database-url.ts';
import { openDatabase } from './db/database.ts';
import { sqliteStore } from './db/sqlite-store.ts';
import type { Store as AsyncStore } from './db/store-api.ts';
import { createStore, type Store, type StoreOptions } from './db/store.ts';
import { EventLog } from './events/log.ts';
import { WebhookOutbox } from './webhooks/outbox.ts';

/**
 * Who opens the data plane: `main` — the service's main thread (HTTP, the stream, the webhook dispatcher, the
 * checkpoint worker); `session-thread` — a session worker thread (its commits leave the WAL checkpoints to the main
 * thread's checkpoint worker); `tool` — a CLI command, a test's setup or a benchmark.
 */
export type DataPlaneRole = 'main' | 'session-thread' | 'tool';

export interface DataPlaneOptions extends StoreOptions {
  /** The data directory; the SQLite file is `<dataDir>/switchboard.db`. */
  dataDir: string;
  role: DataPlaneRole;
  /**
   * The database to use; absent or empty: the data dir's SQLite file. A `postgres://` (or `postgresql://`) URL is
   * refused in this build.
   */
  database?: string;
}

/** What the service's parts share: the store, its event log, and the outbox that writes each event's webhook rows. */
export interface DataPlane {
  /** The synchronous SQLite store: the engine, the dispatcher, the stream and every write (see `asyncStore`). */
  readonly store: Store;
  /**
   * The engine-neutral asynchronous Store (db/store-api.ts) over the same connection: the HTTP routes' reads. Not
   * for writes while the synchronous store writes on the same thread (docs/architecture.md § Data plane): an
   * asynchronous transaction yields between its statements, where a synchronous one cannot wait.
   */
  readonly asyncStore: AsyncStore;
  /** The event log; every event it appends gets its outbox rows in the same transaction (`outbox`). */
  readonly events: EventLog;
  readonly outbox: WebhookOutbox;
  /** Commits what is pending, syncs it and closes the database. Safe to call more than once. */
  close(): void;
}

/** The message for a `database` value that is no PostgreSQL URL (the value may hold a password: not repeated). */
const UNSUPPORTED_DATABASE = "unsupported database: give a postgres:// URL, or none for the data directory's SQLite file";

/** The message of the Error `openDataPlane` throws for a PostgreSQL URL. */
export const POSTGRES_UNAVAILABLE = 'PostgreSQL is not available in this build yet';

/**
 * Opens the data plane of `options.dataDir`: the store (see StoreOptions for the write lock, busy timeout, fsync
 * errors and WAL limit), the event log over it and the webhook outbox observing that log.
 * @throws Error POSTGRES_UNAVAILABLE for a `postgres://` URL, Error for any other `database` value;
 *   DatabaseOpenError when the SQLite file cannot be used (left untouched).
 */
export function openDataPlane(options: DataPlaneOptions): DataPlane {
  const { dataDir, role, database, ...storeOptions } = options;
  if (database) throw new Error(isPostgresUrl(database) ? POSTGRES_UNAVAILABLE : UNSUPPORTED_DATABASE);
  const store = createStore(openDatabase(path.join(dataDir, 'switchboard.db')), storeOptions);
  // The main thread's checkpoint worker (db/checkpointer.ts) copies the WAL: a session thread's commits do not.
  if (role === 'session-thread') store.db.pragma('wal_autocheckpoint = 0');
  const events = new EventLog(store);
  const outbox = new WebhookOutbox(store, events);
  // Made on first use: session threads and most tools never read through it.
  let asyncStore: AsyncStore | undefined;
  return {
    store,
    get asyncStore() {
      return (asyncStore ??= sqliteStore(store));
    },
    events,
    outbox,
    close: () => store.close(),
  };
}

/** Thrown by `openToolStore` with `mustExist` when there is no Switchboard database where it looked. */
export class NoDatabaseError extends Error {
  override name = 'NoDatabaseError';
}

/**
 * The asynchronous Store (db/store-api.ts) of the data dir's SQLite file, or of the PostgreSQL database `database`
 * (a `postgres://` URL: its schema created or brought up to date, docs/architecture.md § Storage engines), for a
 * program that needs the repositories only — the CLI's `token` and `user` commands. Close it with `close()`.
 * @param opts.mustExist refuse a missing SQLite file, or a database without Switchboard's schema (nothing is created)
 * @throws NoDatabaseError (mustExist); Error from the driver when the database cannot be reached (its message may
 *   hold the URL's password: callers mask it, config/database-url.ts); PgSchemaError for a schema this build cannot use
 */
export async function openToolStore(opts: { dataDir: string; database?: string; mustExist: boolean }): Promise<AsyncStore> {
  const { dataDir, database, mustExist } = opts;
  if (!database) {
    const file = path.join(dataDir, 'switchboard.db');
    if (mustExist && !fs.existsSync(file)) throw new NoDatabaseError(`no Switchboard database at ${file}`);
    const { openSqliteStore } = await import('./db/sqlite-store.ts');
    return openSqliteStore(dataDir);
  }
  if (!isPostgresUrl(database)) throw new Error(UNSUPPORTED_DATABASE);
  // Loaded here, not at the top: the service's processes, which import this module, do not load the driver.
  const [{ openPgStore }, { PgSchemaMissingError }] = await Promise.all([import('./db/pg/store.ts'), import('./db/pg/migrations.ts')]);
  try {
    return await openPgStore(database, { pool: { max: 2, applicationName: 'switchboard cli' }, existingSchema: mustExist });
  } catch (err) {
    throw err instanceof PgSchemaMissingError ? new NoDatabaseError(err.message) : err;
  }
}
