/**
 * Chats of the selected connection: the list (newest first) paged from the server as the operator scrolls
 * (PAGE_SIZE at a time), the filter (`q`, answered by the server over every chat), the unread-only switch, the
 * open chat, live bumps, and previews that follow live edits and deletes of their message.
 */
import { create } from 'zustand';
import type { ApiClient } from '../api/client.ts';
import { errorMessage } from '../api/client.ts';
import type { Chat, Message } from '../api/types.ts';

interface ChatsState {
  connectionId: string | null;
  items: Chat[];
  unreadOnly: boolean;
  /** The server-side filter (name, contact name or number). */
  query: string;
  /** More chats exist beyond `items` (the last page was full). */
  hasMore: boolean;
  loadingMore: boolean;
  loading: boolean;
  error: string | null;
  openChatId: string | null;
  load(client: ApiClient, connectionId: string): Promise<void>;
  setUnreadOnly(client: ApiClient, on: boolean): Promise<void>;
  setQuery(client: ApiClient, query: string): Promise<void>;
  /** The next page, appended (no-op while one is loading or when none is left). */
  loadMore(client: ApiClient): Promise<void>;
  open(chatId: string | null): void;
  /** A message seen live (incoming or sent): becomes its chat's preview, moves the chat to the top, counts unread. */
  applyMessage(connectionId: string, m: Pick<Message, 'id' | 'chatId' | 'kind' | 'text' | 'timestamp' | 'fromMe'> & { pushName?: string }): boolean;
  /** A message edited live: its chat's preview takes the new text when it is that message (`lastMessage.id`). */
  applyEdit(connectionId: string, chatId: string, messageId: string, text: string): void;
  /** A message deleted for everyone live: its chat's preview loses its text and shows it deleted when it is that message. */
  applyRevoke(connectionId: string, chatId: string, messageId: string): void;
  markReadLocally(chatId: string): void;
}

/** Chats per page of the list. */
export const PAGE_SIZE = 100;

/** Replaces the preview of `chatId` when it is the message `messageId`; the list's order stays (the time is the same). */
function updatePreview(connectionId: string, chatId: string, messageId: string, change: (last: Chat['lastMessage']) => Chat['lastMessage']): void {
  const s = useChats.getState();
  if (s.connectionId !== connectionId) return;
  const i = s.items.findIndex((c) => c.id === chatId && c.lastMessage.id === messageId);
  if (i === -1) return;
  const items = s.items.slice();
  items[i] = { ...items[i]!, lastMessage: change(items[i]!.lastMessage) };
  useChats.setState({ items });
}

export const useChats = create<ChatsState>((set, get) => ({
  connectionId: null,
  items: [],
  unreadOnly: false,
  query: '',
  hasMore: false,
  loadingMore: false,
  loading: false,
  error: null,
  openChatId: null,

  async load(client, connectionId) {
    const switching = get().connectionId !== connectionId;
    set({ loading: true, error: null, connectionId, ...(switching && { items: [], openChatId: null, query: '' }) });
    const { unreadOnly, query } = get();
    try {
      const items = await client.chats(connectionId, { limit: PAGE_SIZE, unreadOnly, q: query });
      const s = get();
      if (s.connectionId === connectionId && s.query === query && s.unreadOnly === unreadOnly) {
        set({ items, loading: false, hasMore: items.length === PAGE_SIZE });
      }
    } catch (err) {
      set({ loading: false, error: errorMessage(err) });
    }
  },

  async setQuery(client, query) {
    set({ query });
    const cid = get().connectionId;
    if (cid) await get().load(client, cid);
  },

  async loadMore(client) {
    const { connectionId, items, hasMore, loadingMore, loading, unreadOnly, query } = get();
    if (!connectionId || !hasMore || loadingMore || loading) return;
    set({ loadingMore: true });
    try {
      const page = await client.chats(connectionId, { limit: PAGE_SIZE, offset: items.length, unreadOnly, q: query });
      const s = get();
      if (s.connectionId !== connectionId || s.query !== query || s.unreadOnly !== unreadOnly) return set({ loadingMore: false });
      const known = new Set(s.items.map((c) => c.id));
      set({ items: [...s.items, ...page.filter((c) => !known.has(c.id))], hasMore: page.length === PAGE_SIZE, loadingMore: false });
    } catch (err) {
      set({ loadingMore: false, error: errorMessage(err) });
    }
  },

  async setUnreadOnly(client, on) {
    set({ unreadOnly: on });
    const cid = get().connectionId;
    if (cid) await get().load(client, cid);
  },

  open(chatId) {
    set({ openChatId: chatId });
    if (chatId) get().markReadLocally(chatId);
  },

  applyMessage(connectionId, m) {
    const s = get();
    if (s.connectionId !== connectionId) return true;
    const i = s.items.findIndex((c) => c.id === m.chatId);
    const isOpen = s.openChatId === m.chatId;
    const prev = i === -1 ? undefined : s.items[i]!;
    if (!prev && s.unreadOnly && (m.fromMe || isOpen)) return true;
    const chat: Chat = {
      id: m.chatId,
      name: prev?.name ?? m.pushName ?? m.chatId.split('@')[0]!,
      isGroup: prev?.isGroup ?? m.chatId.endsWith('@g.us'),
      lastMessage: { body: m.text, timestamp: m.timestamp, fromMe: m.fromMe, id: m.id, kind: m.kind },
      unread: m.fromMe || isOpen ? (prev?.unread ?? 0) : (prev?.unread ?? 0) + 1,
    };
    const rest = s.items.filter((c) => c.id !== m.chatId);
    set({ items: [chat, ...rest] });
    return prev !== undefined;
  },

  applyEdit(connectionId, chatId, messageId, text) {
    updatePreview(connectionId, chatId, messageId, (last) => ({ ...last, body: text }));
  },

  applyRevoke(connectionId, chatId, messageId) {
    updatePreview(connectionId, chatId, messageId, (last) => ({ ...last, body: '', kind: 'revoked' }));
  },

  markReadLocally(chatId) {
    set((s) => ({
      items: s.unreadOnly ? s.items : s.items.map((c) => (c.id === chatId ? { ...c, unread: 0 } : c)),
    }));
  },
}));
