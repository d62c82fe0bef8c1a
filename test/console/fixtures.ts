/** Console-side fixtures: messages as the API renders them (renderer/src/api/types.ts). */
import type { Message } from '../../renderer/src/api/types.ts';

/** An incoming text message from Alice in 1:1 chat `chatId` (the sender is the chat); `over` replaces any field. */
export const textMessage = (chatId: string, keyId: string, text: string, timestamp: number, over: Partial<Message> = {}): Message => ({
  id: `false_${chatId}_${keyId}`,
  chatId,
  timestamp,
  fromMe: false,
  senderJid: chatId,
  senderPushName: 'Alice',
  type: 'text',
  kind: 'text',
  rawType: null,
  text,
  location: null,
  contacts: null,
  poll: null,
  selection: null,
  album: null,
  albumId: null,
  quotedMessageId: null,
  media: null,
  ack: null,
  mentions: [],
  isForwarded: false,
  editedAt: null,
  reactions: [],
  ...over,
});
