/** Message fixtures for tests (and benchmarks) that write the store directly. */
import { EMPTY_CONTENT, messageIdOf, type StoredMessage } from '../../service/db/messages.ts';

/** The account of the fixtures' own messages (the sandbox's first phone). */
const OWN_JID = '15550100@s.whatsapp.net';

/**
 * A text message in 1:1 chat `chatId` with key id `keyId` (`timestamp` in Unix seconds): the contact's (sender =
 * the chat, pushName "Alice", no ack) or, with `fromMe`, the account's own (ack 2); `over` replaces any field.
 */
export function storedText(chatId: string, keyId: string, timestamp: number, text: string, fromMe = false, over: Partial<StoredMessage> = {}): StoredMessage {
  return {
    id: messageIdOf(fromMe, chatId, keyId),
    keyId,
    chatId,
    timestamp,
    fromMe,
    senderJid: fromMe ? OWN_JID : chatId,
    senderPushName: fromMe ? '' : 'Alice',
    type: 'text',
    kind: 'text',
    rawType: null,
    ...EMPTY_CONTENT,
    text,
    quotedMessageId: null,
    media: null,
    ack: fromMe ? 2 : null,
    raw: null,
    ...over,
  };
}

/** An incoming text message in `chatId` (a 1:1 chat, so the sender is the chat) with key id `keyId`. */
export const incomingText = (chatId: string, keyId: string, timestamp: number, text: string): StoredMessage =>
  storedText(chatId, keyId, timestamp, text);
