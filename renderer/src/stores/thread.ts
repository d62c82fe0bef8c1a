/**
 * The open chat's messages, oldest first, paged backwards with `nextBefore`; `historyStartsAt` once the end of
 * the synced history is reached. Live messages, acks, reactions, edits and deletes for everyone are merged in by id.
 */
import { create } from 'zustand';
import type { ApiClient } from '../api/client.ts';
import { errorMessage } from '../api/client.ts';
import type { Message, MessagePage } from '../api/types.ts';

export const PAGE_SIZE = 30;

interface ThreadState {
  connectionId: string | null;
  chatId: string | null;
  messages: Message[];
  nextBefore: string | null;
  historyStartsAt: number | null;
  /** No older page left: the marker is shown. */
  reachedStart: boolean;
  loading: boolean;
  loadingOlder: boolean;
  error: string | null;
  /** Cursor of newer messages when the thread was opened at a message (`around`); null at the newest. */
  nextAfter: string | null;
  loadingNewer: boolean;
  /** The message a search result opened the thread at: scrolled to and highlighted. */
  highlightId: string | null;
  /** Set before the thread opens: openChat of that chat loads the page around this message (until cleared). */
  jump: { connectionId: string; chatId: string; messageId: string } | null;
  jumpTo(connectionId: string, chatId: string, messageId: string): void;
  loadNewer(client: ApiClient): Promise<void>;
  replyTo: Message | null;
  editing: Message | null;
  typing: boolean;
  openChat(client: ApiClient, connectionId: string, chatId: string): Promise<void>;
  close(): void;
  loadOlder(client: ApiClient): Promise<void>;
  /** Adds or replaces a message (live event or send result). */
  upsert(m: Message): void;
  /** Drops a message from the open thread (an optimistic bubble replaced by the stored message). */
  remove(id: string): void;
  applyAck(id: string, ack: number): void;
  /** One sender's reaction ("" removes it). */
  applyReaction(messageId: string, senderJid: string, emoji: string): void;
  applyEdit(messageId: string, text: string): void;
  /**
   * A message deleted for everyone: shown deleted as the API returns it (kind `revoked`, type `text`, no text, media,
   * structured content or reactions); a reply or an edit of it in the composer is dropped.
   */
  applyRevoke(messageId: string): void;
  setReplyTo(m: Message | null): void;
  setEditing(m: Message | null): void;
  setTyping(on: boolean): void;
}

function sortAsc(list: Message[]): Message[] {
  return list.slice().sort((a, b) => a.timestamp - b.timestamp);
}

