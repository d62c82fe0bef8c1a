/**
 * Routes the event stream into the stores: connection statuses, new messages (chat list + open thread), acks,
 * reactions, edits and deletes for everyone (open thread + the chat's preview), incoming calls (a notification with
 * Reject); every frame also goes to the event monitor.
 */
import type { ApiClient } from './api/client.ts';
import { EventSocket } from './api/event-socket.ts';
import { endCall, showIncomingCall } from './calls.tsx';
import type { ConnectionStatus, EventFrame, MediaInfo, Message } from './api/types.ts';
import { useChats } from './stores/chats.ts';
import { useConnections } from './stores/connections.ts';
import { useEvents } from './stores/events.ts';
import { useThread } from './stores/thread.ts';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A `message` / `message.sent` payload as a Message record. */
export function messageFromPayload(p: Record<string, unknown>): Message | undefined {
  const id = str(p.id);
  const chatId = str(p.chatId);
  if (!id || !chatId) return undefined;
  return {
    id,
    chatId,
    timestamp: typeof p.timestamp === 'number' ? p.timestamp : Math.floor(Date.now() / 1000),
    fromMe: p.fromMe === true,
    senderJid: str(p.senderJid) ?? str(p.from) ?? '',
    senderPushName: str(p.senderPushName) ?? str(p.pushName) ?? '',
    type: (str(p.type) ?? 'text') as Message['type'],
    kind: (str(p.kind) ?? str(p.type) ?? 'text') as Message['kind'],
    rawType: str(p.rawType) ?? null,
    text: str(p.body) ?? str(p.text) ?? '',
    location: (p.location as Message['location'] | undefined) ?? null,
    contacts: (p.contacts as Message['contacts'] | undefined) ?? null,
    poll: (p.poll as Message['poll'] | undefined) ?? null,
    selection: (p.selection as Message['selection'] | undefined) ?? null,
    album: (p.album as Message['album'] | undefined) ?? null,
    albumId: str(p.albumId) ?? null,
    quotedMessageId: str(p.quotedMessageId) ?? null,
    media: (p.media as MediaInfo | undefined) ?? null,
    isForwarded: p.isForwarded === true,
    ack: typeof p.ack === 'number' ? p.ack : null,
    mentions: Array.isArray(p.mentions) ? p.mentions.filter((m): m is string => typeof m === 'string') : [],
    editedAt: typeof p.editedAt === 'number' ? p.editedAt : null,
    reactions: Array.isArray(p.reactions) ? (p.reactions as Message['reactions']) : [],
  };
}

export function handleFrame(frame: EventFrame, client: ApiClient): void {
  useEvents.getState().add([frame]);
  const p = frame.payload ?? {};
  switch (frame.event) {
    case 'session.status': {
      const status = str(p.status) as ConnectionStatus | undefined;
      if (!status) return;
      const conns = useConnections.getState();
      const known = conns.items.some((c) => c.id === frame.connectionId);
      // Applied in arrival (seq) order; an API answer requested before this event cannot overwrite it.
      conns.applyStatus(frame.connectionId, status, str(p.reason) ?? null, frame.timestamp);
      // A connection not listed yet, or one that just linked (its phoneNumber appears): read the record.
      if ((!known && status !== 'stopped') || status === 'connected' || status === 'online') {
        void conns.track(client.getConnection(frame.connectionId)).catch(() => undefined);
      }
      return;
    }
    case 'message':
    case 'message.sent': {
      const m = messageFromPayload(p);
      if (!m) return;
      const preview = { ...m, pushName: m.fromMe ? undefined : m.senderPushName };
      const known = useChats.getState().applyMessage(frame.connectionId, preview);
      if (!known) {
        const chats = useChats.getState();
        if (chats.connectionId === frame.connectionId) void chats.load(client, frame.connectionId);
      }
      const thread = useThread.getState();
      if (thread.connectionId === frame.connectionId && thread.chatId === m.chatId) {
        thread.upsert(m);
        if (!m.fromMe && typeof document !== 'undefined' && document.visibilityState === 'visible') {
          void client.markRead(frame.connectionId, m.chatId).catch(() => undefined);
        }
      }
      return;
    }
    case 'message.ack': {
      const id = str(p.id);
      if (id && typeof p.ack === 'number') useThread.getState().applyAck(id, p.ack);
      return;
    }
    case 'message.reaction': {
      const id = str(p.id) ?? str(p.messageId);
      const emoji = p.removed === true ? '' : (str(p.emoji) ?? '');
      if (id) useThread.getState().applyReaction(id, str(p.from) ?? (p.fromMe ? 'me' : 'unknown'), emoji);
      return;
    }
    case 'presence.update': {
      const chatId = str(p.chatId) ?? str(p.id);
      const presence = str(p.presence) ?? str(p.status);
      const thread = useThread.getState();
      if (chatId && thread.connectionId === frame.connectionId && thread.chatId === chatId) thread.setTyping(presence === 'composing' || presence === 'recording');
      return;
    }
    case 'call.received':
      showIncomingCall(client, frame.connectionId, p);
      return;
    case 'call.ended':
      endCall(frame.connectionId, p);
      return;
    case 'message.edited': {
      const id = str(p.id) ?? str(p.messageId);
      const text = str(p.body) ?? str(p.text);
      if (!id || text === undefined) return;
      const chatId = str(p.chatId);
      if (chatId) useChats.getState().applyEdit(frame.connectionId, chatId, id, text);
      const thread = useThread.getState();
      if (thread.connectionId === frame.connectionId) thread.applyEdit(id, text);
      return;
    }
    case 'message.revoked': {
      const id = str(p.id);
      if (!id) return;
      const chatId = str(p.chatId);
      if (chatId) useChats.getState().applyRevoke(frame.connectionId, chatId, id);
      const thread = useThread.getState();
      if (thread.connectionId === frame.connectionId) thread.applyRevoke(id);
      return;
    }
  }
}

/** Opens the stream for a signed-in console; returns a stop function. */
export function startLive(client: ApiClient, onResync: () => void, onUnauthorized?: () => void): () => void {
  const socket = new EventSocket({
    url: (after) => client.wsUrl(after),
    onFrame: (f) => handleFrame(f, client),
    onState: (s) => useEvents.getState().setSocket(s),
    onResync,
    ...(onUnauthorized && { onUnauthorized }),
  });
  socket.start();
  return () => socket.stop();
}
