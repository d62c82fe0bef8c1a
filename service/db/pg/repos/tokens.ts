/** PostgreSQL twin of service/db/tokens.ts (same methods, same results, Promises). */
import { nowIso } from '../../database.ts';
import type { Async } from '../../store-api.ts';
import { tokenOfRow, type TokenRawRow, type tokensRepo } from '../../tokens.ts';
import type { PgScope } from './scope.ts';

export function pgTokensRepo({ sql }: PgScope): Async<ReturnType<typeof tokensRepo>> {
  return {
    async insert(t) {
      const [r] = await sql<TokenRawRow[]>`INSERT INTO api_tokens (id, user_id, name, prefix, hash, created_at)
        VALUES (${t.id}, ${t.userId}, ${t.name}, ${t.prefix}, ${t.hash}, ${nowIso()}) RETURNING *`;
      return tokenOfRow(r!);
    },
    async findActiveByHash(hash) {
      const [r] = await sql<TokenRawRow[]>`SELECT * FROM api_tokens WHERE hash = ${hash} AND revoked_at IS NULL`;
      return r && { ...tokenOfRow(r), userId: r.user_id };
    },
    async credentialByHash(hash) {
      const [r] = await sql<Array<{ id: string; user_id: string; last_used_at: string | null; name: string; disabled: boolean }>>`
        SELECT t.id, t.user_id, t.last_used_at, u.name, u.disabled FROM api_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.hash = ${hash} AND t.revoked_at IS NULL`;
      return r && { tokenId: r.id, userId: r.user_id, lastUsedAt: r.last_used_at, userName: r.name, userDisabled: r.disabled };
    },
    async get(id) {
      const [r] = await sql<TokenRawRow[]>`SELECT * FROM api_tokens WHERE id = ${id}`;
      return r && { ...tokenOfRow(r), userId: r.user_id, revokedAt: r.revoked_at };
    },
    async listActive(userId) {
      return (await sql<TokenRawRow[]>`SELECT * FROM api_tokens WHERE user_id = ${userId} AND revoked_at IS NULL ORDER BY created_at, id`).map(tokenOfRow);
    },
    async revoke(id) {
      return (await sql`UPDATE api_tokens SET revoked_at = ${nowIso()} WHERE id = ${id} AND revoked_at IS NULL`).count > 0;
    },
    async touch(id, at) {
      await sql`UPDATE api_tokens SET last_used_at = ${at} WHERE id = ${id}`;
    },
  };
}
