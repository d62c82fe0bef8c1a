/**
 * Webhooks table: per-connection HTTP subscriptions to event types (interface-spec §2.6), each with its own
 * Standard Webhooks signing secret. Also reads the operator setting `allowLanWebhooks` from `settings`.
 */
import { cacheGeneration, type TransactionSerial } from './cache-generation.ts';
import type { Db } from './database.ts';
import { flagOf, nowIso } from './database.ts';

export interface WebhookRow {
  id: string;
  userId: string;
  connectionId: string;
  url: string;
  events: string[];
  secret: string;
  active: boolean;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A `webhooks` row as either engine returns it (`active`: SQLite 0/1, PostgreSQL boolean; `events` JSON text). */
export interface WebhookRawRow {
  id: string;
  user_id: string;
  connection_id: string;
  url: string;
  events: string;
  secret: string;
  active: number | boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** The WebhookRow of a raw `webhooks` row. */
export const webhookOfRow = (r: WebhookRawRow): WebhookRow => ({
  id: r.id,
  userId: r.user_id,
  connectionId: r.connection_id,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  secret: r.secret,
  active: flagOf(r.active),
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A webhook that gets an outbox row for an event (see deliveries.ts). */
export interface WebhookTarget {
  id: string;
  events: string[];
  active: boolean;
  sessionName: string;
}

/** A row of the `targets` query (webhook joined with its connection) as either engine returns it. */
export interface WebhookTargetRawRow {
  id: string;
  events: string;
  active: number | boolean;
  session_name: string;
}

/** The WebhookTarget of a raw `targets` row. */
export const webhookTargetOfRow = (r: WebhookTargetRawRow): WebhookTarget => ({
  id: r.id,
  events: JSON.parse(r.events) as string[],
  active: flagOf(r.active),
  sessionName: r.session_name,
});

/** Settings key of the operator switch that allows http:// and LAN webhook targets. */
export const ALLOW_LAN_SETTING = 'allowLanWebhooks';

/** The `allowLanWebhooks` setting of its stored value (JSON true/false): false when unset or not JSON true. */
export function allowLanOf(value: string | undefined): boolean {
  if (value === undefined) return false;
  try {
    return JSON.parse(value) === true;
  } catch {
    return false;
  }
}

/** A webhook update: the patch's fields over the current row; re-activating clears `disabledReason`. */
export type WebhookPatch = { url?: string; events?: string[]; active?: boolean; disabledReason?: string | null };

/** The url, events, active and disabledReason a webhook has once `patch` applies to `cur`. */
export function patchedWebhook(
  cur: WebhookRow,
  patch: WebhookPatch,
): Pick<WebhookRow, 'url' | 'events' | 'active' | 'disabledReason'> {
  const active = patch.active ?? cur.active;
  const disabledReason = patch.disabledReason !== undefined ? patch.disabledReason : active ? null : cur.disabledReason;
  return { url: patch.url ?? cur.url, events: patch.events ?? cur.events, active, disabledReason };
}

/**
 * @param serial the store's running write transaction (cache-generation.ts): the cached targets and rows are checked
 *   against the table's generation counter once per transaction, and on every read outside one.
 */
export function webhooksRepo(db: Db, serial: TransactionSerial) {
  const q = {
    get: db.prepare(`SELECT * FROM webhooks WHERE id = ?`),
    listByConnection: db.prepare(`SELECT * FROM webhooks WHERE connection_id = ? ORDER BY created_at, id`),
    listActive: db.prepare(`SELECT id FROM webhooks WHERE active = 1`),
    targets: db.prepare(
      `SELECT w.id, w.events, w.active, c.session_name FROM webhooks w JOIN connections c ON c.id = w.connection_id
       WHERE w.connection_id = ?`,
    ),
    insert: db.prepare(
      `INSERT INTO webhooks (id, user_id, connection_id, url, events, secret, active, created_at, updated_at)
       VALUES (@id, @userId, @connectionId, @url, @events, @secret, @active, @now, @now)`,
    ),
    update: db.prepare(
      `UPDATE webhooks SET url = @url, events = @events, active = @active, disabled_reason = @disabledReason,
         updated_at = @now WHERE id = @id`,
    ),
    delete: db.prepare(`DELETE FROM webhooks WHERE id = ?`),
    setting: db.prepare(`SELECT value FROM settings WHERE key = ?`),
    putSetting: db.prepare(
      `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
    ),
  };
  const targetCache = new Map<string, WebhookTarget[]>();
  const rowCache = new Map<string, WebhookRow | null>();
  const clear = () => {
    targetCache.clear();
    rowCache.clear();
  };
  // Any connection's change to the table bumps its counter (triggers, migrations.ts): the caches are dropped when it moved.
  const generation = cacheGeneration(db, 'webhooks', serial);
  const forget = () => {
    clear();
    generation.reset();
  };
  return {
    get(id: string): WebhookRow | undefined {
      const r = q.get.get(id) as WebhookRawRow | undefined;
      return r && webhookOfRow(r);
    },
    /**
     * `get` through the same in-memory cache as `targets` (the dispatcher reads the row for every attempt).
     * The returned row is shared: do not modify it.
     */
    getCached(id: string): WebhookRow | undefined {
      generation.check(clear);
      let row = rowCache.get(id);
      if (row === undefined) {
        row = this.get(id) ?? null;
        if (rowCache.size >= 10_000) rowCache.clear();
        rowCache.set(id, row);
      }
      return row ?? undefined;
    },
    listByConnection(connectionId: string): WebhookRow[] {
      return (q.listByConnection.all(connectionId) as WebhookRawRow[]).map(webhookOfRow);
    },
    /** Ids of the webhooks not paused. */
    activeIds(): string[] {
      return (q.listActive.all() as Array<{ id: string }>).map((r) => r.id);
    },
    /**
     * Every webhook of the connection with the connection's sessionName (active or not). Read for every logged
     * event, so kept in memory and checked against the table's generation counter (once per write transaction: a
     * change by any connection to the database drops it; this repo's own writes and the store's rollbacks drop it at
     * once, `forgetCache`). Connections are never deleted (soft delete) and their sessionName never changes.
     */
    targets(connectionId: string): WebhookTarget[] {
      generation.check(clear);
      const cached = targetCache.get(connectionId);
      if (cached) return cached;
      const targets = (q.targets.all(connectionId) as WebhookTargetRawRow[]).map(webhookTargetOfRow);
      targetCache.set(connectionId, targets);
      return targets;
    },
    /** Drops the in-memory `targets` and rows (after a rollback that may have undone a webhook write). */
    forgetCache(): void {
      forget();
    },
    insert(w: { id: string; userId: string; connectionId: string; url: string; events: string[]; secret: string; active: boolean }): WebhookRow {
      forget();
      q.insert.run({ ...w, events: JSON.stringify(w.events), active: w.active ? 1 : 0, now: nowIso() });
      return this.get(w.id)!;
    },
    /** Changes only the supplied fields. Re-activating clears `disabledReason`. */
    update(id: string, patch: WebhookPatch): WebhookRow | undefined {
      const cur = this.get(id);
      if (!cur) return undefined;
      const next = patchedWebhook(cur, patch);
      forget();
      q.update.run({
        id,
        url: next.url,
        events: JSON.stringify(next.events),
        active: next.active ? 1 : 0,
        disabledReason: next.disabledReason,
        now: nowIso(),
      });
      return this.get(id);
    },
    delete(id: string): boolean {
      forget();
      return q.delete.run(id).changes > 0;
    },
    /** The operator setting `allowLanWebhooks` from the settings table (JSON true/false); false when unset. */
    allowLanSetting(): boolean {
      return allowLanOf((q.setting.get(ALLOW_LAN_SETTING) as { value: string } | undefined)?.value);
    },
    setAllowLanSetting(on: boolean): void {
      q.putSetting.run(ALLOW_LAN_SETTING, JSON.stringify(on));
    },
  };
}
