/**
 * Opens the service's SQLite database: pragmas for durability (WAL + synchronous=FULL), foreign keys,
 * a 5 s busy timeout, and the ordered migrations in `migrations.ts` (one transaction each, tracked by user_version,
 * run with foreign keys off and checked by `PRAGMA foreign_key_check` before each commits).
 * Refuses files that are not SQLite or were written by a newer Switchboard, without touching them.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { PRIVATE_DIR_MODE, ensurePrivateFile } from '../config/private-dir.ts';
import { migrations } from './migrations.ts';

export type Db = Database.Database;

/** Thrown when the file at `file` cannot be used as this service's database; the file is left as it was. */
export class DatabaseOpenError extends Error {
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
    this.name = 'DatabaseOpenError';
  }
}

const APPLICATION_ID = 0x53574244; // "SWBD"

/**
 * Opens (creating if missing) the database at `file` and brings its schema up to date.
 * @throws DatabaseOpenError for a corrupt or foreign file, or a schema newer than this build.
 */
export function openDatabase(file: string): Db {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE }); // an existing one is repaired at start
  const existed = fs.existsSync(file) && fs.statSync(file).size > 0;
  // Created 0600 before SQLite opens it: its WAL and SHM files get the same mode (private data dir).
  if (!existed) {
    try {
      ensurePrivateFile(file);
    } catch {
      /* SQLite reports why the file cannot be made */
    }
  }
  let db: Db;
  try {
    db = new Database(file, { fileMustExist: false });
  } catch (err) {
    throw new DatabaseOpenError(`Cannot open database ${file}: ${(err as Error).message}`, file);
  }
  try {
    // Reading the schema fails fast on a file that is not a database ("file is not a database").
    const appId = db.pragma('application_id', { simple: true }) as number;
    const version = db.pragma('user_version', { simple: true }) as number;
    if (existed && appId !== APPLICATION_ID) {
      const tables = db.prepare(`SELECT count(*) AS n FROM sqlite_master`).get() as { n: number };
      if (tables.n > 0) throw new Error('it is a SQLite database of another application');
    }
    if (version > migrations.length) {
      throw new Error(`its schema version ${version} is newer than this build supports (${migrations.length})`);
    }
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    // Foreign keys stay off while migrating (the pragma is a no-op inside a transaction): a table rebuild drops
    // the old table, which with them on would cascade into every referencing row. Each migration checks them
    // before it commits instead, and rolls back on a dangling reference.
    db.pragma('foreign_keys = OFF');
    for (let v = version; v < migrations.length; v++) {
      db.transaction(() => {
        db.exec(migrations[v]!);
        const dangling = db.pragma('foreign_key_check') as Array<{ table: string; parent: string }>;
        if (dangling.length > 0) {
          const first = dangling[0]!;
          throw new Error(
            `migration ${v + 1} found ${dangling.length} dangling references (first: ${first.table} → ${first.parent})`,
          );
        }
        db.pragma(`user_version = ${v + 1}`);
        db.pragma(`application_id = ${APPLICATION_ID}`);
      })();
    }
    db.pragma('foreign_keys = ON');
    return db;
  } catch (err) {
    db.close();
    if (err instanceof DatabaseOpenError) throw err;
    throw new DatabaseOpenError(`Cannot use ${file} as the Switchboard database: ${(err as Error).message}`, file);
  }
}

/**
 * Runs `fn` as one transaction committed with `synchronous=NORMAL` instead of FULL: as safe as FULL against a
 * process crash (the WAL is written before the commit returns), and made safe against power loss by the next sync
 * of the WAL (a FULL commit, or a group commit's fsync in wal-sync.ts), which covers these frames too. Used for
 * writes whose loss on a power cut breaks no promise (webhook claims and outcomes: a lost one means a redelivery),
 * and for group commits that sync the WAL themselves before anything depending on them leaves the process.
 * Inside an outer transaction (or the store's open group-commit batch), `fn` joins it as a savepoint and commits
 * with it (the setting cannot change mid-transaction).
 */
export function relaxedTransaction<T>(db: Db, fn: () => T): T {
  if (db.inTransaction) return inTransaction(db, fn); // joins it, as a savepoint
  setSynchronous(db, 'NORMAL');
  try {
    return inTransaction(db, fn);
  } finally {
    setSynchronous(db, 'FULL');
  }
}

/** Sets `PRAGMA synchronous` (outside a transaction only: SQLite ignores it inside one). */
export function setSynchronous(db: Db, level: 'NORMAL' | 'FULL'): void {
  const s = prepared(db);
  (level === 'FULL' ? s.full : s.normal).run();
}

/**
 * Runs `fn` in a transaction of `db`, or in a savepoint when one is open. One better-sqlite3 transaction wrapper
 * per database, made once: creating one per call showed up on the per-message path.
 */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return prepared(db).run(fn) as T;
}

/** Per database: the transaction wrapper and relaxedTransaction's pragmas, prepared once. */
const preparedByDb = new WeakMap<Db, { run: (f: () => unknown) => unknown; normal: Statement; full: Statement }>();
function prepared(db: Db) {
  let s = preparedByDb.get(db);
  if (!s) {
    // IMMEDIATE: with several connections on the file (`serve --workers N`, docs/scaling.md) a deferred
    // transaction that reads and then writes fails with SQLITE_BUSY_SNAPSHOT when another connection committed in
    // between; taking the write lock at BEGIN makes it wait for the lock (busy_timeout) instead.
    // (Nested calls are savepoints either way.)
    const tx = db.transaction((f: () => unknown) => f());
    s = {
      run: (f: () => unknown) => tx.immediate(f),
      normal: db.prepare('PRAGMA synchronous = NORMAL'),
      full: db.prepare('PRAGMA synchronous = FULL'),
    };
    preparedByDb.set(db, s);
  }
  return s;
}

/** Current time as an ISO 8601 UTC string, the format of every stored `*_at` column. */
export function nowIso(): string {
  return new Date().toISOString();
}

/** A boolean column's value as either engine returns it (SQLite's integer 0/1, PostgreSQL's boolean): true for 1 or true. */
export function flagOf(v: number | boolean): boolean {
  return v === true || v === 1;
}
