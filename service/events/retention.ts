/**
 * Event-log retention: every `intervalMs` (and once shortly after start), deletes events older than `days`, except
 * events that still have an undelivered webhook outbox row, finished webhook deliveries older than `days`, and
 * idempotency keys older than 24 h (db/idempotency.ts `IDEMPOTENCY_TTL_MS`, whatever `days` is).
 * `seq` counters live on the users row, so pruning never makes a seq reappear.
 */
import type { Logger } from 'pino';
import { IDEMPOTENCY_TTL_MS } from '../db/idempotency.ts';
import type { Store } from '../db/store.ts';

export const DEFAULT_EVENT_RETENTION_DAYS = 7;

export interface Retention {
  /** Runs one prune now; returns what was deleted. */
  pruneNow(now?: number): { events: number; deliveries: number; idempotencyKeys: number };
  stop(): void;
}

export function startRetention(opts: {
  store: Pick<Store, 'events' | 'deliveries' | 'idempotency' | 'txAsync'>;
  logger: Pick<Logger, 'info' | 'error'>;
  days?: number;
  intervalMs?: number;
}): Retention {
  const days = opts.days ?? DEFAULT_EVENT_RETENTION_DAYS;
  const pruneNow = (now = Date.now()) => {
    const cutoff = new Date(now - days * 86_400_000).toISOString();
    const deliveries = opts.store.deliveries.prune(cutoff);
    const events = opts.store.events.prune(cutoff);
    const idempotencyKeys = opts.store.idempotency.prune(new Date(now - IDEMPOTENCY_TTL_MS).toISOString());
    if (events || deliveries) opts.logger.info({ events, deliveries, cutoff }, 'pruned the event log');
    if (idempotencyKeys) opts.logger.info({ idempotencyKeys }, 'pruned expired idempotency keys');
    return { events, deliveries, idempotencyKeys };
  };
  // On the main thread: waits for the write lock without blocking (store.ts txAsync); a busy lock skips a round.
  const run = () => {
    opts.store.txAsync(() => pruneNow()).catch((err: unknown) => opts.logger.error({ err }, 'event log prune failed'));
  };
  const first = setTimeout(run, 60_000);
  const timer = setInterval(run, opts.intervalMs ?? 3_600_000);
  first.unref();
  timer.unref();
  return {
    pruneNow,
    stop() {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
