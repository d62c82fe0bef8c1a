/**
 * The per-user event log (interface-spec §6.1, docs/architecture.md § Event log and webhook outbox): the one place
 * events are appended and published.
 *
 * - `append` writes the event in the caller's transaction (or one of its own) through db's named query, which
 *   takes a gap-free, monotonic `seq` from `users.last_event_seq` in that same transaction, and tells the
 *   in-transaction observers (the webhook outbox writes its rows there, so an event and its outbox rows commit or
 *   roll back together).
 * - Events are published to subscribers (the WebSocket streams) only once the transaction that logged them is on
 *   disk, in `seq` order; a rolled-back event is never published (the store's TransactionObserver protocol).
 */
import type { LoggedEvent } from '../db/events.ts';
import type { Store, TransactionObserver } from '../db/store.ts';
import { EventBus, type EventListener } from './bus.ts';
import type { PayloadFor } from './payloads.ts';

export type { LoggedEvent } from '../db/events.ts';

/** Told of each event inside the transaction that logs it; a throw rolls the event back with the caller's work. */
export type AppendObserver = (userId: string, event: LoggedEvent) => void;

export interface AppendOptions {
  /**
   * false: the in-transaction observers are not told (the caller routes the event itself, as the webhook outbox
   * does for a test event meant for one webhook). Subscribers still receive it after the commit.
   */
  fanOut?: boolean;
}

export class EventLog {
  readonly #store: Pick<Store, 'events' | 'atomic'>;
  readonly #bus = new EventBus();
  /**
   * Per user, the seq last published, once other connections to the database commit events too (session threads,
   * `publishCommitted`); undefined while this log is the only writer (its commits are in seq order already).
   */
  #published: Map<string, number> | undefined;
  /** Events logged by the running transaction, published once it is on disk. */
  readonly #pending: Array<[userId: string, event: LoggedEvent]> = [];
  readonly #observers: AppendObserver[] = [];

  constructor(store: Pick<Store, 'events' | 'atomic' | 'observeTransactions'>) {
    this.#store = store;
    const pending = this.#pending;
    const publication: TransactionObserver<number> = {
      mark: () => pending.length,
      rolledBack: (mark) => {
        pending.length = mark;
      },
      committed: () => {
        if (pending.length === 0) return undefined;
        const events = pending.splice(0);
        return () => {
          for (const [userId, event] of events) this.#publish(userId, event);
        };
      },
    };
    store.observeTransactions(publication);
  }

  /**
   * Other connections to the same database commit events from now on (session threads, engine/thread-engine.ts;
   * call before they start): each user's events — this log's own and `publishCommitted`'s — reach subscribers
   * strictly in seq order. Writers commit one at a time, so seq order is commit order; an event whose predecessors
   * have not arrived yet is preceded by them, read from the log (committed before it, and on disk since the same
   * WAL's fsync covered it), and their late copies are dropped.
   * @param lastSeqs each existing user's last seq now (users created later start at 0).
   */
  orderAcrossWriters(lastSeqs: Map<string, number>): void {
    this.#published = lastSeqs;
  }

  /** Publishes an event another connection committed, once that commit is on disk (see orderAcrossWriters). */
  publishCommitted(userId: string, event: LoggedEvent): void {
    this.#publish(userId, event);
  }

  #publish(userId: string, event: LoggedEvent): void {
    const published = this.#published;
    if (!published) return this.#bus.publish(userId, event);
    const last = published.get(userId) ?? 0;
    if (event.seq <= last) return;
    if (event.seq > last + 1) {
      for (const missed of this.#store.events.after(userId, last, event.seq - last - 1)) this.#bus.publish(userId, missed);
    }
    published.set(userId, event.seq);
    this.#bus.publish(userId, event);
  }

  /**
   * Appends an event for `userId`: inside the caller's `tx`/`ingest` it joins that transaction (an error rolls back
   * with the caller's work), otherwise it runs in a transaction of its own. Published after the commit. The payload
   * of a documented type must have that type's shape (payloads.ts, checked at compile time).
   * @throws Error `unknown user <id>` (the user row holds the seq counter); storage errors from SQLite.
   */
  append<E extends string>(
    userId: string,
    connectionId: string | null,
    event: E,
    payload: PayloadFor<E>,
    opts: AppendOptions = {},
  ): LoggedEvent {
    return this.#store.atomic(() => {
      const logged = this.#store.events.append(userId, connectionId, event, payload);
      if (opts.fanOut !== false) for (const observe of this.#observers) observe(userId, logged);
      this.#pending.push([userId, logged]);
      return logged;
    });
  }

  /** Adds an in-transaction observer of every appended event (see AppendObserver), for the life of the log. */
  onAppend(observer: AppendObserver): void {
    this.#observers.push(observer);
  }

  /** Calls `listener` for each committed event of `userId`, in seq order; returns the unsubscribe function. */
  subscribe(userId: string, listener: EventListener): () => void {
    return this.#bus.subscribe(userId, listener);
  }
}
