// @vitest-environment jsdom
/**
 * Console components and stores with a fake API client: the thread store's paging and live merge, the edit
 * window, the QR view (spinner on 503, refresh as the code rotates, moving on once linked), and the thread's
 * infinite scroll up to the "history starts here" marker.
 */
import { MantineProvider } from '@mantine/core';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { ReactNode } from 'react';
import { installDomShims } from './dom-shims.tsx';
import { textMessage } from './fixtures.ts';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient, ApiError } from '../../renderer/src/api/client.ts';
import type { Connection, Message, MessagePage } from '../../renderer/src/api/types.ts';
import { useConnections } from '../../renderer/src/stores/connections.ts';
import { useSession } from '../../renderer/src/stores/session.ts';
import { canEdit, EDIT_WINDOW_SECONDS, PAGE_SIZE, useThread } from '../../renderer/src/stores/thread.ts';
import { PairingPanel } from '../../renderer/src/views/PairingPanel.tsx';
import { MessageBubble } from '../../renderer/src/views/MessageBubble.tsx';
import { MessageList } from '../../renderer/src/views/Thread.tsx';

beforeAll(() => {
  installDomShims();
});
afterEach(() => cleanup());

const wrap = (ui: ReactNode) => render(<MantineProvider>{ui}</MantineProvider>);

const msg = (n: number, over: Partial<Message> = {}): Message =>
  textMessage('a@s.whatsapp.net', String(n), `m${n}`, 1_700_000_000 + n, over);

/** 70 messages, paged newest first like the API; cursor = index of the next older message. */
function pagedClient(total = 70) {
  const all = Array.from({ length: total }, (_, i) => msg(i + 1)).reverse();
  const messages = vi.fn(async (_cid: string, _chat: string, opts: { limit?: number; before?: string | null } = {}): Promise<MessagePage> => {
    const start = opts.before ? Number(opts.before) : 0;
    const page = all.slice(start, start + (opts.limit ?? 50));
    const next = start + page.length < all.length ? String(start + page.length) : null;
    return { messages: page, nextBefore: next, historyStartsAt: next ? null : all.at(-1)!.timestamp };
  });
  const client = new ApiClient({ baseUrl: 'http://127.0.0.1:1/api', token: 'wh_x' });
  Object.assign(client, { messages });
  return { client, messages };
}

describe('thread store', () => {
  it('pages back with nextBefore, keeps oldest-first order and merges live messages without duplicates', async () => {
    const { client, messages } = pagedClient();
    await useThread.getState().openChat(client, 'c1', 'a@s.whatsapp.net');
    let s = useThread.getState();
    expect(s.messages).toHaveLength(PAGE_SIZE);
    expect(s.messages.at(-1)!.text).toBe('m70');
    expect(s.reachedStart).toBe(false);
    await s.loadOlder(client);
    await useThread.getState().loadOlder(client);
    s = useThread.getState();
    expect(s.messages.map((m) => m.text).slice(0, 2)).toEqual(['m1', 'm2']);
    expect(s.messages).toHaveLength(70);
    expect(s.reachedStart).toBe(true);
    expect(s.historyStartsAt).toBe(1_700_000_001);
    expect(messages).toHaveBeenCalledTimes(3);
    s.upsert(msg(71));
    s.upsert(msg(71, { ack: 3 }));
    expect(useThread.getState().messages.filter((m) => m.id === msg(71).id)).toHaveLength(1);
    useThread.getState().applyReaction(msg(71).id, 'b@s.whatsapp.net', '👍');
    useThread.getState().applyReaction(msg(71).id, 'b@s.whatsapp.net', '❤️');
    expect(useThread.getState().messages.at(-1)!.reactions).toEqual([expect.objectContaining({ emoji: '❤️' })]);
  });

  it('allows editing own text messages only within 15 minutes', () => {
    const now = Date.now();
    const sentAt = Math.floor(now / 1000);
    expect(canEdit(msg(1, { fromMe: true, timestamp: sentAt - 60 }), now)).toBe(true);
    expect(canEdit(msg(1, { fromMe: true, timestamp: sentAt - EDIT_WINDOW_SECONDS - 1 }), now)).toBe(false);
    expect(canEdit(msg(1, { fromMe: false, timestamp: sentAt }), now)).toBe(false);
    expect(canEdit(msg(1, { fromMe: true, type: 'image', timestamp: sentAt }), now)).toBe(false);
  });
});

describe('media URLs', () => {
  const client = new ApiClient({ baseUrl: 'http://127.0.0.1:7575/api', token: 'wh_x' });
  const file = '/connections/c1/media/ABC.png';

  it('fetches an absolute media.url on the API origin as given, without prefixing it', () => {
    expect(client.resolveMediaUrl(`http://127.0.0.1:7575/api${file}`)).toBe(`http://127.0.0.1:7575/api${file}`);
  });

  it('fetches the file of a media.url on another address (--public-url) through its own API base', () => {
    expect(client.resolveMediaUrl(`https://wa.example.com/switchboard/api${file}`)).toBe(`http://127.0.0.1:7575/api${file}`);
    expect(client.resolveMediaUrl(`http://localhost:7575/api${file}`)).toBe(`http://127.0.0.1:7575/api${file}`);
  });

  it('still resolves the relative paths of older services', () => {
    expect(client.resolveMediaUrl(`/api${file}`)).toBe(`http://127.0.0.1:7575/api${file}`);
  });
});

