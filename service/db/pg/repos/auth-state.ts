/**
 * PostgreSQL twin of service/db/auth-state.ts (same methods, same results, Promises): Baileys creds and Signal keys
 * as BufferJSON text. A key batch is written with one statement per kind (an upsert of every value, a delete of
 * every null) instead of one per key.
 */
import type { authStateRepo } from '../../auth-state.ts';
import type { Async } from '../../store-api.ts';
import { atomic, type PgScope, type Queryable } from './scope.ts';

type KeyRows = Array<[type: string, id: string, value: string | null]>;

/** Writes `rows` (last value of a key wins, as when written one by one), in at most two statements. */
async function writeMany(sql: Queryable, connectionId: string, rows: KeyRows): Promise<void> {
  const last = new Map<string, [string, string, string | null]>();
  for (const r of rows) last.set(`${r[0]}\u0000${r[1]}`, r);
  const puts = [...last.values()].filter((r) => r[2] !== null);
  const dels = [...last.values()].filter((r) => r[2] === null);
  const work: Array<Promise<unknown>> = [];
  if (puts.length > 0) {
    work.push(sql`INSERT INTO auth_keys (connection_id, type, id, value)
      SELECT ${connectionId}, * FROM unnest(${puts.map((r) => r[0])}::text[], ${puts.map((r) => r[1])}::text[], ${puts.map((r) => r[2]!)}::text[])
      ON CONFLICT (connection_id, type, id) DO UPDATE SET value = excluded.value`);
  }
  if (dels.length > 0) {
    work.push(sql`DELETE FROM auth_keys WHERE connection_id = ${connectionId}
      AND (type, id) IN (SELECT * FROM unnest(${dels.map((r) => r[0])}::text[], ${dels.map((r) => r[1])}::text[]))`);
  }
  await Promise.all(work);
}

export function pgAuthStateRepo(scope: PgScope): Async<ReturnType<typeof authStateRepo>> {
  const { sql } = scope;
  return {
    async getCreds(connectionId) {
      const [r] = await sql<Array<{ creds: string }>>`SELECT creds FROM auth_creds WHERE connection_id = ${connectionId}`;
      return r?.creds;
    },
    async putCreds(connectionId, creds) {
      await sql`INSERT INTO auth_creds (connection_id, creds) VALUES (${connectionId}, ${creds})
        ON CONFLICT (connection_id) DO UPDATE SET creds = excluded.creds`;
    },
    async getKeys(connectionId, type, ids) {
      const out = new Map<string, string>();
      if (ids.length === 0) return out;
      const rows = await sql<Array<{ id: string; value: string }>>`SELECT id, value FROM auth_keys
        WHERE connection_id = ${connectionId} AND type = ${type} AND id = ANY(${[...ids]}::text[])`;
      const found = new Map(rows.map((r) => [r.id, r.value]));
      for (const id of ids) {
        const v = found.get(id);
        if (v !== undefined) out.set(id, v);
      }
      return out;
    },
    async setKeys(connectionId, rows) {
      if (scope.inTx) return writeMany(sql, connectionId, rows);
      await (sql as import('postgres').Sql).begin(async (t) => {
        await t`SET LOCAL synchronous_commit = off`; // as SQLite's relaxedTransaction: the next message commit syncs it
        await writeMany(t, connectionId, rows);
      });
    },
    async writeKeys(connectionId, rows) {
      await writeMany(sql, connectionId, rows);
    },
    async clear(connectionId) {
      await atomic(scope, async (t) => {
        await t`DELETE FROM auth_keys WHERE connection_id = ${connectionId}`;
        await t`DELETE FROM auth_creds WHERE connection_id = ${connectionId}`;
      });
    },
  };
}
