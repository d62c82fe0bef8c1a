/**
 * PostgreSQL twin of service/db/webhooks.ts (same methods, same results, Promises). No in-memory cache: with several
 * hosts on one database another host may change a webhook at any time, so `targets` and `getCached` read the table
 * (`forgetCache` has nothing to drop).
 */
import { nowIso } from '../../database.ts';
import type { Async } from '../../store-api.ts';
import { ALLOW_LAN_SETTING, type WebhookRow, type webhooksRepo } from '../../webhooks.ts';
import type { PgScope } from './scope.ts';

interface RawRow {
  id: string;
  user_id: string;
  connection_id: string;
  url: string;
  events: string;
  secret: string;
  active: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

const toRow = (r: RawRow): WebhookRow => ({
  id: r.id,
  userId: r.user_id,
  connectionId: r.connection_id,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  secret: r.secret,
  active: r.active,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export function pgWebhooksRepo({ sql }: PgScope): Async<ReturnType<typeof webhooksRepo>> {
  return {
    async get(id) {
      const [r] = await sql<RawRow[]>`SELECT * FROM webhooks WHERE id = ${id}`;
      return r && toRow(r);
    },
    getCached(id) {
      return this.get(id);
    },
    async listByConnection(connectionId) {
      return (await sql<RawRow[]>`SELECT * FROM webhooks WHERE connection_id = ${connectionId} ORDER BY created_at, id`).map(toRow);
    },
    async activeIds() {
      return (await sql<Array<{ id: string }>>`SELECT id FROM webhooks WHERE active`).map((r) => r.id);
    },
    async targets(connectionId) {
      const rows = await sql<Array<{ id: string; events: string; active: boolean; session_name: string }>>`
        SELECT w.id, w.events, w.active, c.session_name FROM webhooks w JOIN connections c ON c.id = w.connection_id
        WHERE w.connection_id = ${connectionId} ORDER BY w.created_at, w.id`;
      return rows.map((r) => ({ id: r.id, events: JSON.parse(r.events) as string[], active: r.active, sessionName: r.session_name }));
    },
    async forgetCache() {},
    async insert(w) {
      const now = nowIso();
      const [r] = await sql<RawRow[]>`INSERT INTO webhooks (id, user_id, connection_id, url, events, secret, active, created_at, updated_at)
        VALUES (${w.id}, ${w.userId}, ${w.connectionId}, ${w.url}, ${JSON.stringify(w.events)}, ${w.secret}, ${w.active}, ${now}, ${now})
        RETURNING *`;
      return toRow(r!);
    },
    async update(id, patch) {
      const cur = await this.get(id);
      if (!cur) return undefined;
      const active = patch.active ?? cur.active;
      const disabledReason = patch.disabledReason !== undefined ? patch.disabledReason : active ? null : cur.disabledReason;
      const [r] = await sql<RawRow[]>`UPDATE webhooks SET url = ${patch.url ?? cur.url}, events = ${JSON.stringify(patch.events ?? cur.events)},
        active = ${active}, disabled_reason = ${disabledReason}, updated_at = ${nowIso()} WHERE id = ${id} RETURNING *`;
      return r && toRow(r);
    },
    async delete(id) {
      return (await sql`DELETE FROM webhooks WHERE id = ${id}`).count > 0;
    },
    async allowLanSetting() {
      const [r] = await sql<Array<{ value: string }>>`SELECT value FROM settings WHERE key = ${ALLOW_LAN_SETTING}`;
      if (!r) return false;
      try {
        return JSON.parse(r.value) === true;
      } catch {
        return false;
      }
    },
    async setAllowLanSetting(on) {
      await sql`INSERT INTO settings (key, value) VALUES (${ALLOW_LAN_SETTING}, ${JSON.stringify(on)})
        ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
    },
  };
}