describe('message actions', () => {
  it('deletes an own message for everyone and forwards one, through the API client', async () => {
    const mine = msg(5, { fromMe: true, senderPushName: '' });
    const client = new ApiClient({ baseUrl: 'http://127.0.0.1:1/api', token: 'wh_x' });
    const revokeMessage = vi.fn(async () => ({ ...mine, kind: 'revoked', text: '' }));
    const forward = vi.fn(async () => ({ ...mine, id: 'true_b@s.whatsapp.net_F', chatId: 'b@s.whatsapp.net', isForwarded: true }));
    Object.assign(client, { revokeMessage, forward });
    useSession.setState({ client, phase: 'ready' });
    useThread.setState({ messages: [mine] });
    wrap(<MessageBubble message={mine} quoted={undefined} connectionId="c1" />);
    fireEvent.click(screen.getByTestId('message-actions'));
    fireEvent.click(await screen.findByTestId('forward-message'));
    fireEvent.change(await screen.findByTestId('forward-to'), { target: { value: '+15550102' } });
    fireEvent.click(screen.getByTestId('forward-send'));
    await waitFor(() => expect(forward).toHaveBeenCalledWith('c1', { chatId: '+15550102', messageId: mine.id, fromChatId: mine.chatId }));
    fireEvent.click(screen.getByTestId('message-actions'));
    fireEvent.click(await screen.findByTestId('revoke-message'));
    await waitFor(() => expect(revokeMessage).toHaveBeenCalledWith('c1', mine.id, mine.chatId));
    await waitFor(() => expect(useThread.getState().messages[0]!.kind).toBe('revoked'));
  });

  it('offers no delete for someone else’s message in a 1:1 chat, and marks forwarded and deleted messages', async () => {
    const theirs = msg(6, { isForwarded: true });
    wrap(
      <>
        <MessageBubble message={theirs} quoted={undefined} connectionId="c1" />
        <MessageBubble message={msg(7, { kind: 'revoked', text: '' })} quoted={undefined} connectionId="c1" />
      </>,
    );
    expect(screen.getByTestId('forwarded')).toBeTruthy();
    expect(screen.getByTestId('revoked').textContent).toBe('This message was deleted');
    fireEvent.click(screen.getAllByTestId('message-actions')[0]!);
    await screen.findByTestId('forward-message');
    expect(screen.queryByTestId('revoke-message')).toBeNull();
  });
});

describe('thread infinite scroll', () => {
  it('loads older pages when scrolled to the top, ends with the history marker, and renders only the rows in view', async () => {
    // jsdom has no layout: a 600 px thread and 60 px rows, as the browser would measure them.
    const clientHeight = Object.getOwnPropertyDescriptor(Element.prototype, 'clientHeight')!;
    const offsetHeight = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'offsetHeight')!;
    Object.defineProperty(Element.prototype, 'clientHeight', {
      configurable: true,
      get(this: Element) {
        return this.getAttribute('data-testid') === 'thread-scroll' ? 600 : 0;
      },
    });
    Object.defineProperty(HTMLElement.prototype, 'offsetHeight', {
      configurable: true,
      get(this: HTMLElement) {
        return this.classList.contains('thread-row') ? 60 : 0;
      },
    });
    try {
      const { client } = pagedClient();
      useSession.setState({ client, phase: 'ready' });
      await useThread.getState().openChat(client, 'c1', 'a@s.whatsapp.net');
      wrap(<MessageList connectionId="c1" />);
      const scroller = screen.getByTestId('thread-scroll');
      expect(screen.queryByTestId('history-start')).toBeNull();
      for (let i = 0; i < 3 && !screen.queryByTestId('history-start'); i++) {
        await act(async () => {
          scroller.scrollTop = 0;
          fireEvent.scroll(scroller);
        });
        await waitFor(() => expect(useThread.getState().loadingOlder).toBe(false));
      }
      expect(screen.getByTestId('history-start').textContent).toMatch(/History starts here/);
      expect(useThread.getState().messages).toHaveLength(70);
      // Only the rows in and near the 600 px view are in the DOM, not the 70 loaded (jsdom does not scroll, so
      // which rows those are is the Chromium test's business: test/e2e/console-operator.test.ts).
      const rendered = screen.getAllByTestId('message').length;
      expect(rendered).toBeGreaterThanOrEqual(10); // 600 px of 60 px rows
      expect(rendered).toBeLessThan(40);
    } finally {
      Object.defineProperty(Element.prototype, 'clientHeight', clientHeight);
      Object.defineProperty(HTMLElement.prototype, 'offsetHeight', offsetHeight);
    }
  });
});

