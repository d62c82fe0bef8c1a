/**
 * Payloads of message events (`message`, `message.sent`, `message.waiting`), shared by the WebSocket stream and
 * webhooks; their schema is events/payloads.ts MessagePayloadSchema (also in the OpenAPI document).
 * Spec §6.1/§6.2: `message` carries `id`, `from`, `body`, `timestamp`, and for media `hasMedia: true` plus
 * `media: { url, mimetype }`. We add `to`, `chatId`, `fromMe`, `type`, `kind`, `pushName`, `quotedMessageId`, the
 * Message's `senderJid`/`senderPushName` (in groups the participant who wrote it) and `mentions`, `isForwarded: true` on forwarded messages, and the structured
 * content fields that are set (location, contacts, poll, selection, album, albumId; issue #13).
 */
import type { MessageCore } from '../db/messages.ts';
import type { EventPayload } from '../events/payloads.ts';

/** The payload of a message event (events/payloads.ts MessagePayloadSchema). */
export type MessageEventPayload = EventPayload<'message'>;

/** Builds the payload of a message event for Message `m`; `ownJid` is the `to` of incoming 1:1 messages. */
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
  if (m.location != null) payload.location = m.location;
  if (m.contacts != null) payload.contacts = m.contacts;
  if (m.poll != null) payload.poll = m.poll;
  if (m.selection != null) payload.selection = m.selection;
  if (m.album != null) payload.album = m.album;
  if (m.albumId != null) payload.albumId = m.albumId;
  if (m.isForwarded) payload.isForwarded = true;
  return payload;
}
