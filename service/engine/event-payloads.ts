/**
 * Payloads of message events (`message`, `message.sent`), shared by the WebSocket stream and webhooks.
 * Spec §6.1/§6.2: `message` carries `id`, `from`, `body`, `timestamp`, and for media `hasMedia: true` plus
 * `media: { url, mimetype }`. We add `to`, `chatId`, `fromMe`, `type`, `pushName` and `quotedMessageId`, and
 * `isForwarded: true` on forwarded messages.
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
  pushName: string;
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
    pushName: m.senderPushName,
    quotedMessageId: m.quotedMessageId,
    hasMedia: m.media !== null,
  };
  if (m.media) payload.media = { ...m.media };
  if (m.isForwarded) payload.isForwarded = true;
  return payload;
}
