/**
 * Table `group_metadata`: the last known metadata of each group a connection is in (Baileys' `GroupMetadata` as
 * JSON), so a group send after a restart needs no metadata query (engine/groups.ts `GroupCache`). Rows are
 * written when the server answers a metadata query and updated from `w:gp2` notifications; `fetched_at` is when
 * the server last sent the whole metadata of the group (a notification delta does not change it).
 */
import type { Db } from './database.ts';

/** One stored group: its metadata as JSON text and when it was last fetched whole (unix ms). */
export interface StoredGroupMetadata {
  groupId: string;
  json: string;
  fetchedAt: number;
}

/** A `group_metadata` row as either engine returns it (`metadata`: the JSON text). */
export interface GroupMetadataRawRow {
  group_id: string;
  metadata: string;
  fetched_at: number;
}

/** The StoredGroupMetadata of a raw `group_metadata` row. */
export const groupMetadataOfRow = (r: GroupMetadataRawRow): StoredGroupMetadata => ({
  groupId: r.group_id,
  json: r.metadata,
  fetchedAt: r.fetched_at,
});

export function groupMetadataRepo(db: Db) {
  const q = {
    list: db.prepare(`SELECT group_id, metadata, fetched_at FROM group_metadata WHERE connection_id = ? ORDER BY group_id`),
    upsert: db.prepare(
      `INSERT INTO group_metadata (connection_id, group_id, metadata, fetched_at) VALUES (@connectionId, @groupId, @json, COALESCE(@fetchedAt, 0))
       ON CONFLICT(connection_id, group_id) DO UPDATE SET
         metadata = excluded.metadata, fetched_at = COALESCE(@fetchedAt, fetched_at)`,
    ),
    remove: db.prepare(`DELETE FROM group_metadata WHERE connection_id = ? AND group_id = ?`),
    clear: db.prepare(`DELETE FROM group_metadata WHERE connection_id = ?`),
    oldestFetch: db.prepare(`SELECT MIN(fetched_at) AS oldest, COUNT(*) AS n FROM group_metadata WHERE connection_id = ?`),
  };
  return {
    /** Every stored group of a connection. */
    list(connectionId: string): StoredGroupMetadata[] {
      return (q.list.all(connectionId) as GroupMetadataRawRow[]).map(groupMetadataOfRow);
    },
    /**
     * Writes a group's metadata. `fetchedAt` (unix ms) marks metadata the server sent whole; null keeps the stored
     * time (a delta from a notification), or 0 for a group not stored yet.
     */
    put(connectionId: string, groupId: string, json: string, fetchedAt: number | null): void {
      q.upsert.run({ connectionId, groupId, json, fetchedAt: fetchedAt ?? null });
    },
    remove(connectionId: string, groupId: string): void {
      q.remove.run(connectionId, groupId);
    },
    clear(connectionId: string): void {
      q.clear.run(connectionId);
    },
    /** How many groups are stored and the oldest `fetchedAt` among them (null when none). */
    freshness(connectionId: string): { count: number; oldestFetchedAt: number | null } {
      const r = q.oldestFetch.get(connectionId) as { oldest: number | null; n: number };
      return { count: r.n, oldestFetchedAt: r.oldest };
    },
  };
}
