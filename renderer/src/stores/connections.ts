/**
 * The operator's connections: the list, which one is selected (chats and webhooks act on it), live status
 * changes from `session.status` events, and the deleted ones (read-only records, loaded on request).
 *
 * Ordering: every `session.status` event applied gets the next arrival number (`statusVersion`, per connection).
 * An API answer (the list, one connection, a restart) is taken with the arrival number current when its request
 * was sent: when an event for that connection arrived meanwhile, the answer's status is older than what the
 * event said and is not applied (its other fields are). So a slow answer can never put STARTING back beside a QR.
 */
import { create } from 'zustand';
import type { ApiClient } from '../api/client.ts';
import { errorMessage } from '../api/client.ts';
import type { Connection, ConnectionStatus } from '../api/types.ts';

const SELECTED_KEY = 'switchboard.connection';

/** The last status event applied to one connection: its arrival number, status and reason. */
interface StatusMark {
  version: number;
  status: ConnectionStatus;
  reason: string | null;
  /** The event's time (ISO 8601). */
  at: string;
}

interface ConnectionsState {
  items: Connection[];
  loading: boolean;
  loaded: boolean;
  error: string | null;
  selectedId: string | null;
  /** Deleted connections (status `stopped`), newest deletion first; null until `loadDeleted`. */
  deleted: Connection[] | null;
  deletedError: string | null;
  /** Arrival number of the latest status event (any connection). */
  statusVersion: number;
  /** The latest status event per connection (also for ones not listed yet). */
  marks: Record<string, StatusMark>;
  load(client: ApiClient): Promise<void>;
  /** Loads the deleted connections (`GET /connections?include=deleted`). */
  loadDeleted(client: ApiClient): Promise<void>;
  /**
   * Adds or replaces a connection from an API answer. `since` is `statusVersion` when the request was sent
   * (omitted: the answer is taken as current); a status event that arrived after it keeps its status.
   */
  upsert(c: Connection, since?: number): void;
  /** Awaits an API answer for one connection and upserts it, ordered against status events (see above). */
  track(request: Promise<Connection>): Promise<Connection>;
  remove(id: string): void;
  select(id: string | null): void;
  /** A `session.status` event: the newest status of `id` (`stopped` moves it to the deleted ones). */
  applyStatus(id: string, status: ConnectionStatus, reason?: string | null, at?: string): void;
}

function savedSelection(): string | null {
  try {
    return localStorage.getItem(SELECTED_KEY);
  } catch {
    return null;
  }
}

/** `c` with the status of a newer event, when one arrived after the request that produced `c` was sent. */
function ordered(c: Connection, marks: Record<string, StatusMark>, since: number | undefined): Connection {
  const mark = marks[c.id];
  if (since === undefined || !mark || mark.version <= since) return c;
  return { ...c, status: mark.status, statusReason: mark.reason, updatedAt: mark.at > c.updatedAt ? mark.at : c.updatedAt };
}

const byDeletion = (a: Connection, b: Connection) => b.updatedAt.localeCompare(a.updatedAt);

/** Puts a connection that is now `stopped` among the deleted ones (when they are loaded). */
function withDeleted(deleted: Connection[] | null, c: Connection): Connection[] | null {
  return deleted && [c, ...deleted.filter((x) => x.id !== c.id)].sort(byDeletion);
}

export const useConnections = create<ConnectionsState>((set, get) => ({
  items: [],
  loading: false,
  loaded: false,
  error: null,
  selectedId: savedSelection(),
  deleted: null,
  deletedError: null,
  statusVersion: 0,
  marks: {},

  async load(client) {
    set({ loading: true, error: null });
    const since = get().statusVersion;
    try {
      const answer = await client.listConnections();
      const { selectedId, marks } = get();
      // A connection an event deleted meanwhile is not listed again.
      const items = answer.map((c) => ordered(c, marks, since)).filter((c) => c.status !== 'stopped');
      const keep = items.some((c) => c.id === selectedId);
      const fallback = items.find((c) => c.status === 'online') ?? items[0];
      set({ items, loading: false, loaded: true, selectedId: keep ? selectedId : (fallback?.id ?? null) });
    } catch (err) {
      set({ loading: false, loaded: true, error: errorMessage(err) });
    }
  },

  async loadDeleted(client) {
    const since = get().statusVersion;
    try {
      const all = await client.listConnections({ includeDeleted: true });
      const { marks } = get();
      set({ deleted: all.map((c) => ordered(c, marks, since)).filter((c) => c.status === 'stopped').sort(byDeletion), deletedError: null });
    } catch (err) {
      set({ deletedError: errorMessage(err) });
    }
  },

  upsert(answer, since) {
    set((s) => {
      const c = ordered(answer, s.marks, since);
      if (c.status === 'stopped') {
        return { items: s.items.filter((x) => x.id !== c.id), deleted: withDeleted(s.deleted, c) };
      }
      const i = s.items.findIndex((x) => x.id === c.id);
      if (i === -1) return { items: [...s.items, c] };
      const items = s.items.slice();
      items[i] = c;
      return { items };
    });
  },

  async track(request) {
    const since = get().statusVersion;
    const c = await request;
    get().upsert(c, since);
    return get().items.find((x) => x.id === c.id) ?? c;
  },

  remove(id) {
    set((s) => {
      const gone = s.items.find((x) => x.id === id);
      return {
        items: s.items.filter((x) => x.id !== id),
        selectedId: s.selectedId === id ? null : s.selectedId,
        deleted: gone ? withDeleted(s.deleted, { ...gone, status: 'stopped', statusReason: 'deleted', updatedAt: new Date().toISOString() }) : s.deleted,
      };
    });
  },

  select(id) {
    try {
      if (id) localStorage.setItem(SELECTED_KEY, id);
    } catch {
      /* ignore */
    }
    set({ selectedId: id });
  },

  applyStatus(id, status, reason = null, at = new Date().toISOString()) {
    set((s) => {
      const version = s.statusVersion + 1;
      const marks = { ...s.marks, [id]: { version, status, reason, at } };
      const i = s.items.findIndex((x) => x.id === id);
      if (status === 'stopped') {
        const gone = i === -1 ? undefined : { ...s.items[i]!, status, statusReason: reason, updatedAt: at };
        return {
          statusVersion: version,
          marks,
          items: s.items.filter((x) => x.id !== id),
          deleted: gone ? withDeleted(s.deleted, gone) : s.deleted,
        };
      }
      if (i === -1) return { statusVersion: version, marks };
      const items = s.items.slice();
      items[i] = { ...items[i]!, status, statusReason: reason, updatedAt: at };
      return { statusVersion: version, marks, items };
    });
  },
}));

export const STATUS_COLORS: Record<string, string> = {
  starting: 'gray',
  scan_qr: 'yellow',
  connected: 'blue',
  online: 'green',
  reconnecting: 'orange',
  logged_out: 'red',
  failed: 'red',
  stopped: 'dark',
};

export const STATUS_LABELS: Record<string, string> = {
  starting: 'Starting',
  scan_qr: 'Waiting for scan',
  connected: 'Syncing',
  online: 'Online',
  reconnecting: 'Reconnecting',
  logged_out: 'Logged out',
  failed: 'Failed',
  stopped: 'Deleted',
  unknown: 'Unknown',
};
