/**
 * Webhook deliveries table: the durable outbox and the delivery log (interface-spec §2.7, docs/architecture.md § Event
 * log and webhook outbox). Rows are written by the webhook outbox (webhooks/outbox.ts) in the same transaction as their
 * event, claimed by the dispatcher in batches with a lease (`pending` → `delivering`, attempts counted at claim time so
 * a crash loop cannot exceed the maximum), and completed in batches (`delivered`, back to `pending` with a later
 * `next_attempt_at`, or `failed`). Rows of a paused webhook are held `pending` (the dispatcher claims only for active
 * webhooks; the API shows them as `paused`) and go out in order once it is active again; held longer than the event
 * retention they fail (`prune`). `skipped` remains only on rows written by earlier versions. Internal status
 * `delivering` shows as `pending`.
 */
import type { Db } from './database.ts';
import { nowIso, relaxedTransaction } from './database.ts';

export type DeliveryStatus = 'pending' | 'delivering' | 'delivered' | 'failed' | 'skipped';

export interface DeliveryRow {
  id: string;
  webhookId: string;
  userId: string;
  eventSeq: number;
  msgId: string;
  eventType: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  replayOf: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

/** A `webhook_deliveries` row as either engine returns it (the columns of DeliveryRow, snake_case). */
export interface DeliveryRawRow {
  id: string;
  webhook_id: string;
  user_id: string;
  event_seq: number;
  msg_id: string;
  event_type: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  replay_of: string | null;
  delivered_at: string | null;
  created_at: string;
}

const COLUMNS = `id, webhook_id, user_id, event_seq, msg_id, event_type, body, status, attempts, next_attempt_at,
  last_status, last_error, replay_of, delivered_at, created_at`;

/** The DeliveryRow of a raw `webhook_deliveries` row. */
export const deliveryOfRow = (r: DeliveryRawRow): DeliveryRow => ({
  id: r.id,
  webhookId: r.webhook_id,
  userId: r.user_id,
  eventSeq: r.event_seq,
  msgId: r.msg_id,
  eventType: r.event_type,
  body: r.body,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lastStatus: r.last_status,
  lastError: r.last_error,
  replayOf: r.replay_of,
  deliveredAt: r.delivered_at,
  createdAt: r.created_at,
});

export interface NewDelivery {
  id: string;
  webhookId: string;
  userId: string;
  eventSeq: number;
  msgId: string;
  eventType: string;
  body: string;
  /** `delivering` = claimed at insert by the dispatcher (webhooks/outbox.ts): attempts 1, leased. */
  status: 'pending' | 'skipped' | 'delivering';
  nextAttemptAt: number;
  /** With status `delivering`: when the claim lapses (ms since the epoch). */
  leaseUntil?: number | null;
  replayOf?: string | null;
}

/** A claimed row, ready to send. `attempts` already counts this attempt. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  msgId: string;
  body: string;
  attempts: number;
  nextAttemptAt: number;
  /** A test delivery (`POST /webhooks/:id/test`): attempted even while the webhook is paused. */
  ignorePause?: boolean;
}

/** A row a claim's `RETURNING id, webhook_id, msg_id, body, attempts, next_attempt_at` returns. */
export interface ClaimedRawRow {
  id: string;
  webhook_id: string;
  msg_id: string;
  body: string;
  attempts: number;
  next_attempt_at: number;
}

/** The ClaimedDeliveries of one webhook's claimed rows, oldest due first (sorts `rows` in place). */
export function claimedOfRows(rows: ClaimedRawRow[]): ClaimedDelivery[] {
  rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at);
  return rows.map((r) => ({ id: r.id, webhookId: r.webhook_id, msgId: r.msg_id, body: r.body, attempts: r.attempts, nextAttemptAt: r.next_attempt_at }));
}

