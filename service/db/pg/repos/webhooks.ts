/**
 * PostgreSQL twin of service/db/webhooks.ts (same methods, same results, Promises). No in-memory cache: with several
 * hosts on one database another host may change a webhook at any time, so `targets` and `getCached` read the table
 * (`forgetCache` has nothing to drop).
 */
import { nowIso } from '../../database.ts';
import type { Async } from '../../store-api.ts';
import {
  ALLOW_LAN_SETTING,
  allowLanOf,
  patchedWebhook,
  webhookOfRow,
  webhookTargetOfRow,
  type WebhookRawRow,
  type WebhookTargetRawRow,
  type webhooksRepo,
} from '../../webhooks.ts';
import type { PgScope } from './scope.ts';

export function pgWebhooksRepo({ sql }: PgScope): Async<ReturnType<typeof webhooksRepo>> {
  return {
    async get(id) {
      const [r] = await sql<WebhookRawRow[]>`SELECT * FROM webhooks WHERE id = ${id}`;
      return r && webhookOfRow(r);
    },
    getCached(id) {
      return this.get(id);
    },
    async listByConnection(connectionId) {
      return (await sql<WebhookRawRow[]>`SELECT * FROM webhooks WHERE connection_id = ${connectionId} ORDER BY created_at, id`).map(webhookOfRow);
    },
    async activeIds() {
      return (await sql<Array<{ id: string }>>`SELECT id FROM webhooks WHERE active`).map((r) => r.id);
    },
    async targets(connectionId) {
      const rows = await sql<WebhookTargetRawRow[]>`
        SELECT w.id, w.events, w.active, c.session_name FROM webhooks w JOIN connections c ON c.id = w.connection_id
        WHERE w.connection_id = ${connectionId} ORDER BY w.created_at, w.id`;
      return rows.map(webhookTargetOfRow);
    },
    async forgetCache() {},
    async insert(w) {
      const now = nowIso();
      const [r] = await sql<WebhookRawRow[]>`INSERT INTO webhooks (id, user_id, connection_id, url, events, secret, active, created_at, updated_at)
        VALUES (${w.id}, ${w.userId}, ${w.connectionId}, ${w.url}, ${JSON.stringify(w.events)}, ${w.secret}, ${w.active}, ${now}, ${now})
        RETURNING *`;
      return webhookOfRow(r!);
    },
    async update(id, patch) {
      const cur = await this.get(id);
      if (!cur) return undefined;
      const next = patchedWebhook(cur, patch);
      const [r] = await sql<WebhookRawRow[]>`UPDATE webhooks SET url = ${next.url}, events = ${JSON.stringify(next.events)},
        active = ${next.active}, disabled_reason = ${next.disabledReason}, updated_at = ${nowIso()} WHERE id = ${id} RETURNING *`;
      return r && webhookOfRow(r);
    },
    async delete(id) {
      return (await sql`DELETE FROM webhooks WHERE id = ${id}`).count > 0;
    },
    async allowLanSetting() {
      const [r] = await sql<Array<{ value: string }>>`SELECT value FROM settings WHERE key = ${ALLOW_LAN_SETTING}`;
      return allowLanOf(r?.value);
    },
    async setAllowLanSetting(on) {
      await sql`INSERT INTO settings (key, value) VALUES (${ALLOW_LAN_SETTING}, ${JSON.stringify(on)})
        ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
    },
  };
}
