/**
 * PostgreSQL twin of service/db/deliveries.ts (same methods, same results, Promises): the webhook outbox and delivery
 * log. Claims take due rows with `FOR UPDATE SKIP LOCKED`, so dispatchers of several hosts never claim the same row;
 * claims and outcomes commit with `synchronous_commit = off` (SQLite's relaxedTransaction: a lost one after a power
 * cut is a redelivery, never a lost event).
 */
import type postgres from 'postgres';
import { nowIso } from '../../database.ts';
import {
  HELD_TOO_LONG,
  claimedOfRows,
  deliveryOfRow,
  type ClaimedDelivery,
  type ClaimedRawRow,
  type DeliveryRawRow,
  type deliveriesRepo,
} from '../../deliveries.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

const COLUMNS = ['id', 'webhook_id', 'user_id', 'event_seq', 'msg_id', 'event_type', 'body', 'status', 'attempts',
  'next_attempt_at', 'last_status', 'last_error', 'replay_of', 'delivered_at', 'created_at'];

export function pgDeliveriesRepo(scope: PgScope): Async<ReturnType<typeof deliveriesRepo>> {
  const { sql } = scope;
  /** `fn` atomically, relaxed (see the module comment): joins the running transaction, if any. */
  const relaxed = async <T>(fn: (t: postgres.TransactionSql) => Promise<T>): Promise<T> => {
    if (scope.inTx) return (scope.sql as postgres.TransactionSql).savepoint((t) => fn(t)) as Promise<T>;
    return (sql as postgres.Sql).begin(async (t) => {
      await t`SET LOCAL synchronous_commit = off`;
      return fn(t);
    }) as Promise<T>;
  };
  return {
    async dueNow(id, now = Date.now()) {
      return (await sql`UPDATE webhook_deliveries SET next_attempt_at = ${now} WHERE id = ${id} AND status = 'pending'`).count === 1;
    },
    async insert(d, now = nowIso()) {
      const claimed = d.status === 'delivering';
      await sql`INSERT INTO webhook_deliveries (id, webhook_id, user_id, event_seq, msg_id, event_type, body, status, attempts,
          next_attempt_at, lease_until, replay_of, created_at)
        VALUES (${d.id}, ${d.webhookId}, ${d.userId}, ${d.eventSeq}, ${d.msgId}, ${d.eventType}, ${d.body}, ${d.status},
          ${claimed ? 1 : 0}, ${d.nextAttemptAt}, ${claimed ? (d.leaseUntil ?? null) : null}, ${d.replayOf ?? null}, ${now})`;
    },
    async get(id) {
      const [r] = await sql<DeliveryRawRow[]>`SELECT ${sql(COLUMNS)} FROM webhook_deliveries WHERE id = ${id}`;
      return r && deliveryOfRow(r);
    },
    async logs(webhookId, limit = 100) {
      return (await sql<DeliveryRawRow[]>`SELECT ${sql(COLUMNS)} FROM webhook_deliveries WHERE webhook_id = ${webhookId}
        ORDER BY created_at DESC, ord DESC LIMIT ${limit}`).map(deliveryOfRow);
    },
    async hasDue(webhookId, now) {
      return (await sql`SELECT 1 FROM webhook_deliveries WHERE webhook_id = ${webhookId} AND status = 'pending'
        AND next_attempt_at <= ${now} LIMIT 1`).length > 0;
    },
    async nextDue(webhookId) {
      const [r] = await sql<Array<{ t: number | null }>>`SELECT min(next_attempt_at) AS t FROM webhook_deliveries
        WHERE webhook_id = ${webhookId} AND status = 'pending'`;
      return r?.t ?? undefined;
    },
    claim(want, now, leaseUntil) {
      return relaxed(async (t) => {
        const out: ClaimedDelivery[] = [];
        for (const [webhookId, limit] of want) {
          if (limit <= 0) continue;
          const rows = await t<ClaimedRawRow[]>`
            UPDATE webhook_deliveries SET status = 'delivering', attempts = attempts + 1, lease_until = ${leaseUntil}
            WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ${webhookId} AND status = 'pending'
                         AND next_attempt_at <= ${now} ORDER BY next_attempt_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
            RETURNING id, webhook_id, msg_id, body, attempts, next_attempt_at`;
          for (const d of claimedOfRows(rows)) out.push(d);
        }
        return out;
      });
    },
    async complete(outcomes) {
      if (outcomes.length === 0) return;
      await relaxed(async (t) => {
        const now = nowIso();
        const work: Array<Promise<unknown>> = [];
        for (const o of outcomes) {
          if (o.kind === 'delivered')
            work.push(t`UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ${now}, last_status = ${o.status},
              last_error = NULL, last_response = ${o.response}, lease_until = NULL WHERE id = ${o.id} AND status = 'delivering'`);
          else if (o.kind === 'retry')
            work.push(t`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${o.nextAttemptAt}, last_status = ${o.status},
              last_error = ${o.error}, last_response = ${o.response}, lease_until = NULL WHERE id = ${o.id} AND status = 'delivering'`);
          else if (o.kind === 'release')
            work.push(t`UPDATE webhook_deliveries SET status = 'pending', attempts = greatest(attempts - 1, 0), lease_until = NULL
              WHERE id = ${o.id} AND status = 'delivering'`);
          else
            work.push(t`UPDATE webhook_deliveries SET status = 'failed', last_status = ${o.status}, last_error = ${o.error},
              last_response = ${o.response}, lease_until = NULL WHERE id = ${o.id} AND status = 'delivering'`);
        }
        await Promise.all(work); // pipelined on the transaction's connection, in order
      });
    },
    requeue(opts) {
      const all = opts.all;
      const now = opts.now ?? Date.now();
      return relaxed(async (t) => {
        const requeued = await t`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${now}, lease_until = NULL
          WHERE status = 'delivering' AND attempts < ${opts.maxAttempts} AND (${all} OR lease_until < ${now})`;
        const failed = await t`UPDATE webhook_deliveries SET status = 'failed', last_error = 'interrupted during the last attempt',
          lease_until = NULL WHERE status = 'delivering' AND attempts >= ${opts.maxAttempts} AND (${all} OR lease_until < ${now})`;
        return { requeued: requeued.count, failed: failed.count };
      });
    },
    async prune(beforeIso) {
      await sql`UPDATE webhook_deliveries SET status = 'failed', last_error = ${HELD_TOO_LONG}
        WHERE created_at < ${beforeIso} AND status = 'pending' AND webhook_id IN (SELECT id FROM webhooks WHERE NOT active)`;
      return (await sql`DELETE FROM webhook_deliveries WHERE created_at < ${beforeIso}
        AND status IN ('delivered', 'failed', 'skipped')`).count;
    },
    async countOpen() {
      const [r] = await sql<Array<{ n: number }>>`SELECT count(*) AS n FROM webhook_deliveries WHERE status IN ('pending', 'delivering')`;
      return r!.n;
    },
  };
}