describe('pairing QR view', () => {
  it('shows a spinner while booting, refreshes the code as it rotates and moves on once linked', async () => {
    const codes = ['data:image/png;base64,AAAA', 'data:image/png;base64,BBBB'];
    let calls = 0;
    const client = new ApiClient({ baseUrl: 'http://127.0.0.1:1/api', token: 'wh_x' });
    Object.assign(client, {
      qr: vi.fn(async () => {
        calls++;
        if (calls === 1) throw new ApiError(503, 'Worker is booting, please retry in a few seconds', 1);
        return { value: codes[calls === 2 ? 0 : 1]! };
      }),
    });
    useConnections.setState({
      items: [{ id: 'c1', userId: 'u', workerId: 'local', sessionName: 's', phoneNumber: null, status: 'starting', statusReason: null, engine: 'NOWEB', rejectCalls: false, rejectCallsMessage: null, name: null, createdAt: '', updatedAt: '' }],
    });
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const onLinked = vi.fn();
    wrap(<PairingPanel client={client} connectionId="c1" onLinked={onLinked} onRestart={() => {}} />);
    await waitFor(() => expect(screen.getByText('Starting the session…')).toBeTruthy());
    await act(async () => vi.advanceTimersByTimeAsync(1100));
    await waitFor(() => expect(screen.getByTestId('pairing-qr').getAttribute('src')).toBe(codes[0]));
    await act(async () => vi.advanceTimersByTimeAsync(3100));
    await waitFor(() => expect(screen.getByTestId('pairing-qr').getAttribute('src')).toBe(codes[1]));
    expect(screen.getByTestId('pairing-qr').getAttribute('data-version')).toBe('2');
    act(() => useConnections.getState().applyStatus('c1', 'online'));
    await waitFor(() => expect(screen.getByTestId('pairing-panel').getAttribute('data-state')).toBe('linked'));
    await act(async () => vi.advanceTimersByTimeAsync(1300));
    expect(onLinked).toHaveBeenCalledTimes(1);
    vi.useRealTimers();
  });
});

describe('connection status order (no stale status after a newer event)', () => {
  const conn = (id: string, status: Connection['status'], over: Partial<Connection> = {}): Connection => ({
    id,
    userId: 'u',
    workerId: 'local',
    sessionName: `s_${id}`,
    phoneNumber: null,
    status,
    statusReason: null,
    engine: 'NOWEB',
    rejectCalls: false,
    rejectCallsMessage: null,
    name: null,
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
    ...over,
  });
  /** A promise resolved from outside: an API answer that arrives when the test says. */
  const later = <T,>() => {
    let resolve!: (v: T) => void;
    const promise = new Promise<T>((r) => (resolve = r));
    return { promise, resolve };
  };

  it('an answer requested before a status event keeps the event’s status; one requested after it is taken', async () => {
    useConnections.setState({ items: [], marks: {}, statusVersion: 0, deleted: null });
    const s = () => useConnections.getState();
    // get-or-create answers "starting" after the session already said scan_qr (its QR is on screen).
    const created = later<Connection>();
    const tracked = s().track(created.promise);
    s().applyStatus('c1', 'scan_qr', null, '2025-01-01T00:00:01.000Z');
    created.resolve(conn('c1', 'starting'));
    await expect(tracked).resolves.toMatchObject({ status: 'scan_qr' });
    expect(s().items).toEqual([expect.objectContaining({ id: 'c1', status: 'scan_qr' })]);
    // Read after the event: taken as it is (the phone number appears once linked).
    s().applyStatus('c1', 'online', null, '2025-01-01T00:00:02.000Z');
    await s().track(Promise.resolve(conn('c1', 'online', { phoneNumber: '+15550100' })));
    expect(s().items[0]).toMatchObject({ status: 'online', phoneNumber: '+15550100' });

    // The whole list, slow to answer, racing a reconnect event.
    const list = later<Connection[]>();
    const client = new ApiClient({ baseUrl: 'http://127.0.0.1:1/api', token: 'wh_x' });
    Object.assign(client, { listConnections: vi.fn(() => list.promise) });
    const loading = s().load(client);
    s().applyStatus('c1', 'reconnecting', 'connection lost', '2025-01-01T00:00:03.000Z');
    list.resolve([conn('c1', 'online', { phoneNumber: '+15550100', name: 'ops' }), conn('c2', 'scan_qr')]);
    await loading;
    expect(s().items.map((c) => [c.id, c.status, c.statusReason, c.name])).toEqual([
      ['c1', 'reconnecting', 'connection lost', 'ops'],
      ['c2', 'scan_qr', null, null],
    ]);

    // Deleted by an event while a read was on its way: it does not come back, and joins the deleted ones.
    useConnections.setState({ deleted: [] });
    const read = later<Connection>();
    const reading = s().track(read.promise);
    s().applyStatus('c2', 'stopped', 'deleted', '2025-01-01T00:00:04.000Z');
    read.resolve(conn('c2', 'scan_qr'));
    await reading;
    expect(s().items.map((c) => c.id)).toEqual(['c1']);
    expect(s().deleted).toEqual([expect.objectContaining({ id: 'c2', status: 'stopped', statusReason: 'deleted', updatedAt: '2025-01-01T00:00:04.000Z' })]);
  });
});
