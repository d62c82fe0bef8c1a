/** Chats of the selected connection: the list (newest first), the unread-only filter, the open chat, live bumps. */
import { create } from 'zustand';
import type { ApiClient } from '../api/client.ts';
import { errorMessage } from '../api/client.ts';
import type { Chat, Message } from '../api/types.ts';

interface ChatsState {
  connectionId: string | null;
  items: Chat[];
  unreadOnly: boolean;
  loading: boolean;
  error: string | null;
  openChatId: string | null;
  load(client: ApiClient, connectionId: string): Promise<void>;
  setUnreadOnly(client: ApiClient, on: boolean): Promise<void>;
  open(chatId: string | null): void;
  /** A message seen live (incoming or sent): moves its chat to the top, counts unread. */
  applyMessage(connectionId: string, m: Pick<Message, 'chatId' | 'text' | 'timestamp' | 'fromMe'> & { pushName?: string }): boolean;
  markReadLocally(chatId: string): void;
}

export const useChats = create<ChatsState>((set, get) => ({
  connectionId: null,
  items: [],
  unreadOnly: false,
  loading: false,
  error: null,
  openChatId: null,

  async load(client, connectionId) {
    const switching = get().connectionId !== connectionId;
    set({ loading: true, error: null, connectionId, ...(switching && { items: [], openChatId: null }) });
    try {
      const items = await client.chats(connectionId, { limit: 200, unreadOnly: get().unreadOnly });
      if (get().connectionId === connectionId) set({ items, loading: false });
    } catch (err) {
      set({ loading: false, error: errorMessage(err) });
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
      lastMessage: { body: m.text, timestamp: m.timestamp, fromMe: m.fromMe },
      unread: m.fromMe || isOpen ? (prev?.unread ?? 0) : (prev?.unread ?? 0) + 1,
    };
    const rest = s.items.filter((c) => c.id !== m.chatId);
    set({ items: [chat, ...rest] });
    return prev !== undefined;
  },

  markReadLocally(chatId) {
    set((s) => ({
      items: s.unreadOnly ? s.items : s.items.map((c) => (c.id === chatId ? { ...c, unread: 0 } : c)),
    }));
  },
}));
