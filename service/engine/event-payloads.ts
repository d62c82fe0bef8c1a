/**
 * Payloads of message events (`message`, `message.sent`), shared by the WebSocket stream and webhooks.
 * Spec §6.1/§6.2: `message` carries `id`, `from`, `body`, `timestamp`, and for media `hasMedia: true` plus
 * `media: { url, mimetype }`. We add `to`, `chatId`, `fromMe`, `type`, `kind`, `pushName`, `quotedMessageId`, the
 * Message's `senderJid`/`senderPushName` (in groups the participant who wrote it) and `mentions`, `isForwarded: true` on forwarded messages, and the structured
 * content fields that are set (location, contacts, poll, selection, album, albumId; issue #13).
 */
import type { MessageCore } from '../db/messages.ts';

export interface MessageEventPayload {
  [key: string]: unknown;
  id: string;
  chatId: string;
  /** Sender JID (the contact for incoming messages, own JID for sent ones). */
  from: string;
  /** Recipient: own JID for incoming 1:1 messages, the chat for sent ones. */
  to: string;
  body: string;
  /** Unix seconds. */
  timestamp: number;
  fromMe: boolean;
  type: string;
  kind: string;
  rawType?: string;
  pushName: string;
  /** The sender as on the Message: in groups the participant (phone-number JID where known, else the LID). */
  senderJid: string;
  senderPushName: string;
  /** JIDs the message mentions. */
  mentions: string[];
  quotedMessageId: string | null;
  hasMedia: boolean;
  media?: { url: string; mimetype: string; filename: string | null; size: number | null };
  /** Present (true) only on forwarded messages. */
  isForwarded?: true;
}

export function eventPayloadOf(m: MessageCore & { isForwarded?: boolean }, ownJid?: string | null): MessageEventPayload {
  const payload: MessageEventPayload = {
    id: m.id,
    chatId: m.chatId,
    from: m.senderJid,
    to: m.fromMe || m.chatId.endsWith('@g.us') ? m.chatId : (ownJid ?? m.chatId),
    body: m.text,
    timestamp: m.timestamp,
    fromMe: m.fromMe,
    type: m.type,
    kind: m.kind,
    pushName: m.senderPushName,
    senderJid: m.senderJid,
    senderPushName: m.senderPushName,
    mentions: m.mentions ?? [],
    quotedMessageId: m.quotedMessageId,
    hasMedia: m.media !== null,
  };
  if (m.media) payload.media = { ...m.media };
  if (m.rawType) payload.rawType = m.rawType;
  for (const k of ['location', 'contacts', 'poll', 'selection', 'album', 'albumId'] as const) {
    if (m[k] != null) payload[k] = m[k];
  }
  if (m.isForwarded) payload.isForwarded = true;
  return payload;
}
