/**
 * Opening a chat at one message (a search hit), from anywhere in the console: the top-bar search and the chat
 * list's message hits both go through `openAtMessage`. The thread then loads the page `around` the message,
 * scrolls to it and highlights it (useThread's `jump`, Thread.tsx).
 */
import type { ApiClient } from '../api/client.ts';
import { useChats } from './chats.ts';
import { useConnections } from './connections.ts';
import { useNav } from './nav.ts';
import { useThread } from './thread.ts';

/** Shows the Chats view of `connectionId` with `chatId` open at `messageId`, highlighted. */
export function openAtMessage(client: ApiClient, connectionId: string, chatId: string, messageId: string): void {
  useThread.getState().jumpTo(connectionId, chatId, messageId);
  useConnections.getState().select(connectionId);
  useNav.getState().go('chats');
  // Switch the chat list first (loading another connection's chats closes the open chat), then open the chat.
  if (useChats.getState().connectionId !== connectionId) void useChats.getState().load(client, connectionId);
  const chats = useChats.getState();
  if (chats.openChatId === chatId && chats.connectionId === connectionId) {
    void useThread.getState().openChat(client, connectionId, chatId); // same chat: reopen at the message
  } else chats.open(chatId);
}
