/**
 * The storage contract suite's engines: `describe.each(ENGINES)` runs one suite body against SQLite (a fresh
 * database file in a temporary dir, through sqlite-store.ts) and PostgreSQL (a fresh database of this run,
 * test/helpers/pg.ts, through pg/store.ts). `openEngine` also gives a second connection (`outside`) that sees only
 * what is committed, to check durability rules from outside the Store.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openPgStore, type PgStoreOptions } from '../../service/db/pg/store.ts';
import { openSqliteStore } from '../../service/db/sqlite-store.ts';
import type { StorageEngine, Store } from '../../service/db/store-api.ts';
import { createTestDatabase } from '../helpers/pg.ts';

export const ENGINES: readonly StorageEngine[] = ['sqlite', 'postgres'];

export interface EngineUnderTest {
  engine: StorageEngine;
  store: Store;
  /**
   * Runs `query` (plain SQL both engines accept, no parameters) on a second connection, which sees only committed
   * rows. Numbers come back as numbers on both.
   */
  outside(query: string): Promise<Array<Record<string, unknown>>>;
  /** Where the data is: the SQLite data dir, or the PostgreSQL URL. */
  location: string;
  /** Closes the store and the second connection, and removes the database. Idempotent. */
  close(): Promise<void>;
}

/**
 * A fresh, empty (migrated) database of `engine` and the Store over it; PostgreSQL's on the server of `adminUrl`
 * (test/helpers/pg.ts PG_ADMIN_URL by default).
 */
export async function openEngine(engine: StorageEngine, opts: PgStoreOptions = {}, adminUrl?: string): Promise<EngineUnderTest> {
  if (engine === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-storage-'));
    const store = openSqliteStore(dir);
    const reader = new Database(path.join(dir, 'switchboard.db'), { readonly: true });
    let closed: Promise<void> | undefined;
    return {
      engine,
      store,
      location: dir,
      outside: (query) => Promise.resolve(reader.prepare(query).all() as Array<Record<string, unknown>>),
      close: () =>
        (closed ??= (async () => {
          await store.close();
          reader.close();
          fs.rmSync(dir, { recursive: true, force: true });
        })()),
    };
  }
  const db = await createTestDatabase(adminUrl);
  const store = await openPgStore(db.url, { ...opts, pool: { max: 4 } });
  let closed: Promise<void> | undefined;
  return {
    engine,
    store,
    location: db.url,
    outside: async (query) => [...(await db.sql.unsafe(query))] as Array<Record<string, unknown>>,
    close: () =>
      (closed ??= (async () => {
        await store.close().catch(() => undefined);
        await db.drop();
      })()),
  };
}
