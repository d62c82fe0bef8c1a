/**
 * The data layer in one object: the open database, every table's named queries, and `tx()`, which runs work in
 * one SQLite transaction and publishes the events it logged to the in-process bus once (and only if) it commits.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { inTransaction, openDatabase, type Db } from './database.ts';
import { authStateRepo } from './auth-state.ts';
import { billingRepo } from './billing.ts';
import { chatsRepo } from './chats.ts';
import { connectionsRepo } from './connections.ts';
import { contactsRepo } from './contacts.ts';
import { deliveriesRepo, webhookMessageId } from './deliveries.ts';
import { eventsRepo, type LoggedEvent } from './events.ts';
import { messagesRepo } from './messages.ts';
import { tokensRepo } from './tokens.ts';
import { usersRepo } from './users.ts';
import { webhooksRepo } from './webhooks.ts';
import { EventBus } from '../events/bus.ts';

export type Store = ReturnType<typeof createStore>;

/** Opens `<dataDir>/switchboard.db` (see openDatabase for errors). */
export function openStore(dataDir: string): Store {
  return createStore(openDatabase(path.join(dataDir, 'switchboard.db')));
}

export function createStore(db: Db) {
  const events = eventsRepo(db);
  const webhooks = webhooksRepo(db);
  const deliveries = deliveriesRepo(db);
  const bus = new EventBus();
  const pending: Array<[userId: string, event: LoggedEvent]> = [];
  let depth = 0;
  /** Outbox rows written by the running transaction; the dispatcher is woken once they commit. */
  let outboxRows = 0;
  const outboxListeners = new Set<() => void>();
  /** After a rollback: in-memory copies of rows it may have undone. */
  const forgetCaches = () => webhooks.forgetTargets();

  function flush(): void {
    const batch = pending.splice(0);
    for (const [userId, event] of batch) bus.publish(userId, event);
    if (outboxRows > 0) {
      outboxRows = 0;
      for (const listener of outboxListeners) {
        try {
          listener();
        } catch {
          // The dispatcher's wake-up must not break the writer.
        }
      }
    }
  }

  /**
   * The webhook outbox of one logged event: a row per webhook of the connection subscribed to its type
   * (`pending`, or `skipped` while the webhook is paused); only `onlyWebhookId` when given (test events).
   */
  function enqueueDeliveries(userId: string, connectionId: string, logged: LoggedEvent, onlyWebhookId?: string): void {
    const targets = webhooks.targets(connectionId);
    if (targets.length === 0) return;
    let body: string | undefined;
    const now = Date.now();
    for (const t of targets) {
      if (onlyWebhookId ? t.id !== onlyWebhookId : !(t.events.includes(logged.event) || t.events.includes('*'))) continue;
      body ??= JSON.stringify({ event: logged.event, session: t.sessionName, payload: logged.payload });
      deliveries.insert({
        id: randomUUID(),
        webhookId: t.id,
        userId,
        eventSeq: logged.seq,
        msgId: webhookMessageId(userId, logged.seq),
        eventType: logged.event,
        body,
        status: t.active ? 'pending' : 'skipped',
        nextAttemptAt: now,
      });
      if (t.active) outboxRows++;
    }
  }

  // ---- group commit ------------------------------------------------------------------------------------
  // Incoming traffic (the engine's `ingest`) is written into one open transaction that commits BATCH_WINDOW_MS
  // after it opened: one fsync for every message of that window instead of one each (a FULL commit costs
  // 0.2–1.5 ms here). Nothing leaves the process before its batch commits: events are published, the webhook
  // dispatcher woken and the engine's held frames (receipts) sent only afterwards (`whenDurable`). Any other
  // transaction (`tx`, an API write) commits the open batch first, and the HTTP layer commits it before each
  // response, so an answer never reports a write that is not on disk.
  const BATCH_WINDOW_MS = 4;
  let batchOpen = false;
  let batchTimer: NodeJS.Timeout | undefined;
  const afterBatch: Array<() => void> = [];

  /** Commits the open batch, if any, then publishes its events and runs what waited for it. */
  function commitBatch(): void {
    if (!batchOpen) return;
    clearTimeout(batchTimer);
    batchOpen = false;
    try {
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      forgetCaches();
      pending.length = 0;
      outboxRows = 0;
      afterBatch.length = 0; // held frames are dropped with the socket the engine now closes
      throw err;
    }
    flush();
    for (const cb of afterBatch.splice(0)) cb();
  }

  /** Runs `fn` in a transaction (a savepoint when nested); events it appends are published after the outermost commit. */
  function tx<T>(fn: () => T): T {
    if (depth === 0) commitBatch();
    const mark = pending.length;
    depth++;
    try {
      const result = inTransaction(db, fn);
      depth--;
      if (depth === 0) flush();
      return result;
    } catch (err) {
      depth--;
      pending.length = mark;
      if (depth === 0) outboxRows = 0;
      forgetCaches();
      throw err;
    }
  }

  /**
   * Runs `fn` (in a savepoint) inside the current group-commit batch, opening one when none is open. Its writes
   * are durable, and its events published, when the batch commits — at most BATCH_WINDOW_MS later.
   */
  function ingest<T>(fn: () => T): T {
    if (depth > 0) return tx(fn);
    if (!batchOpen) {
      db.exec('BEGIN IMMEDIATE');
      batchOpen = true;
      batchTimer = setTimeout(() => {
        try {
          commitBatch();
        } catch {
          // Reported to the writers through the rolled-back state; nothing else to do from a timer.
        }
      }, BATCH_WINDOW_MS);
    }
    const mark = pending.length;
    const outboxMark = outboxRows;
    depth++;
    try {
      const result = inTransaction(db, fn); // a savepoint inside the batch
      depth--;
      return result;
    } catch (err) {
      depth--;
      pending.length = mark;
      outboxRows = outboxMark;
      forgetCaches();
      throw err;
    }
  }

  return {
    db,
    bus,
    users: usersRepo(db),
    tokens: tokensRepo(db),
    connections: connectionsRepo(db),
    authState: authStateRepo(db),
    chats: chatsRepo(db),
    contacts: contactsRepo(db),
    messages: messagesRepo(db),
    billing: billingRepo(db),
    events,
    webhooks,
    deliveries,
    tx,
    ingest,
    /** Commits the open group-commit batch now (before an API response, at shutdown). */
    commitPending(): void {
      commitBatch();
    },
    /** Runs `cb` once everything written so far is durable: now, or when the open batch commits. */
    whenDurable(cb: () => void): void {
      if (batchOpen) afterBatch.push(cb);
      else cb();
    },
    /**
     * Logs an event for `userId` and, in the same transaction, writes the webhook outbox rows for it: inside the
     * caller's `tx`/`ingest` it joins that transaction (no savepoint of its own: an error rolls back with the
     * caller's work), otherwise in a transaction of its own. `opts.onlyWebhookId` sends it to that one webhook
     * only, subscribed or not.
     */
    appendEvent(
      userId: string,
      connectionId: string | null,
      event: string,
      payload: Record<string, unknown>,
      opts: { onlyWebhookId?: string } = {},
    ): LoggedEvent {
      const write = () => {
        const logged = events.append(userId, connectionId, event, payload);
        if (connectionId) enqueueDeliveries(userId, connectionId, logged, opts.onlyWebhookId);
        pending.push([userId, logged]);
        return logged;
      };
      return depth > 0 ? write() : tx(write);
    },
    /** Calls `listener` after each commit that wrote webhook outbox rows; returns the unsubscribe function. */
    onOutbox(listener: () => void): () => void {
      outboxListeners.add(listener);
      return () => outboxListeners.delete(listener);
    },
    close(): void {
      if (db.open) {
        commitBatch();
        db.close();
      }
    },
  };
}
