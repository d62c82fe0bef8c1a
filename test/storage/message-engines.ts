/**
 * Both engines side by side for the message-side contract tests (messages, search): the storage contract's two
 * stores (engines.ts `openEngine`: SQLite through sqlite-store.ts, PostgreSQL through pg/store.ts, each on a fresh
 * database) with the same user and connection. `both(fn)` runs one operation, written once against the asynchronous
 * `Repos`, on each engine and expects the same result — a stronger check than each engine meeting the same
 * hand-written expectations: every field of every answer is compared.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import type { Repos, StorageEngine, Store } from '../../service/db/store-api.ts';
import { openEngine, type EngineUnderTest } from './engines.ts';

export interface Engines {
  sqlite: EngineUnderTest;
  postgres: EngineUnderTest;
  connectionId: string;
  /**
   * Runs `fn` on both engines (SQLite first) and expects equal results; returns SQLite's. `fn` gets the store's
   * `read` repositories (each write commits on its own) and the store (for `tx`).
   */
  both<R>(fn: (r: Repos, engine: StorageEngine, store: Store) => Promise<R>): Promise<R>;
  /** Runs raw SQL (both engines' dialect, no parameters) that writes, on each engine's database. */
  exec(sqlite: string, postgres?: string): Promise<void>;
  /** Sets a connection's status on both (e.g. 'stopped'). */
  setStatus(status: 'stopped' | 'connected', connectionId?: string): Promise<void>;
  /** Adds another connection (of a new user) on both; returns its id. */
  addConnection(id: string): Promise<string>;
  close(): Promise<void>;
}

export const CONNECTION = '11111111-2222-4333-8444-555555555555';

/** Opens both engines with one user ('alice') and one connection (CONNECTION). */
export async function openEngines(): Promise<Engines> {
  const engines = { sqlite: await openEngine('sqlite'), postgres: await openEngine('postgres') };
  const each = async (fn: (store: Store) => Promise<unknown>) => {
    await fn(engines.sqlite.store);
    await fn(engines.postgres.store);
  };
  let users = 0;
  const addConnection = async (id: string, name = `user${++users}`) => {
    await each(async (store) => {
      const user = await store.read.users.create(name);
      await store.read.connections.insert({ id, userId: user.id, name: null, workerId: 'local' });
    });
    return id;
  };
  await addConnection(CONNECTION, 'alice');
  return {
    ...engines,
    connectionId: CONNECTION,
    async both(fn) {
      const a = await fn(engines.sqlite.store.read, 'sqlite', engines.sqlite.store);
      const b = await fn(engines.postgres.store.read, 'postgres', engines.postgres.store);
      if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
        // Report the first differing element rather than two long arrays.
        const i = a.findIndex((x, k) => JSON.stringify(x) !== JSON.stringify(b[k]));
        if (i >= 0) expect({ index: i, value: b[i] }).toEqual({ index: i, value: a[i] });
      }
      expect(b).toEqual(a);
      return a;
    },
    async exec(sqlite, postgres = sqlite) {
      const db = new Database(path.join(engines.sqlite.location, 'switchboard.db'));
      try {
        db.exec(sqlite);
      } finally {
        db.close();
      }
      await engines.postgres.store.tx(async () => undefined); // nothing pending on the PostgreSQL side
      const pg = (await import('postgres')).default(engines.postgres.location, { max: 1, onnotice: () => undefined });
      try {
        await pg.unsafe(postgres);
      } finally {
        await pg.end({ timeout: 1 });
      }
    },
    async setStatus(status, connectionId = CONNECTION) {
      await each((store) => store.tx((t) => t.connections.setStatus(connectionId, status, null)));
    },
    addConnection: (id) => addConnection(id),
    async close() {
      await engines.sqlite.close();
      await engines.postgres.close();
    },
  };
}
