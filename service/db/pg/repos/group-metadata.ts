/** The `group_metadata` table on PostgreSQL: pgGroupMetadataRepo is groupMetadataRepo (service/db/group-metadata.ts), asynchronous. */
import type { PgScope } from './scope.ts';
import { groupMetadataOfRow, type GroupMetadataRawRow, type StoredGroupMetadata } from '../../group-metadata.ts';

export function pgGroupMetadataRepo({ sql }: PgScope) {
  return {
    /** Every stored group of a connection, by group id. */
    async list(connectionId: string): Promise<StoredGroupMetadata[]> {
      const rows = await sql<GroupMetadataRawRow[]>`
        SELECT group_id, metadata, fetched_at FROM group_metadata WHERE connection_id = ${connectionId} ORDER BY group_id`;
      return rows.map(groupMetadataOfRow);
    },
    /** groupMetadataRepo.put: `fetchedAt` null keeps the stored time (0 for a new group). */
    async put(connectionId: string, groupId: string, json: string, fetchedAt: number | null): Promise<void> {
      await sql`
        INSERT INTO group_metadata AS t (connection_id, group_id, metadata, fetched_at)
        VALUES (${connectionId}, ${groupId}, ${json}, COALESCE(${fetchedAt}::bigint, 0))
        ON CONFLICT (connection_id, group_id) DO UPDATE SET
          metadata = excluded.metadata, fetched_at = COALESCE(${fetchedAt}::bigint, t.fetched_at)`;
    },
    async remove(connectionId: string, groupId: string): Promise<void> {
      await sql`DELETE FROM group_metadata WHERE connection_id = ${connectionId} AND group_id = ${groupId}`;
    },
    async clear(connectionId: string): Promise<void> {
      await sql`DELETE FROM group_metadata WHERE connection_id = ${connectionId}`;
    },
    /** groupMetadataRepo.freshness. */
    async freshness(connectionId: string): Promise<{ count: number; oldestFetchedAt: number | null }> {
      const [r] = await sql<Array<{ oldest: number | null; n: number }>>`
        SELECT MIN(fetched_at) AS oldest, COUNT(*) AS n FROM group_metadata WHERE connection_id = ${connectionId}`;
      return { count: r!.n, oldestFetchedAt: r!.oldest };
    },
  };
}
