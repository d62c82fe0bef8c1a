/**
 * The webhook outbox (interface-spec §2.7, docs/architecture.md § Event log and webhook outbox): the one writer of
 * outbox rows in `webhook_deliveries` (through db's named queries); the dispatcher (dispatcher.ts) drains them.
 *
 * - Every logged event of a connection gets, in the transaction that logs it (an observer of the event log), a row
 *   per webhook of the connection subscribed to its type (or `*`). A paused webhook's rows are held `pending` and
 *   sent in order on resume.
 * - Claim at insert: while the dispatcher (the attached OutboxDrain) has room in a webhook's lane, a fresh row is
 *   written already claimed (`delivering`, attempt 1, leased) and handed over in memory once its transaction is on
 *   disk, so a fresh event costs no claim transaction. A rollback returns the reservations; rows it had no room for
 *   are written `pending` and the dispatcher is told to claim them from the table after the commit.
 * - A test event goes to its one webhook (claimed at once, sent whatever the webhook's state); a replay writes a new
 *   `pending` row with the original `webhook-id`; a retry makes a waiting row due now.
 */
import { v7 as uuidv7 } from 'uuid';
import type { ClaimedDelivery, DeliveryRow } from '../db/deliveries.ts';
import type { Store, TransactionObserver } from '../db/store.ts';
import type { WebhookRow } from '../db/webhooks.ts';
import type { EventLog, LoggedEvent } from '../events/log.ts';

/**
 * A new delivery id: a UUIDv7 (RFC 9562), time-ordered, so each new row lands at the end of the primary-key index
 * instead of on a random page of it (one dirty page less per event in every group commit).
 */
export const newDeliveryId = (): string => uuidv7();

/** The `webhook-id` of a user's event: the same for every webhook, retry and replay of that event. No dots. */
export function webhookMessageId(userId: string, seq: number): string {
  return `msg_${userId.replace(/-/g, '')}_${seq}`;
}

/** Event type of the test event (`POST /webhooks/:id/test`), sent to the one webhook tested. */
export const TEST_EVENT = 'webhook.test';

/**
 * The side that drains the outbox (the dispatcher). The claim-at-insert calls run inside the writer's transaction
 * (`reserve`) or right after it (`committed`, `abandoned`); the others ask it to look at the table.
 */
export interface OutboxDrain {
  readonly leaseMs: number;
  /** Reserves room for one fresh row of the webhook; false = write it `pending`. Called inside the transaction. */
  reserve(webhookId: string): boolean;
  /** After the commit is on disk: the rows reserved and written by it, ready to send. */
  committed(rows: ClaimedDelivery[]): void;
  /** After a rollback: reservations whose rows were undone. */
  abandoned(rows: readonly ClaimedDelivery[]): void;
  /** After a commit that wrote `pending` rows of an active webhook: there is a backlog to claim from the table. */
  backlog(): void;
  /** Rows may be due now (a webhook resumed, a retry asked for): look for them soon. */
  wake(): void;
  /** A webhook is gone: whatever the drain holds for it (its connection pool) is let go. */
  deleted(webhookId: string): void;
}

/** What the outbox keeps beside the running transaction. */
interface Uncommitted {
  /** `pending` rows of active webhooks written so far (the drain is told after the commit). */
  pendingRows: number;
  claims: number;
}

export class WebhookOutbox {
  readonly #store: Pick<Store, 'atomic' | 'deliveries' | 'webhooks'>;
  readonly #events: EventLog;
  #drain: OutboxDrain | undefined;
  /** Rows claimed at insert by the running transaction, handed to the drain when it is on disk. */
  #claimed: ClaimedDelivery[] = [];
  #pendingRows = 0;

