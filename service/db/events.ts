/**
 * Events table: the per-user event log. Each user's events carry a gap-free, monotonic `seq`
 * taken from `users.last_event_seq` in the same transaction as the row.
 */
import type { Db } from './database.ts';
import { nowIso } from './database.ts';

/** One logged event, as streamed on the WebSocket (interface-spec §6.1 plus `seq`). */
export interface LoggedEvent {
  seq: number;
  event: string;
  connectionId: string | null;
  payload: Record<string, unknown>;
  timestamp: string;
}

/** An `events` row as either engine returns it (`payload` JSON text). */
export interface EventRawRow {
  seq: number;
  type: string;
  connection_id: string | null;
  payload: string;
  created_at: string;
}

/** The LoggedEvent of a raw `events` row. */
export const eventOfRow = (r: EventRawRow): LoggedEvent => ({
  seq: r.seq,
  event: r.type,
  connectionId: r.connection_id,
  payload: JSON.parse(r.payload) as Record<string, unknown>,
  timestamp: r.created_at,
});

/** @param locked see deliveriesRepo: the repository's own writes outside `tx` hold the threads' write lock. */
export function eventsRepo(db: Db, locked: <T>(fn: () => T) => T = (fn) => fn()) {
  const q = {
    nextSeq: db.prepare(`UPDATE users SET last_event_seq = last_event_seq + 1 WHERE id = ? RETURNING last_event_seq AS seq`),
    insert: db.prepare(
      `INSERT INTO events (user_id, seq, connection_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    after: db.prepare(
      `SELECT seq, type, connection_id, payload, created_at FROM events WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    ),
    lastSeq: db.prepare(`SELECT last_event_seq AS seq FROM users WHERE id = ?`),
    afterFiltered: db.prepare(
      `SELECT seq, type, connection_id, payload, created_at FROM events WHERE user_id = @userId AND seq > @after
         AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
         AND (@connectionId IS NULL OR connection_id = @connectionId)
       ORDER BY seq LIMIT @limit`,
    ),
    firstSeq: db.prepare(`SELECT MIN(seq) AS seq FROM events WHERE user_id = ?`),
    // Never deletes an event that still has an undelivered webhook outbox row.
    prune: db.prepare(
      `DELETE FROM events WHERE created_at < ? AND NOT EXISTS (
         SELECT 1 FROM webhook_deliveries d WHERE d.user_id = events.user_id AND d.event_seq = events.seq
           AND d.status IN ('pending', 'delivering'))`,
    ),
  };
  return {
    /** Appends one event for `userId`; call inside the transaction that stores what caused it. */
    append(userId: string, connectionId: string | null, event: string, payload: Record<string, unknown>): LoggedEvent {
      const row = q.nextSeq.get(userId) as { seq: number } | undefined;
      if (!row) throw new Error(`unknown user ${userId}`);
      const timestamp = nowIso();
      q.insert.run(userId, row.seq, connectionId, event, JSON.stringify(payload), timestamp);
      return { seq: row.seq, event, connectionId, payload, timestamp };
    },
    /** Up to `limit` events of the user with seq > `after`, in order. */
    after(userId: string, after: number, limit: number): LoggedEvent[] {
      return (q.after.all(userId, after, limit) as EventRawRow[]).map(eventOfRow);
    },
    /** Like `after`, optionally only events of `types` and/or of one connection. */
    afterFiltered(
      userId: string,
      after: number,
      limit: number,
      filter: { types?: readonly string[] | undefined; connectionId?: string | undefined } = {},
    ): LoggedEvent[] {
      const rows = q.afterFiltered.all({
        userId,
        after,
        limit,
        types: filter.types ? JSON.stringify(filter.types) : null,
        connectionId: filter.connectionId ?? null,
      }) as EventRawRow[];
      return rows.map(eventOfRow);
    },
    /** Smallest seq still stored for the user (older ones were pruned), or undefined when none is stored. */
    firstSeq(userId: string): number | undefined {
      return (q.firstSeq.get(userId) as { seq: number | null }).seq ?? undefined;
    },
    /** Deletes events created before `beforeIso`, except those with undelivered webhook deliveries. */
    prune(beforeIso: string): number {
      return locked(() => q.prune.run(beforeIso).changes);
    },
    lastSeq(userId: string): number {
      return (q.lastSeq.get(userId) as { seq: number } | undefined)?.seq ?? 0;
    },
  };
}
