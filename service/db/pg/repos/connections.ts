/** PostgreSQL twin of service/db/connections.ts (same methods, same results, Promises). */
import { nowIso } from '../../database.ts';
import { connectionOfRow, sessionNameFor, type ConnectionRawRow, type connectionsRepo } from '../../connections.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

export function pgConnectionsRepo({ sql }: PgScope): Async<ReturnType<typeof connectionsRepo>> {
  const rows = async (q: Promise<ConnectionRawRow[]>) => (await q).map(connectionOfRow);
  const count = async (q: Promise<Array<{ n: number }>>) => (await q)[0]!.n;
  return {
    async get(id) {
      const [r] = await sql<ConnectionRawRow[]>`SELECT * FROM connections WHERE id = ${id}`;
      return r && connectionOfRow(r);
    },
    listByUser(userId, opts = {}) {
      return rows(
        opts.includeStopped
          ? sql<ConnectionRawRow[]>`SELECT * FROM connections WHERE user_id = ${userId} ORDER BY created_at, id`
          : sql<ConnectionRawRow[]>`SELECT * FROM connections WHERE user_id = ${userId} AND status <> 'stopped' ORDER BY created_at, id`,
      );
    },
    listActive() {
      return rows(sql<ConnectionRawRow[]>`SELECT * FROM connections WHERE status <> 'stopped' ORDER BY created_at, id`);
    },
    countActiveByUser(userId) {
      return count(sql`SELECT count(*) AS n FROM connections WHERE user_id = ${userId} AND status <> 'stopped'`);
    },
    countActive() {
      return count(sql`SELECT count(*) AS n FROM connections WHERE status <> 'stopped'`);
    },
    async findIdle(userId) {
      const [r] = await sql<ConnectionRawRow[]>`SELECT * FROM connections WHERE user_id = ${userId}
        AND status IN ('starting','scan_qr','reconnecting') AND jid IS NULL ORDER BY created_at DESC LIMIT 1`;
      return r && connectionOfRow(r);
    },
    async insert(c) {
      const now = nowIso();
      const [r] = await sql<ConnectionRawRow[]>`INSERT INTO connections (id, user_id, name, worker_id, session_name, status, created_at, updated_at)
        VALUES (${c.id}, ${c.userId}, ${c.name}, ${c.workerId}, ${sessionNameFor(c.userId, c.id)}, 'starting', ${now}, ${now})
        RETURNING *`;
      return connectionOfRow(r!);
    },
    async setStatus(id, status, reason) {
      await sql`UPDATE connections SET status = ${status}, status_reason = ${reason}, updated_at = ${nowIso()} WHERE id = ${id}`;
    },
    async setAccount(id, a) {
      await sql`UPDATE connections SET phone_number = ${a.phoneNumber}, jid = ${a.jid}, lid = COALESCE(${a.lid ?? null}::text, lid),
        push_name = COALESCE(${a.pushName ?? null}::text, push_name), updated_at = ${nowIso()} WHERE id = ${id}`;
    },
    async rename(id, name) {
      await sql`UPDATE connections SET name = ${name}, updated_at = ${nowIso()} WHERE id = ${id}`;
    },
    async setCallSettings(id, rejectCalls, message) {
      await sql`UPDATE connections SET reject_calls = ${rejectCalls}, reject_calls_message = ${message}, updated_at = ${nowIso()}
        WHERE id = ${id}`;
    },
  };
}