/** The outcome of one attempt. */
export type DeliveryOutcome =
  | { id: string; kind: 'delivered'; status: number; response: string | null }
  | { id: string; kind: 'retry'; status: number | null; error: string | null; response: string | null; nextAttemptAt: number }
  | { id: string; kind: 'failed'; status: number | null; error: string | null; response: string | null }
  /** Not attempted after all (webhook paused, service stopping): back to `pending`, the claim not counted. */
  | { id: string; kind: 'release' };

/** `lastError` of a delivery a paused webhook held longer than the event retention. */
export const HELD_TOO_LONG = 'held longer than the event retention while the webhook was paused';

/**
 * @param locked runs a write of this repository's own (a transaction outside the store's `tx`/`ingest`) holding the
 *   threads' write lock (store.ts `withWriteLock`): with session threads, a writer that found SQLite's lock taken
 *   would otherwise sleep in SQLite's busy handler, in steps of up to 100 ms, with its event loop stopped.
 */
export function deliveriesRepo(db: Db, locked: <T>(fn: () => T) => T = (fn) => fn()) {
  const q = {
    insert: db.prepare(
      `INSERT INTO webhook_deliveries (id, webhook_id, user_id, event_seq, msg_id, event_type, body, status, attempts,
         next_attempt_at, lease_until, replay_of, created_at)
       VALUES (@id, @webhookId, @userId, @eventSeq, @msgId, @eventType, @body, @status, @attempts, @nextAttemptAt,
         @leaseUntil, @replayOf, @now)`,
    ),
    get: db.prepare(`SELECT ${COLUMNS} FROM webhook_deliveries WHERE id = ?`),
    logs: db.prepare(
      `SELECT ${COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`,
    ),
    hasDue: db.prepare(
      `SELECT 1 FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' AND next_attempt_at <= ? LIMIT 1`,
    ),
    nextDue: db.prepare(
      `SELECT MIN(next_attempt_at) AS t FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending'`,
    ),
    claim: db.prepare(
      `UPDATE webhook_deliveries SET status = 'delivering', attempts = attempts + 1, lease_until = @leaseUntil
       WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = @webhookId AND status = 'pending'
                    AND next_attempt_at <= @now ORDER BY next_attempt_at LIMIT @limit)
       RETURNING id, webhook_id, msg_id, body, attempts, next_attempt_at`,
    ),
    delivered: db.prepare(
      `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = @now, last_status = @status, last_error = NULL,
         last_response = @response, lease_until = NULL WHERE id = @id AND status = 'delivering'`,
    ),
    retry: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = @nextAttemptAt, last_status = @status,
         last_error = @error, last_response = @response, lease_until = NULL WHERE id = @id AND status = 'delivering'`,
    ),
    failed: db.prepare(
      `UPDATE webhook_deliveries SET status = 'failed', last_status = @status, last_error = @error,
         last_response = @response, lease_until = NULL WHERE id = @id AND status = 'delivering'`,
    ),
    release: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', attempts = MAX(attempts - 1, 0), lease_until = NULL
       WHERE id = ? AND status = 'delivering'`,
    ),
    requeue: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = @now, lease_until = NULL
       WHERE status = 'delivering' AND attempts < @maxAttempts AND (@all = 1 OR lease_until < @now)`,
    ),
    failInterrupted: db.prepare(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = 'interrupted during the last attempt', lease_until = NULL
       WHERE status = 'delivering' AND attempts >= @maxAttempts AND (@all = 1 OR lease_until < @now)`,
    ),
    prune: db.prepare(
      `DELETE FROM webhook_deliveries WHERE created_at < ? AND status IN ('delivered', 'failed', 'skipped')`,
    ),
    expireHeld: db.prepare(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = @error
       WHERE created_at < @before AND status = 'pending'
         AND webhook_id IN (SELECT id FROM webhooks WHERE active = 0)`,
    ),
    countOpen: db.prepare(`SELECT count(*) AS n FROM webhook_deliveries WHERE status IN ('pending', 'delivering')`),
    dueNow: db.prepare(`UPDATE webhook_deliveries SET next_attempt_at = @now WHERE id = @id AND status = 'pending'`),
  };

  return {
    /** Makes a pending delivery (waiting for its next attempt) due now; false when it is not pending. */
    dueNow(id: string, now = Date.now()): boolean {
      return q.dueNow.run({ id, now }).changes === 1;
    },
    /** Inserts an outbox row; call inside the transaction of its event. A `delivering` row counts its attempt. */
    insert(d: NewDelivery, now = nowIso()): void {
      const claimed = d.status === 'delivering';
      q.insert.run({
        ...d,
        attempts: claimed ? 1 : 0,
        leaseUntil: claimed ? (d.leaseUntil ?? null) : null,
        replayOf: d.replayOf ?? null,
        now,
      });
    },
    get(id: string): DeliveryRow | undefined {
      const r = q.get.get(id) as DeliveryRawRow | undefined;
      return r && deliveryOfRow(r);
    },
    /** The webhook's `limit` most recent deliveries, newest first. */
    logs(webhookId: string, limit = 100): DeliveryRow[] {
      return (q.logs.all(webhookId, limit) as DeliveryRawRow[]).map(deliveryOfRow);
    },
    hasDue(webhookId: string, now: number): boolean {
      return q.hasDue.get(webhookId, now) !== undefined;
    },
    /** Earliest `next_attempt_at` of the webhook's pending rows (ms), or undefined. */
    nextDue(webhookId: string): number | undefined {
      return (q.nextDue.get(webhookId) as { t: number | null }).t ?? undefined;
    },
    /**
     * Claims up to `limit` due rows per webhook in one transaction, oldest due first.
     * @param want webhook id → how many rows it can take now
     */
    claim(want: ReadonlyMap<string, number>, now: number, leaseUntil: number): ClaimedDelivery[] {
      return locked(() => relaxedTransaction(db, () => {
        const out: ClaimedDelivery[] = [];
        for (const [webhookId, limit] of want) {
          if (limit <= 0) continue;
          for (const d of claimedOfRows(q.claim.all({ webhookId, now, limit, leaseUntil }) as ClaimedRawRow[])) out.push(d);
        }
        return out;
      }));
    },
    /** Records many attempt outcomes in one transaction. */
    complete(outcomes: readonly DeliveryOutcome[]): void {
      if (outcomes.length === 0) return;
      locked(() => relaxedTransaction(db, () => {
        const now = nowIso();
        for (const o of outcomes) {
          if (o.kind === 'delivered') q.delivered.run({ id: o.id, now, status: o.status, response: o.response });
          else if (o.kind === 'retry')
            q.retry.run({ id: o.id, nextAttemptAt: o.nextAttemptAt, status: o.status, error: o.error, response: o.response });
          else if (o.kind === 'release') q.release.run(o.id);
          else q.failed.run({ id: o.id, status: o.status, error: o.error, response: o.response });
        }
      }));
    },
    /**
     * Returns leased rows to `pending` (due now) — all of them at boot (`all`: the previous process is gone), or
     * only those whose lease expired. Rows whose interrupted attempt was already the last one become `failed`.
     */
    requeue(opts: { all: boolean; maxAttempts: number; now?: number }): { requeued: number; failed: number } {
      const params = { all: opts.all ? 1 : 0, maxAttempts: opts.maxAttempts, now: opts.now ?? Date.now() };
      return locked(() =>
        db.transaction(() => ({
          requeued: q.requeue.run(params).changes,
          failed: q.failInterrupted.run(params).changes,
        }))(),
      );
    },
    /**
     * Deletes finished deliveries created before `beforeIso`; returns how many. Rows a paused webhook held since
     * before `beforeIso` fail first (`HELD_TOO_LONG`): the retention bounds how long a pause holds events.
     */
    prune(beforeIso: string): number {
      return locked(() => {
        q.expireHeld.run({ before: beforeIso, error: HELD_TOO_LONG });
        return q.prune.run(beforeIso).changes;
      });
    },
    countOpen(): number {
      return (q.countOpen.get() as { n: number }).n;
    },
  };
}
