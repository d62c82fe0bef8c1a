/**
 * PostgreSQL twin of service/db/events.ts (same methods, same results, Promises). `append` takes the user's next
 * seq with `UPDATE users SET last_event_seq = last_event_seq + 1 … RETURNING`: the row lock it takes is held until
 * the transaction ends, so another transaction appending for the same user (this host's or another's) waits for this
 * one to commit or roll back — seqs commit in order, and a rolled-back seq is taken again: no gaps, no duplicates
 * (docs/architecture.md § Storage engines).
 */
import { nowIso } from '../../database.ts';
import { eventOfRow, type EventRawRow, type eventsRepo } from '../../events.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

export function pgEventsRepo({ sql }: PgScope): Async<ReturnType<typeof eventsRepo>> {
  return {
    async append(userId, connectionId, event, payload) {
      const timestamp = nowIso();
      const body = JSON.stringify(payload);
      // One round trip: the seq and the row in one statement (the CTE's UPDATE locks the user's row).
      const [row] = await sql<Array<{ seq: number }>>`
        WITH next AS (UPDATE users SET last_event_seq = last_event_seq + 1 WHERE id = ${userId} RETURNING last_event_seq AS seq)
        INSERT INTO events (user_id, seq, connection_id, type, payload, created_at)
        SELECT ${userId}, seq, ${connectionId}, ${event}, ${body}, ${timestamp} FROM next RETURNING seq`;
      if (!row) throw new Error(`unknown user ${userId}`);
      return { seq: row.seq, event, connectionId, payload, timestamp };
    },
    async after(userId, after, limit) {
      return (await sql<EventRawRow[]>`SELECT seq, type, connection_id, payload, created_at FROM events
        WHERE user_id = ${userId} AND seq > ${after} ORDER BY seq LIMIT ${limit}`).map(eventOfRow);
    },
    async afterFiltered(userId, after, limit, filter = {}) {
      const types = filter.types ? [...filter.types] : null;
      const connectionId = filter.connectionId ?? null;
      return (await sql<EventRawRow[]>`SELECT seq, type, connection_id, payload, created_at FROM events
        WHERE user_id = ${userId} AND seq > ${after}
          AND (${types}::text[] IS NULL OR type = ANY(${types}::text[]))
          AND (${connectionId}::text IS NULL OR connection_id = ${connectionId}::text)
        ORDER BY seq LIMIT ${limit}`).map(eventOfRow);
    },
    async firstSeq(userId) {
      const [r] = await sql<Array<{ seq: number | null }>>`SELECT min(seq) AS seq FROM events WHERE user_id = ${userId}`;
      return r?.seq ?? undefined;
    },
    async prune(beforeIso) {
      return (await sql`DELETE FROM events WHERE created_at < ${beforeIso} AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries d WHERE d.user_id = events.user_id AND d.event_seq = events.seq
          AND d.status IN ('pending', 'delivering'))`).count;
    },
    async lastSeq(userId) {
      const [r] = await sql<Array<{ seq: number }>>`SELECT last_event_seq AS seq FROM users WHERE id = ${userId}`;
      return r?.seq ?? 0;
    },
  };
}
