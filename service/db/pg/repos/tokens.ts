/** PostgreSQL twin of service/db/tokens.ts (same methods, same results, Promises). */
import { nowIso } from '../../database.ts';
import type { Async } from '../../store-api.ts';
import type { TokenRecord, tokensRepo } from '../../tokens.ts';
import type { PgScope } from './scope.ts';

interface RawRow {
  id: string;
  user_id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const toRecord = (r: RawRow): TokenRecord => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export function pgTokensRepo({ sql }: PgScope): Async<ReturnType<typeof tokensRepo>> {
  return {
    async insert(t) {
      const [r] = await sql<RawRow[]>`INSERT INTO api_tokens (id, user_id, name, prefix, hash, created_at)
        VALUES (${t.id}, ${t.userId}, ${t.name}, ${t.prefix}, ${t.hash}, ${nowIso()}) RETURNING *`;
      return toRecord(r!);
    },
    async findActiveByHash(hash) {
      const [r] = await sql<RawRow[]>`SELECT * FROM api_tokens WHERE hash = ${hash} AND revoked_at IS NULL`;
      return r && { ...toRecord(r), userId: r.user_id };
    },
    async credentialByHash(hash) {
      const [r] = await sql<Array<{ id: string; user_id: string; last_used_at: string | null; name: string; disabled: boolean }>>`
        SELECT t.id, t.user_id, t.last_used_at, u.name, u.disabled FROM api_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.hash = ${hash} AND t.revoked_at IS NULL`;
      return r && { tokenId: r.id, userId: r.user_id, lastUsedAt: r.last_used_at, userName: r.name, userDisabled: r.disabled };
    },
    async get(id) {
      const [r] = await sql<RawRow[]>`SELECT * FROM api_tokens WHERE id = ${id}`;
      return r && { ...toRecord(r), userId: r.user_id, revokedAt: r.revoked_at };
    },
    async listActive(userId) {
      return (await sql<RawRow[]>`SELECT * FROM api_tokens WHERE user_id = ${userId} AND revoked_at IS NULL ORDER BY created_at, id`).map(toRecord);
    },
    async revoke(id) {
      return (await sql`UPDATE api_tokens SET revoked_at = ${nowIso()} WHERE id = ${id} AND revoked_at IS NULL`).count > 0;
    },
    async touch(id, at) {
      await sql`UPDATE api_tokens SET last_used_at = ${at} WHERE id = ${id}`;
    },
  };
}
