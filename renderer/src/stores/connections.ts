/**
 * The operator's connections: the list, which one is selected (chats and webhooks act on it), and live status
 * changes from `session.status` events.
 */
import { create } from 'zustand';
import type { ApiClient } from '../api/client.ts';
import { errorMessage } from '../api/client.ts';
import type { Connection, ConnectionStatus } from '../api/types.ts';

const SELECTED_KEY = 'switchboard.connection';

interface ConnectionsState {
  items: Connection[];
  loading: boolean;
  loaded: boolean;
  error: string | null;
  selectedId: string | null;
  load(client: ApiClient): Promise<void>;
  upsert(c: Connection): void;
  remove(id: string): void;
  select(id: string | null): void;
  applyStatus(id: string, status: ConnectionStatus): void;
}

function savedSelection(): string | null {
  try {
    return localStorage.getItem(SELECTED_KEY);
  } catch {
    return null;
  }
}

export const useConnections = create<ConnectionsState>((set, get) => ({
  items: [],
  loading: false,
  loaded: false,
  error: null,
  selectedId: savedSelection(),

  async load(client) {
    set({ loading: true, error: null });
    try {
      const items = await client.listConnections();
      const { selectedId } = get();
      const keep = items.some((c) => c.id === selectedId);
      const fallback = items.find((c) => c.status === 'online') ?? items[0];
      set({ items, loading: false, loaded: true, selectedId: keep ? selectedId : (fallback?.id ?? null) });
    } catch (err) {
      set({ loading: false, loaded: true, error: errorMessage(err) });
    }
  },

  upsert(c) {
    set((s) => {
      const i = s.items.findIndex((x) => x.id === c.id);
      if (c.status === 'stopped') return { items: s.items.filter((x) => x.id !== c.id) };
      if (i === -1) return { items: [...s.items, c] };
      const items = s.items.slice();
      items[i] = c;
      return { items };
    });
  },

  remove(id) {
    set((s) => ({ items: s.items.filter((x) => x.id !== id), selectedId: s.selectedId === id ? null : s.selectedId }));
  },

  select(id) {
    try {
      if (id) localStorage.setItem(SELECTED_KEY, id);
    } catch {
      /* ignore */
    }
    set({ selectedId: id });
  },

  applyStatus(id, status) {
    set((s) => {
      if (status === 'stopped') return { items: s.items.filter((x) => x.id !== id) };
      const i = s.items.findIndex((x) => x.id === id);
      if (i === -1) return {};
      const items = s.items.slice();
      items[i] = { ...items[i]!, status, updatedAt: new Date().toISOString() };
      return { items };
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
