/**
 * Tables `auth_creds` and `auth_keys`: the Baileys authentication state of each connection, stored as
 * BufferJSON text (the engine's `engine/auth-state.ts` does the (de)serialisation; this file only moves strings).
 */
import { relaxedTransaction, type Db } from './database.ts';

export type AuthStateRepo = ReturnType<typeof authStateRepo>;

export function authStateRepo(db: Db) {
  const q = {
    getCreds: db.prepare(`SELECT creds FROM auth_creds WHERE connection_id = ?`),
    putCreds: db.prepare(
      `INSERT INTO auth_creds (connection_id, creds) VALUES (?, ?)
       ON CONFLICT(connection_id) DO UPDATE SET creds = excluded.creds`,
    ),
    getKey: db.prepare(`SELECT value FROM auth_keys WHERE connection_id = ? AND type = ? AND id = ?`),
    putKey: db.prepare(
      `INSERT INTO auth_keys (connection_id, type, id, value) VALUES (?, ?, ?, ?)
       ON CONFLICT(connection_id, type, id) DO UPDATE SET value = excluded.value`,
    ),
    delKey: db.prepare(`DELETE FROM auth_keys WHERE connection_id = ? AND type = ? AND id = ?`),
    clearCreds: db.prepare(`DELETE FROM auth_creds WHERE connection_id = ?`),
    clearKeys: db.prepare(`DELETE FROM auth_keys WHERE connection_id = ?`),
  };
  const writeMany = (connectionId: string, rows: Array<[type: string, id: string, value: string | null]>) => {
    for (const [type, id, value] of rows) {
      if (value === null) q.delKey.run(connectionId, type, id);
      else q.putKey.run(connectionId, type, id, value);
    }
  };
  const clear = db.transaction((connectionId: string) => {
    q.clearKeys.run(connectionId);
    q.clearCreds.run(connectionId);
  });

  return {
    getCreds(connectionId: string): string | undefined {
      return (q.getCreds.get(connectionId) as { creds: string } | undefined)?.creds;
    },
    putCreds(connectionId: string, creds: string): void {
      q.putCreds.run(connectionId, creds);
    },
    /** Values of the given ids of one key type; ids without a row are absent from the result. */
    getKeys(connectionId: string, type: string, ids: readonly string[]): Map<string, string> {
      const out = new Map<string, string>();
      for (const id of ids) {
        const r = q.getKey.get(connectionId, type, id) as { value: string } | undefined;
        if (r) out.set(id, r.value);
      }
      return out;
    },
    /**
     * Writes all rows atomically; a null value deletes the key. Commits with synchronous=NORMAL (see
     * relaxedTransaction): the message commit that follows every decrypt, before its receipt leaves, syncs them.
     */
    setKeys(connectionId: string, rows: Array<[type: string, id: string, value: string | null]>): void {
      relaxedTransaction(db, () => writeMany(connectionId, rows));
    },
    /** `setKeys` without a transaction of its own: call inside one (the engine uses the store's group commit). */
    writeKeys(connectionId: string, rows: Array<[type: string, id: string, value: string | null]>): void {
      writeMany(connectionId, rows);
    },
    /** Forgets the whole auth state (after a logout), atomically. */
    clear(connectionId: string): void {
      clear(connectionId);
    },
  };
}