export const useThread = create<ThreadState>((set, get) => ({
  connectionId: null,
  chatId: null,
  messages: [],
  nextBefore: null,
  historyStartsAt: null,
  reachedStart: false,
  loading: false,
  loadingOlder: false,
  error: null,
  replyTo: null,
  editing: null,
  typing: false,
  nextAfter: null,
  loadingNewer: false,
  highlightId: null,
  jump: null,

  jumpTo(connectionId, chatId, messageId) {
    set({ jump: { connectionId, chatId, messageId } });
  },

  async loadNewer(client) {
    const { connectionId, chatId, nextAfter, loadingNewer } = get();
    if (!connectionId || !chatId || !nextAfter || loadingNewer) return;
    set({ loadingNewer: true });
    try {
      const page = (await client.messagesAt(connectionId, chatId, { limit: PAGE_SIZE, after: nextAfter })) as MessagePage & { nextAfter?: string | null };
      if (get().chatId !== chatId) return;
      const ids = new Set(get().messages.map((m) => m.id));
      const newer = [...page.messages].reverse().filter((m) => !ids.has(m.id));
      set((s) => ({ messages: sortAsc([...s.messages, ...newer]), nextAfter: page.nextAfter ?? null, loadingNewer: false }));
    } catch (err) {
      set({ loadingNewer: false, error: errorMessage(err) });
    }
  },

  async openChat(client, connectionId, chatId) {
    const jump = get().jump;
    const around = jump && jump.connectionId === connectionId && jump.chatId === chatId ? jump.messageId : null;
    // The jump stays set while its chat is reopened (a remount of the thread); opening another chat ends it.
    set({
      ...(jump && !around && { jump: null }),
      highlightId: around,
      nextAfter: null,
      loadingNewer: false,
      connectionId,
      chatId,
      messages: [],
      nextBefore: null,
      historyStartsAt: null,
      reachedStart: false,
      loading: true,
      error: null,
      replyTo: null,
      editing: null,
      typing: false,
    });
    try {
      const page: MessagePage & { nextAfter?: string | null } = around
        ? await client.messagesAt(connectionId, chatId, { limit: PAGE_SIZE, around })
        : await client.messages(connectionId, chatId, { limit: PAGE_SIZE });
      if (get().chatId !== chatId || get().connectionId !== connectionId) return;
      set({ nextAfter: page.nextAfter ?? null });
      const known = new Map(get().messages.map((m) => [m.id, m])); // live messages that arrived meanwhile
      for (const m of [...page.messages].reverse()) known.set(m.id, m);
      set({
        messages: sortAsc([...known.values()]),
        nextBefore: page.nextBefore,
        historyStartsAt: page.historyStartsAt,
        reachedStart: page.nextBefore === null,
        loading: false,
      });
    } catch (err) {
      set({ loading: false, error: errorMessage(err) });
    }
  },

  close() {
    set({ connectionId: null, chatId: null, messages: [], nextBefore: null, nextAfter: null, highlightId: null, historyStartsAt: null, reachedStart: false, replyTo: null, editing: null });
  },

  async loadOlder(client) {
    const { connectionId, chatId, nextBefore, loadingOlder } = get();
    if (!connectionId || !chatId || !nextBefore || loadingOlder) return;
    set({ loadingOlder: true });
    try {
      const page = await client.messages(connectionId, chatId, { limit: PAGE_SIZE, before: nextBefore });
      if (get().chatId !== chatId) return;
      const ids = new Set(get().messages.map((m) => m.id));
      const older = [...page.messages].reverse().filter((m) => !ids.has(m.id));
      set((s) => ({
        messages: sortAsc([...older, ...s.messages]),
        nextBefore: page.nextBefore,
        historyStartsAt: page.historyStartsAt,
        reachedStart: page.nextBefore === null,
        loadingOlder: false,
      }));
    } catch (err) {
      set({ loadingOlder: false, error: errorMessage(err) });
    }
  },

  upsert(m) {
    if (m.chatId !== get().chatId) return;
    set((s) => {
      // The stored message of an optimistic bubble (it may come over the stream before the API answers).
      const base = m.fromMe && !m.local ? s.messages.filter((x) => !(x.local?.state === 'pending' && x.text === m.text)) : s.messages;
      const i = base.findIndex((x) => x.id === m.id);
      if (i === -1) return { messages: sortAsc([...base, m]) };
      const messages = base.slice();
      const prev = messages[i]!;
      messages[i] = { ...prev, ...m, reactions: m.reactions ?? prev.reactions, ack: Math.max(prev.ack ?? 0, m.ack ?? 0) || m.ack };
      return { messages };
    });
  },

  remove(id) {
    set((s) => ({ messages: s.messages.filter((m) => m.id !== id) }));
  },

  applyAck(id, ack) {
    set((s) => ({ messages: s.messages.map((m) => (m.id === id && (m.ack ?? 0) < ack ? { ...m, ack } : m)) }));
  },

  applyReaction(messageId, senderJid, emoji) {
    set((s) => ({
      messages: s.messages.map((m) => {
        if (m.id !== messageId) return m;
        const reactions = (m.reactions ?? []).filter((r) => r.senderJid !== senderJid);
        if (emoji) reactions.push({ senderJid, emoji, timestamp: Math.floor(Date.now() / 1000) });
        return { ...m, reactions };
      }),
    }));
  },

  applyEdit(messageId, text) {
    set((s) => ({ messages: s.messages.map((m) => (m.id === messageId ? { ...m, text, edited: true } : m)) }));
  },

  applyRevoke(messageId) {
    set((s) => ({
      messages: s.messages.map((m) =>
        m.id === messageId
          ? {
              ...m,
              kind: 'revoked',
              type: 'text',
              rawType: null,
              text: '',
              media: null,
              location: null,
              contacts: null,
              poll: null,
              selection: null,
              album: null,
              reactions: [],
              edited: false,
            }
          : m,
      ),
      ...(s.replyTo?.id === messageId && { replyTo: null }),
      ...(s.editing?.id === messageId && { editing: null }),
    }));
  },

  setReplyTo(m) {
    set({ replyTo: m, editing: null });
  },
  setEditing(m) {
    set({ editing: m, replyTo: null });
  },
  setTyping(on) {
    set({ typing: on });
  },
}));

/** Reactions grouped for display: emoji → count, in first-seen order. */
export function groupReactions(m: Message): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const r of m.reactions ?? []) if (r.emoji) counts.set(r.emoji, (counts.get(r.emoji) ?? 0) + 1);
  return [...counts];
}

/** Own text messages can be edited for about 15 minutes after sending (interface-spec §4.3 rule 4). */
export const EDIT_WINDOW_SECONDS = 15 * 60;

export function canEdit(m: Message, nowMs: number = Date.now()): boolean {
  return m.fromMe && m.type === 'text' && nowMs / 1000 - m.timestamp < EDIT_WINDOW_SECONDS;
}
