/**
 * Cache coherence kept by the database (docs/architecture.md § Data plane): a repository that keeps rows in memory
 * (the webhooks' targets and rows) asks its table's generation counter in `cache_generations` whether another
 * connection to the file (a session thread, the main thread, a CLI tool) changed them since it filled its cache. The
 * counter is bumped by triggers AFTER INSERT/UPDATE/DELETE on the cached table (migrations.ts), so a writer cannot
 * forget it and no repository object is patched at run time.
 *
 * Cost: inside one of the store's write transactions (a `tx`, or a group-commit batch with all its `ingest`s) the
 * counter is read at most once — the transaction holds the write lock, so no other connection commits before it
 * ends; outside one, every check reads it (one indexed SELECT of a one-row table).
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './database.ts';

/**
 * Which of the store's outermost write transactions (a `tx` or a group-commit batch) is running: a number that is
 * new for each, 0 while none runs. The store calls `begin` after its `BEGIN IMMEDIATE` and `end` after the
 * COMMIT/ROLLBACK.
 */
export class TransactionSerial {
  #current = 0;
  #next = 1;
  get current(): number {
    return this.#current;
  }
  begin(): void {
    this.#current = this.#next++;
  }
  end(): void {
    this.#current = 0;
  }
}

/** The generation counter of one cached table, as one repository's cache sees it. */
export interface CacheGeneration {
  /**
   * Calls `drop` when the table changed (its counter moved) since the last check; the caller then reloads what it
   * needs from the table. Cheap to call before every cached read (see the module's note on cost).
   */
  check(drop: () => void): void;
  /** The cache was dropped for another reason (an own write, a rollback): the next `check` reads the counter. */
  reset(): void;
}

const statements = new WeakMap<Db, Statement>();

/**
 * The generation counter named `name` in `cache_generations` (a row per cached table, created by the migration that
 * adds its triggers). @throws Error when the row is missing (a table without triggers has no counter to trust)
 */
export function cacheGeneration(db: Db, name: string, serial: TransactionSerial): CacheGeneration {
  let read = statements.get(db);
  if (!read) {
    read = db.prepare('SELECT generation FROM cache_generations WHERE name = ?').pluck();
    statements.set(db, read);
  }
  const q = read;
  if (q.get(name) === undefined) throw new Error(`no cache generation counter named ${name}`);
  /** The counter's value the cache was filled under; -1: unknown (the next check drops and reloads). */
  let seen = -1;
  /** The transaction whose counter was last read (0: none; every check outside a transaction reads it). */
  let checkedIn = 0;
  return {
    check(drop) {
      const running = serial.current;
      if (running !== 0 && running === checkedIn) return;
      const now = q.get(name) as number;
      if (now !== seen) {
        seen = now;
        drop();
      }
      checkedIn = running;
    },
    reset() {
      seen = -1;
      checkedIn = 0;
    },
  };
}
