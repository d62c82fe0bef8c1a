/**
 * The data layer in one object: the open database, every table's named queries, and `tx()`, which runs work in
 * one SQLite transaction and publishes the events it logged to the in-process bus once (and only if) it commits.
 */
import path from 'node:path';
import { openDatabase, type Db } from './database.ts';
import { authStateRepo } from './auth-state.ts';
import { chatsRepo } from './chats.ts';
import { connectionsRepo } from './connections.ts';
import { contactsRepo } from './contacts.ts';
import { eventsRepo, type LoggedEvent } from './events.ts';
import { messagesRepo } from './messages.ts';
import { tokensRepo } from './tokens.ts';
import { usersRepo } from './users.ts';
import { EventBus } from '../events/bus.ts';

export type Store = ReturnType<typeof createStore>;

/** Opens `<dataDir>/switchboard.db` (see openDatabase for errors). */
export function openStore(dataDir: string): Store {
  return createStore(openDatabase(path.join(dataDir, 'switchboard.db')));
}

export function createStore(db: Db) {
  const events = eventsRepo(db);
  const bus = new EventBus();
  const pending: Array<[userId: string, event: LoggedEvent]> = [];
  let depth = 0;

  function flush(): void {
    const batch = pending.splice(0);
    for (const [userId, event] of batch) bus.publish(userId, event);
  }

  /** Runs `fn` in a transaction (a savepoint when nested); events it appends are published after the outermost commit. */
  function tx<T>(fn: () => T): T {
    const mark = pending.length;
    depth++;
    try {
      const result = db.transaction(fn)();
      depth--;
      if (depth === 0) flush();
      return result;
    } catch (err) {
      depth--;
      pending.length = mark;
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
    events,
    tx,
    /** Logs an event for `userId` (inside the caller's `tx`, or in its own). */
    appendEvent(userId: string, connectionId: string | null, event: string, payload: Record<string, unknown>): LoggedEvent {
      return tx(() => {
        const logged = events.append(userId, connectionId, event, payload);
        pending.push([userId, logged]);
        return logged;
      });
    },
    close(): void {
      if (db.open) db.close();
    },
  };
}
