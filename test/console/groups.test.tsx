// @vitest-environment jsdom
/**
 * Group chats in the console with a fake API client: the sender's name above incoming bubbles, the group info
 * panel opened from the thread header (subject, description, members with admin badges), and @ mentions in the
 * composer (pick a member; the send carries `mentions`).
 */
import { MantineProvider } from '@mantine/core';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import type { ReactNode } from 'react';
import { installDomShims } from './dom-shims.tsx';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../renderer/src/api/client.ts';
import type { GroupInfo, Message, MessagePage } from '../../renderer/src/api/types.ts';
import { useSession } from '../../renderer/src/stores/session.ts';
import { mentionCandidates, mentionQuery } from '../../renderer/src/views/Composer.tsx';
import { mentionsIn } from '../../renderer/src/views/GroupInfo.tsx';
import { Thread } from '../../renderer/src/views/Thread.tsx';

beforeAll(() => {
  installDomShims();
});
afterEach(() => cleanup());

const GROUP = '120363000000000042@g.us';
const wrap = (ui: ReactNode) => render(<MantineProvider>{ui}</MantineProvider>);

const group: GroupInfo = {
  id: GROUP,
  subject: 'Sandbox Team',
  description: 'Where the sandbox contacts meet.',
  owner: '15550100@s.whatsapp.net',
  createdAt: '2026-11-25T08:00:00.000Z',
  participantsCount: 3,
  addressingMode: 'pn',
  participants: [
    { jid: '15550100@s.whatsapp.net', phoneNumber: '+15550100', lid: null, name: 'Me', isAdmin: true, isSuperAdmin: true },
    { jid: '15550101@s.whatsapp.net', phoneNumber: '+15550101', lid: null, name: 'Alice Sandbox', isAdmin: true, isSuperAdmin: false },
    { jid: '15550102@s.whatsapp.net', phoneNumber: '+15550102', lid: null, name: 'Bob Sandbox', isAdmin: false, isSuperAdmin: false },
  ],
};

const incoming: Message = {
  id: `false_${GROUP}_K1`,
  chatId: GROUP,
  timestamp: 1_795_000_000,
  fromMe: false,
  senderJid: '15550101@s.whatsapp.net',
  senderPushName: 'Alice Sandbox',
  type: 'text',
  kind: 'text',
  rawType: null,
  location: null,
  contacts: null,
  poll: null,
  selection: null,
  album: null,
  albumId: null,
  isForwarded: false,
  text: 'Hi all!',
  quotedMessageId: null,
  media: null,
  ack: null,
  mentions: [],
  editedAt: null,
  reactions: [],
};

function groupClient() {
  const client = new ApiClient({ baseUrl: 'http://127.0.0.1:1/api', token: 'wh_x' });
  const sendText = vi.fn(async (_cid: string, body: { chatId: string; text: string; mentions?: string[] }) => ({
    ...incoming,
    id: `true_${GROUP}_K2`,
    fromMe: true,
    senderJid: '15550100@s.whatsapp.net',
    senderPushName: '',
    text: body.text,
    mentions: body.mentions ?? [],
    ack: 2,
  }));
  Object.assign(client, {
    messages: vi.fn(async (): Promise<MessagePage> => ({ messages: [incoming], nextBefore: null, historyStartsAt: incoming.timestamp })),
    group: vi.fn(async () => group),
    markRead: vi.fn(async () => ({ success: true })),
    typing: vi.fn(async () => ({ success: true })),
    typingStop: vi.fn(async () => ({ success: true })),
    sendText,
  });
  return { client, sendText };
}

describe('group chats in the console', () => {
  it('shows the sender above incoming bubbles and the group info panel with admin badges', async () => {
    const { client } = groupClient();
    useSession.setState({ client, phase: 'ready' });
    wrap(<Thread connectionId="c1" chatId={GROUP} chatName="Sandbox Team" online />);
    const bubble = await screen.findByText('Hi all!');
    expect(within(bubble.closest('[data-testid="message"]') as HTMLElement).getByText('Alice Sandbox')).toBeTruthy();

    fireEvent.click(screen.getByTestId('group-info-open'));
    expect((await screen.findByTestId('group-subject')).textContent).toBe('Sandbox Team');
    expect(screen.getByTestId('group-description').textContent).toBe('Where the sandbox contacts meet.');
    const rows = screen.getAllByTestId('group-participant');
    expect(rows).toHaveLength(3);
    expect(within(rows[0]!).getByText('Owner')).toBeTruthy();
    expect(within(rows[1]!).getByText('Admin')).toBeTruthy();
    expect(within(rows[2]!).queryByText('Admin')).toBeNull();
  });

  it('offers members after @ and sends the picked ones as mentions', async () => {
    const { client, sendText } = groupClient();
    useSession.setState({ client, phase: 'ready' });
    wrap(<Thread connectionId="c1" chatId={GROUP} chatName="Sandbox Team" online />);
    await screen.findByText('Hi all!');
    const input = screen.getByTestId('composer-input') as HTMLTextAreaElement;
    await waitFor(() => expect((client as unknown as { group: ReturnType<typeof vi.fn> }).group).toHaveBeenCalled());
    fireEvent.change(input, { target: { value: 'Thanks @bob' } });
    const options = await screen.findAllByTestId('mention-option');
    expect(options.map((o) => o.textContent)).toEqual(['Bob Sandbox@15550102']);
    fireEvent.click(options[0]!);
    expect(input.value).toBe('Thanks @15550102 ');
    expect(screen.queryByTestId('mention-picker')).toBeNull();
    await act(async () => {
      fireEvent.change(input, { target: { value: 'Thanks @15550102 and @15550101!' } });
      fireEvent.keyDown(input, { key: 'Enter' });
    });
    await waitFor(() => expect(sendText).toHaveBeenCalled());
    expect(sendText.mock.calls[0]![1]).toMatchObject({
      chatId: GROUP,
      text: 'Thanks @15550102 and @15550101!',
      mentions: ['15550101@s.whatsapp.net', '15550102@s.whatsapp.net'],
    });
  });

  it('finds the mention being typed and the members a text names', () => {
    expect(mentionQuery('hello @al')).toBe('al');
    expect(mentionQuery('@')).toBe('');
    expect(mentionQuery('mail me at x@y')).toBeUndefined();
    expect(mentionQuery('@al done')).toBeUndefined();
    expect(mentionCandidates(group.participants, '5550101').map((p) => p.name)).toEqual(['Alice Sandbox']);
    expect(mentionsIn('@155501010 is not @15550101x', group.participants)).toEqual([]);
    expect(mentionsIn('cc @15550100', group.participants)).toEqual(['15550100@s.whatsapp.net']);
  });
});
