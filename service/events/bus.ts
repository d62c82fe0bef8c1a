/**
 * In-process fan-out of committed events to live subscribers (the WebSocket streams). Events reach the bus only
 * after the transaction that logged them is on disk (the event log publishes them: log.ts).
 */
import type { LoggedEvent } from '../db/events.ts';

export type EventListener = (event: LoggedEvent) => void;

export class EventBus {
  readonly #byUser = new Map<string, Set<EventListener>>();

  /** Calls `listener` for each committed event of `userId`; returns the unsubscribe function. */
  subscribe(userId: string, listener: EventListener): () => void {
    let set = this.#byUser.get(userId);
    if (!set) this.#byUser.set(userId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#byUser.delete(userId);
    };
  }

  publish(userId: string, event: LoggedEvent): void {
    const set = this.#byUser.get(userId);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(event);
      } catch {
        // A failing subscriber must not break the others or the writer.
      }
    }
  }
}
