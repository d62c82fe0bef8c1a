/**
 * Both engines side by side for the message-side contract tests (messages, search): a SQLite store on a real file
 * and the PostgreSQL repositories on a database of the run's own (test/helpers/pg.ts), each with the same user and
 * connection. `both(fn)` runs one operation, written once against the asynchronous repository interface, on each
 * engine (SQLite's synchronous repositories are wrapped to return promises) and expects the same result.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import type { Queryable } from '../../service/db/pg/repos/message-scope.ts';
import { migratePg } from '../../service/db/pg/migrations.ts';
import { pgChatsRepo } from '../../service/db/pg/repos/chats.ts';
import { pgContactsRepo } from '../../service/db/pg/repos/contacts.ts';
import { pgGroupMetadataRepo } from '../../service/db/pg/repos/group-metadata.ts';
import { pgMessagesRepo } from '../../service/db/pg/repos/messages.ts';
import { pgSearchIndex } from '../../service/db/pg/repos/search.ts';
import { MediaUrls } from '../../service/db/media-url.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

/** The message side of the store, asynchronous (the PostgreSQL repositories' shape). */
export interface MessageRepos {
  chats: ReturnType<typeof pgChatsRepo>;
  contacts: ReturnType<typeof pgContactsRepo>;
  groupMetadata: ReturnType<typeof pgGroupMetadataRepo>;
  messages: ReturnType<typeof pgMessagesRepo>;
  search: ReturnType<typeof pgSearchIndex>;
}

/** The PostgreSQL repositories over `sql` (a pool or a transaction), media URLs from `urls`. */
export function pgRepos(sql: Queryable, urls: MediaUrls, inTx = false): MessageRepos {
  const scope = { sql, inTx };
  return {
    chats: pgChatsRepo(scope),
    contacts: pgContactsRepo(scope),
    groupMetadata: pgGroupMetadataRepo(scope),
    messages: pgMessagesRepo(scope, urls),
    search: pgSearchIndex(scope),
  };
}

/** An object whose methods (and nested objects' methods) return promises of what `target`'s return. */
function promised<T extends object>(target: object): T {
  return new Proxy(target, {
    get(t, key) {
      const v = (t as Record<string | symbol, unknown>)[key];
      if (typeof v === 'function') {
        const fn = v as (...a: unknown[]) => unknown;
        if (fn.constructor.name === 'GeneratorFunction') return fn.bind(t);
        return (...args: unknown[]) => {
          try {
            return Promise.resolve(fn.apply(t, args));
          } catch (err) {
            return Promise.reject(err);
          }
        };
      }
      return v !== null && typeof v === 'object' ? promised(v) : v;
    },
  }) as T;
}

export interface Engines {
  lite: Store;
  /** SQLite's repositories behind the asynchronous interface. */
  liteRepos: MessageRepos;
  pg: TestDatabase;
  pgRepos: MessageRepos;
  pgUrls: MediaUrls;
  userId: string;
  connectionId: string;
  /** Runs `fn` on both engines (SQLite first) and expects equal results; returns SQLite's. */
  both<R>(fn: (r: MessageRepos, engine: 'sqlite' | 'postgres') => Promise<R>): Promise<R>;
  /** Sets a connection's status on both (e.g. 'stopped'). */
  setStatus(status: string, connectionId?: string): Promise<void>;
  /** Adds another connection (of a new user) on both; returns its id. */
  addConnection(id: string): Promise<string>;
  close(): Promise<void>;
}

export const CONNECTION = '11111111-2222-4333-8444-555555555555';

async function pgConnection(sql: Queryable, userId: string, connectionId: string): Promise<void> {
  const now = '2026-01-01T00:00:00.000Z';
  await sql`INSERT INTO users (id, kind, name, created_at) VALUES (${userId}, 'local', ${userId}, ${now}) ON CONFLICT DO NOTHING`;
  await sql`INSERT INTO connections (id, user_id, worker_id, session_name, status, created_at, updated_at)
    VALUES (${connectionId}, ${userId}, 'local', ${connectionId}, 'connecting', ${now}, ${now})`;
}

/** Opens both engines with one user and one connection (CONNECTION), media URLs based at `mediaBase`. */
export async function openEngines(mediaBase = 'http://127.0.0.1:7575/api'): Promise<Engines> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-engines-'));
  const lite = openStore(dir);
  lite.mediaUrls.setBase(mediaBase);
  const user = lite.users.create('alice');
  lite.connections.insert({ id: CONNECTION, userId: user.id, name: null, workerId: 'local' });
  const pg = await createTestDatabase();
  await migratePg(pg.sql);
  await pgConnection(pg.sql, user.id, CONNECTION);
  const urls = new MediaUrls();
  urls.setBase(mediaBase);
  const pgR = pgRepos(pg.sql, urls);
  const liteR = promised<MessageRepos>({
    chats: lite.chats,
    contacts: lite.contacts,
    groupMetadata: lite.groupMetadata,
    messages: lite.messages,
    search: lite.search,
  });
  let users = 0;
  return {
    lite,
    liteRepos: liteR,
    pg,
    pgRepos: pgR,
    pgUrls: urls,
    userId: user.id,
    connectionId: CONNECTION,
    async both(fn) {
      const a = await fn(liteR, 'sqlite');
      const b = await fn(pgR, 'postgres');
      if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
        // Report the first differing element rather than two long arrays.
        const i = a.findIndex((x, k) => JSON.stringify(x) !== JSON.stringify(b[k]));
        if (i >= 0) expect({ index: i, value: b[i] }).toEqual({ index: i, value: a[i] });
      }
      expect(b).toEqual(a);
      return a;
    },
    async setStatus(status, connectionId = CONNECTION) {
      lite.connections.setStatus(connectionId, status as Parameters<Store['connections']['setStatus']>[1], null);
      await pg.sql`UPDATE connections SET status = ${status} WHERE id = ${connectionId}`;
    },
    async addConnection(id) {
      const u = lite.users.create(`user${++users}`);
      lite.connections.insert({ id, userId: u.id, name: null, workerId: 'local' });
      await pgConnection(pg.sql, u.id, id);
      return id;
    },
    async close() {
      lite.close();
      fs.rmSync(dir, { recursive: true, force: true });
      await pg.drop();
    },
  };
}
