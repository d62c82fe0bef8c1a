/** Message fixtures for tests that write the store directly. */
import { EMPTY_CONTENT, messageIdOf, type StoredMessage } from '../../service/db/messages.ts';

/** An incoming text message in `chatId` (a 1:1 chat, so the sender is the chat) with key id `keyId`. */
export function incomingText(chatId: string, keyId: string, timestamp: number, text: string): StoredMessage {
  return {
    id: messageIdOf(false, chatId, keyId),
    keyId,
    chatId,
    timestamp,
    fromMe: false,
    senderJid: chatId,
    senderPushName: 'Alice',
    type: 'text',
            kind: 'text',
            rawType: null,
            ...EMPTY_CONTENT,
    text,
    quotedMessageId: null,
    media: null,
    ack: null,
    raw: null,
  };
}
