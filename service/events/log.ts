/**
 * The per-user event log (interface-spec §6.1, DESIGN §4): the one place events are appended and published.
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
  /** Events logged by the running transaction, published once it is on disk. */
  readonly #pending: Array<[userId: string, event: LoggedEvent]> = [];
  readonly #observers: AppendObserver[] = [];

  constructor(store: Pick<Store, 'events' | 'atomic' | 'observeTransactions'>) {
    this.#store = store;
    const pending = this.#pending;
    const bus = this.#bus;
    const publication: TransactionObserver<number> = {
      mark: () => pending.length,
      rolledBack: (mark) => {
        pending.length = mark;
      },
      committed: () => {
        if (pending.length === 0) return undefined;
        const events = pending.splice(0);
        return () => {
          for (const [userId, event] of events) bus.publish(userId, event);
        };
      },
    };
    store.observeTransactions(publication);
  }

  /**
   * Appends an event for `userId`: inside the caller's `tx`/`ingest` it joins that transaction (an error rolls back
   * with the caller's work), otherwise it runs in a transaction of its own. Published after the commit.
   * @throws Error `unknown user <id>` (the user row holds the seq counter); storage errors from SQLite.
   */
  append(
    userId: string,
    connectionId: string | null,
    event: string,
    payload: Record<string, unknown>,
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
