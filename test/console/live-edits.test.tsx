// @vitest-environment jsdom
/**
 * Edits and deletes for everyone arriving on the event stream (issue 25 item 2, issue 28 item 4), routed by
 * `handleFrame` into the stores and rendered by the console's own components: the open thread's bubble shows the
 * new text, or "This message was deleted" without its text and reactions; the chat list's preview follows only when
 * the message is the chat's last one (`lastMessage.id`); frames of another connection change nothing.
 */
import { MantineProvider } from '@mantine/core';
import { act, cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../renderer/src/api/client.ts';
import type { Chat, EventFrame, Message } from '../../renderer/src/api/types.ts';
import { handleFrame } from '../../renderer/src/live.ts';
import { useChats } from '../../renderer/src/stores/chats.ts';
import { useSession } from '../../renderer/src/stores/session.ts';
import { useThread } from '../../renderer/src/stores/thread.ts';
import { ChatPreview } from '../../renderer/src/views/ChatsView.tsx';
import { MessageBubble } from '../../renderer/src/views/MessageBubble.tsx';
import { installDomShims } from './dom-shims.tsx';
import { textMessage } from './fixtures.ts';

const ALICE = '15550101@s.whatsapp.net';
const BOB = '15550102@s.whatsapp.net';
const client = new ApiClient({ baseUrl: 'http://127.0.0.1:1/api', token: 'wh_x' });

beforeAll(() => installDomShims());
afterEach(() => cleanup());

const msg = (chatId: string, key: string, text: string, over: Partial<Message> = {}): Message =>
  textMessage(chatId, key, text, 1_795_000_000, over);
const chat = (id: string, last: Message): Chat => ({
  id,
  name: id.split('@')[0]!,
  isGroup: false,
  lastMessage: { body: last.text, timestamp: last.timestamp, fromMe: last.fromMe, id: last.id, kind: last.kind },
  unread: 0,
});

const older = msg(ALICE, 'A1', 'see you at nine');
const last = msg(ALICE, 'A2', 'my door code is 4711', { reactions: [{ senderJid: BOB, emoji: '👍', timestamp: 1_795_000_001 }] });
const bobs = msg(BOB, 'B1', 'hello from bob');

let seq = 0;
const frame = (event: string, payload: Record<string, unknown>, connectionId = 'c1'): EventFrame => ({
  event,
  connectionId,
  payload,
  timestamp: new Date().toISOString(),
  seq: ++seq,
});
const deliver = (f: EventFrame) => act(() => handleFrame(f, client));

/** The chat list's previews and the open thread, as the console renders them from the stores. */
function Live() {
  const items = useChats((s) => s.items);
  const messages = useThread((s) => s.messages);
  return (
    <>
      {items.map((c) => (
        <div key={c.id} data-testid={`chat-${c.id}`}>
          <ChatPreview last={c.lastMessage} />
        </div>
      ))}
      {messages.map((m) => (
        <MessageBubble key={m.id} message={m} quoted={undefined} connectionId="c1" />
      ))}
    </>
  );
}

const previewOf = (chatId: string) => within(screen.getByTestId(`chat-${chatId}`)).getByTestId('chat-preview');
const bubbleOf = (m: Message) => document.querySelector<HTMLElement>(`[data-testid="message"][data-message-id="${m.id}"]`)!;

beforeEach(() => {
  useSession.setState({ client, phase: 'ready' });
  useChats.setState({ connectionId: 'c1', items: [chat(ALICE, last), chat(BOB, bobs)], openChatId: ALICE, unreadOnly: false });
  useThread.setState({ connectionId: 'c1', chatId: ALICE, messages: [older, last], replyTo: null, editing: null });
  render(
    <MantineProvider>
      <Live />
    </MantineProvider>,
  );
});

describe('live edits and deletes for everyone', () => {
  it('an edit of an older message changes its bubble only; one of the last message the chat preview too', async () => {
    await deliver(frame('message.edited', { id: older.id, chatId: ALICE, from: ALICE, fromMe: false, body: 'see you at ten', previousBody: older.text, editedAt: 1 }));
    expect(within(bubbleOf(older)).getByText('see you at ten')).toBeTruthy();
    expect(within(bubbleOf(older)).getByText('edited')).toBeTruthy();
    expect(previewOf(ALICE).textContent).toBe('my door code is 4711');

    await deliver(frame('message.edited', { id: last.id, chatId: ALICE, from: ALICE, fromMe: false, body: 'my door code is 0815', previousBody: last.text, editedAt: 2 }));
    expect(within(bubbleOf(last)).getByText('my door code is 0815')).toBeTruthy();
    expect(previewOf(ALICE).textContent).toBe('my door code is 0815');
    expect(previewOf(BOB).textContent).toBe('hello from bob');
  });

  it('a delete of the last message: the bubble says deleted, without its text or reactions, and so does the preview', async () => {
    expect(within(bubbleOf(last)).getAllByTestId('reaction')).toHaveLength(1);
    useThread.getState().setReplyTo(last);

    await deliver(frame('message.revoked', { id: older.id, chatId: ALICE, from: ALICE, fromMe: false }));
    expect(within(bubbleOf(older)).getByTestId('revoked').textContent).toBe('This message was deleted');
    expect(previewOf(ALICE).textContent).toBe('my door code is 4711'); // not the last message

    await deliver(frame('message.revoked', { id: last.id, chatId: ALICE, from: ALICE, fromMe: false }));
    const bubble = bubbleOf(last);
    expect(within(bubble).getByTestId('revoked').textContent).toBe('This message was deleted');
    expect(bubble.textContent).not.toContain('4711');
    expect(within(bubble).queryAllByTestId('reaction')).toHaveLength(0);
    expect(previewOf(ALICE).textContent).toBe('This message was deleted');
    expect(previewOf(ALICE).dataset.revoked).toBe('true');
    expect(useChats.getState().items[0]!.lastMessage).toEqual({ body: '', timestamp: last.timestamp, fromMe: false, id: last.id, kind: 'revoked' });
    expect(useThread.getState().replyTo).toBeNull(); // no reply to a deleted message
    expect(previewOf(BOB).textContent).toBe('hello from bob');
  });

  it('reaches the preview of a chat that is not open, and says "You deleted" for an own message', async () => {
    await deliver(frame('message.revoked', { id: bobs.id, chatId: BOB, from: BOB, fromMe: false }));
    expect(previewOf(BOB).textContent).toBe('This message was deleted');
    const mine = msg(BOB, 'B2', 'oops', { id: `true_${BOB}_B2`, fromMe: true });
    await deliver(frame('message.sent', { ...mine, body: mine.text }));
    expect(previewOf(BOB).textContent).toBe('You: oops');
    await deliver(frame('message.revoked', { id: mine.id, chatId: BOB, from: '15550100@s.whatsapp.net', fromMe: true }));
    expect(previewOf(BOB).textContent).toBe('You deleted this message');
  });

  it('ignores frames of another connection', async () => {
    await deliver(frame('message.revoked', { id: last.id, chatId: ALICE, from: ALICE, fromMe: false }, 'c2'));
    await deliver(frame('message.edited', { id: older.id, chatId: ALICE, body: 'changed elsewhere' }, 'c2'));
    expect(previewOf(ALICE).textContent).toBe('my door code is 4711');
    expect(within(bubbleOf(last)).queryByTestId('revoked')).toBeNull();
    expect(within(bubbleOf(older)).getByText('see you at nine')).toBeTruthy();
  });
});