  /** Writes the rows of every event `events` logs from now on. */
  constructor(store: Pick<Store, 'atomic' | 'deliveries' | 'webhooks' | 'observeTransactions'>, events: EventLog) {
    this.#store = store;
    this.#events = events;
    const tracking: TransactionObserver<Uncommitted> = {
      mark: () => ({ pendingRows: this.#pendingRows, claims: this.#claimed.length }),
      rolledBack: (mark) => {
        this.#pendingRows = mark.pendingRows;
        if (this.#claimed.length > mark.claims) this.#drain?.abandoned(this.#claimed.splice(mark.claims));
      },
      committed: () => this.#takeCommitted(),
    };
    store.observeTransactions(tracking);
    events.onAppend((userId, logged) => {
      if (logged.connectionId) this.#enqueue(userId, logged.connectionId, logged);
    });
  }

  /** Hands claimed rows to `drain` and tells it of new backlog from now on (the dispatcher, while it runs). */
  attach(drain: OutboxDrain): void {
    this.#drain = drain;
  }

  /** Stops handing rows to `drain`; rows are written `pending` again. */
  detach(drain: OutboxDrain): void {
    if (this.#drain === drain) this.#drain = undefined;
  }

  /** Asks the drain to look for due rows now (a webhook was resumed). */
  wake(): void {
    this.#drain?.wake();
  }

  /**
   * Logs a test event for webhook `w` and writes its one row, claimed at once and sent whatever the webhook's state
   * (no other webhook gets it). Returns that row.
   */
  sendTest(w: Pick<WebhookRow, 'id' | 'userId' | 'connectionId'>): DeliveryRow {
    const logged = this.#store.atomic(() => {
      const payload = { webhookId: w.id, message: 'Test event from Switchboard' };
      const e = this.#events.append(w.userId, w.connectionId, TEST_EVENT, payload, { fanOut: false });
      this.#enqueue(w.userId, w.connectionId, e, w.id);
      return e;
    });
    const delivery = this.#store.deliveries.logs(w.id, 5).find((d) => d.eventSeq === logged.seq);
    if (!delivery) throw new Error('test delivery was not recorded');
    return delivery;
  }

  /**
   * Makes delivery `id`, waiting for its next attempt, due now and wakes the drain; false when it is not `pending`.
   */
  retryNow(id: string): boolean {
    if (!this.#store.deliveries.dueNow(id)) return false;
    this.#drain?.wake();
    return true;
  }

  /** Writes a new `pending` row that sends finished delivery `d` again, with its original `webhook-id`. */
  replay(d: DeliveryRow): DeliveryRow {
    const id = newDeliveryId();
    this.#store.atomic(() => this.#store.deliveries.insert({
      id,
      webhookId: d.webhookId,
      userId: d.userId,
      eventSeq: d.eventSeq,
      msgId: d.msgId,
      eventType: d.eventType,
      body: d.body,
      status: 'pending',
      nextAttemptAt: Date.now(),
      replayOf: d.id,
    }));
    this.#drain?.wake();
    return this.#store.deliveries.get(id)!;
  }

  /** Deletes webhook `id`; its outbox rows go with it (ON DELETE CASCADE) and the drain lets go of it. */
  deleteWebhook(id: string): boolean {
    const deleted = this.#store.atomic(() => this.#store.webhooks.delete(id));
    this.#drain?.deleted(id);
    return deleted;
  }

  /**
   * The rows of one logged event: one per webhook of the connection subscribed to its type; only `onlyWebhookId`
   * when given (subscribed or not). Runs inside the event's transaction.
   */
  #enqueue(userId: string, connectionId: string, logged: LoggedEvent, onlyWebhookId?: string): void {
    const targets = this.#store.webhooks.targets(connectionId);
    if (targets.length === 0) return;
    const { deliveries } = this.#store;
    const drain = this.#drain;
    let body: string | undefined;
    let msgId: string | undefined;
    const now = Date.now();
    for (const t of targets) {
      if (onlyWebhookId ? t.id !== onlyWebhookId : !(t.events.includes(logged.event) || t.events.includes('*'))) continue;
      body ??= JSON.stringify({ event: logged.event, session: t.sessionName, payload: logged.payload });
      msgId ??= webhookMessageId(userId, logged.seq);
      const id = newDeliveryId();
      const test = onlyWebhookId === t.id;
      // Rows a paused webhook held (due now) go first on resume: a fresh row is not claimed ahead of them.
      const claimed = (test || (t.active && !deliveries.hasDue(t.id, now))) && drain !== undefined && drain.reserve(t.id);
      deliveries.insert(
        {
          id,
          webhookId: t.id,
          userId,
          eventSeq: logged.seq,
          msgId,
          eventType: logged.event,
          body,
          status: claimed ? 'delivering' : 'pending',
          nextAttemptAt: now,
          leaseUntil: claimed ? now + drain!.leaseMs : null,
        },
        logged.timestamp,
      );
      if (claimed) this.#claimed.push({ id, webhookId: t.id, msgId, body, attempts: 1, nextAttemptAt: now, ...(test && { ignorePause: true }) });
      else if (t.active) this.#pendingRows++;
    }
  }

  /** The commit took the claims and pending rows written so far: what to tell the drain once it is on disk. */
  #takeCommitted(): (() => void) | undefined {
    if (this.#claimed.length === 0 && this.#pendingRows === 0) return undefined;
    const claims = this.#claimed;
    this.#claimed = [];
    const backlog = this.#pendingRows > 0;
    this.#pendingRows = 0;
    return () => {
      if (claims.length > 0) {
        try {
          this.#drain?.committed(claims);
        } catch {
          // Unsent claims lapse with their lease and are sent again (at-least-once).
        }
      }
      if (backlog) {
        try {
          this.#drain?.backlog();
        } catch {
          // The drain's wake-up must not break the writer; its poll finds the rows.
        }
      }
    };
  }
}
