/**
 * API tokens table. Only the SHA-256 of a token is stored, with a short display prefix; the token itself
 * is shown once at creation (see auth/api-tokens.ts for the format).
 */
import type { Db } from './database.ts';
import { nowIso } from './database.ts';

/** A token record as the API lists it (never the token or its hash). */
export interface TokenRecord {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** An `api_tokens` row as either engine returns it (the columns the records read; `hash` is never read back). */
export interface TokenRawRow {
  id: string;
  user_id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** The TokenRecord (what the API lists) of a raw `api_tokens` row. */
export const tokenOfRow = (r: TokenRawRow): TokenRecord => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export type TokensRepo = ReturnType<typeof tokensRepo>;

export function tokensRepo(db: Db) {
  const q = {
    insert: db.prepare(
      `INSERT INTO api_tokens (id, user_id, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    byHash: db.prepare(`SELECT * FROM api_tokens WHERE hash = ? AND revoked_at IS NULL`),
    credential: db
      .prepare(
        `SELECT t.id, t.user_id, t.last_used_at, u.name, u.disabled FROM api_tokens t JOIN users u ON u.id = t.user_id
         WHERE t.hash = ? AND t.revoked_at IS NULL`,
      )
      .raw(true),
    get: db.prepare(`SELECT * FROM api_tokens WHERE id = ?`),
    listActive: db.prepare(`SELECT * FROM api_tokens WHERE user_id = ? AND revoked_at IS NULL ORDER BY created_at, id`),
    revoke: db.prepare(`UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
    touch: db.prepare(`UPDATE api_tokens SET last_used_at = ? WHERE id = ?`),
  };
  return {
    insert(t: { id: string; userId: string; name: string; prefix: string; hash: string }): TokenRecord {
      q.insert.run(t.id, t.userId, t.name, t.prefix, t.hash, nowIso());
      return tokenOfRow(q.get.get(t.id) as TokenRawRow);
    },
    /** The active (unrevoked) token with this hash, with its owner and last use. */
    findActiveByHash(hash: string): (TokenRecord & { userId: string }) | undefined {
      const r = q.byHash.get(hash) as TokenRawRow | undefined;
      return r && { ...tokenOfRow(r), userId: r.user_id };
    },
    /**
     * What authenticating a request needs of the active token with this hash, in one lookup: its id, last use,
     * and its user's id, name and whether they are disabled. Undefined for an unknown or revoked token (or one
     * whose user is gone).
     */
    credentialByHash(
      hash: string,
    ): { tokenId: string; lastUsedAt: string | null; userId: string; userName: string; userDisabled: boolean } | undefined {
      const r = q.credential.get(hash) as [string, string, string | null, string, number] | undefined;
      return r && { tokenId: r[0], userId: r[1], lastUsedAt: r[2], userName: r[3], userDisabled: r[4] === 1 };
    },
    /** Any token (revoked too) by id, with owner and revocation time. */
    get(id: string): (TokenRecord & { userId: string; revokedAt: string | null }) | undefined {
      const r = q.get.get(id) as TokenRawRow | undefined;
      return r && { ...tokenOfRow(r), userId: r.user_id, revokedAt: r.revoked_at };
    },
    listActive(userId: string): TokenRecord[] {
      return (q.listActive.all(userId) as TokenRawRow[]).map(tokenOfRow);
    },
    /** Returns true when an active token was revoked. */
    revoke(id: string): boolean {
      return q.revoke.run(nowIso(), id).changes > 0;
    },
    touch(id: string, at: string): void {
      q.touch.run(at, id);
    },
  };
}
