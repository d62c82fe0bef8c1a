/**
 * Read-only look-up of an API token in another data dir's database: the live data dir's from a sandbox-mode
 * service, or the sandbox's from a live one (the two are separate SQLite files, config/data-dir.ts). It serves one
 * purpose, the hint on a 401 (auth/api-tokens.ts: "this token belongs to the live data dir"), and runs only on
 * that path, after the token was not found in the service's own database.
 *
 * - Nothing is created: while `<dir>/switchboard.db` does not exist, each look-up is one `stat` and answers false.
 * - Nothing is written or migrated: the file is opened read-only (SQLite's shared reader locks, as any reader in
 *   WAL mode takes; a service running on that data dir is not held up) with no busy wait (busy = not found), and
 *   the handle is kept for later look-ups until `close()`.
 * - It answers only whether an active token (not revoked, its user not disabled) has this hash; any failure (not a
 *   Switchboard database, another schema, a locked or corrupt file) is false.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';

export interface PeerTokens {
  /** True when an active token with this SHA-256 hex hash is in the other data dir's database. */
  hasActive(hash: string): boolean;
  close(): void;
}

/** The look-up of tokens in `<dataDir>/switchboard.db` (see the module comment). */
export function peerTokens(dataDir: string): PeerTokens {
  const file = path.join(dataDir, 'switchboard.db');
  let db: Database.Database | undefined;
  let query: Statement<[string], unknown> | undefined;
  let closed = false;

  const open = (): Statement<[string], unknown> | undefined => {
    if (query) return query;
    if (closed || !fs.existsSync(file)) return undefined;
    db = new Database(file, { readonly: true, fileMustExist: true, timeout: 0 });
    query = db
      .prepare<[string], unknown>(
        `SELECT 1 FROM api_tokens t JOIN users u ON u.id = t.user_id
         WHERE t.hash = ? AND t.revoked_at IS NULL AND u.disabled = 0`,
      )
      .pluck();
    return query;
  };

  return {
    hasActive(hash) {
      try {
        return open()?.get(hash) !== undefined;
      } catch {
        // Not usable as a Switchboard database (yet): drop the handle; a later look-up tries again.
        db?.close();
        db = undefined;
        query = undefined;
        return false;
      }
    },
    close() {
      closed = true;
      db?.close();
      db = undefined;
      query = undefined;
    },
  };
}
