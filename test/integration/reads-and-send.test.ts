/**
 * Reading chats, messages and contacts (interface-spec §4.2) from a real store over HTTP, query validation,
 * and the text send endpoint's validation and its answer for a connection that is not online (the groups routes
 * too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageIdOf, type StoredMessage } from '../../service/db/messages.ts';
import { incomingText } from '../helpers/messages.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const ALICE = '15550101@s.whatsapp.net';
const BOB = '15550102@s.whatsapp.net';

function message(chatId: string, n: number, timestamp: number): StoredMessage {
  return incomingText(chatId, `KEY${String(n).padStart(4, '0')}`, timestamp, `message ${n}`);
}

describe('reading and sending', () => {
  let api: TestApi;
  let user: TestUser;
  let connectionId: string;
  const get = <T>(route: string) =>
    api.request<T>('GET', `/connections/${connectionId}${route}`, { token: user.token });

  beforeAll(async () => {
    api = await startTestApi();
    user = api.user('alice');
    connectionId = api.connection(user.id, 'online').id;
    const { store } = api;
    store.tx(() => {
      // 7 messages with Alice, two sharing a timestamp (paging must not lose either), 1 with Bob.
      const stamps = [100, 200, 300, 300, 400, 500, 600];
      stamps.forEach((ts, i) => {
        const m = message(ALICE, i, ts);
        store.messages.upsert(connectionId, m);
        store.chats.touch(connectionId, {
          chatId: ALICE,
          isGroup: false,
          messageId: m.id,
          kind: 'text',
          timestamp: ts,
          body: `message ${i}`,
          fromMe: false,
          unreadDelta: 1,
        });
      });
      store.messages.upsert(connectionId, message(BOB, 99, 50));
      store.chats.touch(connectionId, {
        chatId: BOB,
        isGroup: false,
        messageId: message(BOB, 99, 50).id,
        kind: 'text',
        timestamp: 50,
        body: 'message 99',
        fromMe: false,
        unreadDelta: 0,
      });
      store.contacts.upsert(connectionId, { jid: ALICE, name: 'Alice', phoneNumber: '+15550101' });
      store.contacts.upsert(connectionId, { jid: BOB, pushName: 'Bob', phoneNumber: '+15550102' });
    });
  });
  afterAll(() => api.close());

  describe('chats', () => {
    it('lists chats by most recent message with the spec fields', async () => {
      const res = await get<unknown[]>('/chats');
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        {
          id: ALICE,
          name: 'Alice',
          isGroup: false,
          lastMessage: { body: 'message 6', timestamp: 600, fromMe: false, id: message(ALICE, 6, 600).id, kind: 'text' },
          unread: 7,
        },
        {
          id: BOB,
          name: 'Bob',
          isGroup: false,
          lastMessage: { body: 'message 99', timestamp: 50, fromMe: false, id: message(BOB, 99, 50).id, kind: 'text' },
          unread: 0,
        },
      ]);
    });

    it('applies limit, offset (in chats) and unread_only', async () => {
      expect((await get<Array<{ id: string }>>('/chats?limit=1&offset=1')).body.map((c) => c.id)).toEqual([BOB]);
      expect((await get<Array<{ id: string }>>('/chats?unread_only=true')).body.map((c) => c.id)).toEqual([ALICE]);
      expect((await get<unknown[]>('/chats?unread_only=false')).body).toHaveLength(2);
    });

    it.each([
      ['limit=0', 'querystring/limit must be >= 1'],
      ['limit=501', 'querystring/limit must be <= 500'],
      ['limit=abc', 'querystring/limit must be integer'],
      ['limit=1.5', 'querystring/limit must be integer'],
      ['offset=-1', 'querystring/offset must be >= 0'],
      ['unread_only=yes', 'querystring/unread_only must be boolean'],
      ['unread_only=1', 'querystring/unread_only must be boolean'],
    ])('400 for %s', async (query, message) => {
      const res = await get(`/chats?${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message });
    });
  });

  describe('messages', () => {
    const page = (query: string) =>
      get<{
        messages: Array<{ id: string; timestamp: number }>;
        nextBefore: string | null;
        historyStartsAt: number | null;
      }>(`/chats/${ALICE}/messages${query}`);

    it('pages newest first with nextBefore until the end, then reports historyStartsAt', async () => {
      const seen: string[] = [];
      let query = '?limit=3';
      for (let i = 0; i < 3; i++) {
        const res = await page(query);
        expect(res.status).toBe(200);
        seen.push(...res.body.messages.map((m) => m.id));
        if (i < 2) {
          expect(res.body).toMatchObject({ nextBefore: expect.any(String), historyStartsAt: null });
          query = `?limit=3&before=${res.body.nextBefore}`;
        } else {
          expect(res.body).toMatchObject({ nextBefore: null, historyStartsAt: 100 });
        }
      }
      expect(seen).toHaveLength(7);
      expect(new Set(seen).size).toBe(7);
      const stamps = (await page('?limit=500')).body.messages.map((m) => m.timestamp);
      expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
    });

    it('returns the spec Message record', async () => {
      const res = await page('?limit=1');
      expect(res.body.messages[0]).toEqual({
        id: messageIdOf(false, ALICE, 'KEY0006'),
        chatId: ALICE,
        timestamp: 600,
        fromMe: false,
        senderJid: ALICE,
        senderPushName: 'Alice',
        type: 'text',
        kind: 'text',
        rawType: null,
        text: 'message 6',
        quotedMessageId: null,
        media: null,
        location: null,
        contacts: null,
        poll: null,
        selection: null,
        album: null,
        albumId: null,
        ack: null,
        mentions: [],
        isForwarded: false,
        editedAt: null,
        reactions: [],
      });
    });

    it('an unknown chat has no messages and no history', async () => {
      const res = await get('/chats/15559999@s.whatsapp.net/messages');
      expect(res.body).toEqual({ messages: [], nextBefore: null, historyStartsAt: null });
    });

    it.each([
      ['before=not-a-cursor', 'querystring/before is not a valid cursor'],
      ['limit=0', 'querystring/limit must be >= 1'],
    ])('400 for %s', async (query, message) => {
      const res = await page(`?${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ message });
    });

    it('reads one message by id with its chatId; 404 for another chat; 400 without chatId', async () => {
      const id = messageIdOf(false, ALICE, 'KEY0002');
      const ok = await get<{ id: string }>(`/messages/${id}?chatId=${ALICE}`);
      expect(ok.status).toBe(200);
      expect(ok.body.id).toBe(id);
      const other = await get(`/messages/${id}?chatId=${BOB}`);
      expect(other.status).toBe(404);
      expect(other.body).toMatchObject({ message: 'Message not found' });
      const missing = await get(`/messages/${id}`);
      expect(missing.status).toBe(400);
      expect(missing.body).toMatchObject({ message: 'querystring/chatId is required' });
    });

    it('answers JSON, and only once the open group commit holding what it read is on disk', async () => {
      const { store } = api;
      const carol = '15550103@s.whatsapp.net';
      const m = message(carol, 1, 700);
      // Hold the answer's wait on the real durable() until we let go, to see that the answer waits for it. The batch
      // may commit on its own timer before the answer is ready: the first answer is told it has not.
      const { durable, isDurable } = store;
      store.isDurable = () => ((store.isDurable = isDurable), false);
      let waits = 0;
      let letGo: (() => void) | undefined;
      store.durable = () => {
        waits++;
        return durable().then(() => new Promise<void>((resolve) => (letGo = resolve)));
      };
      try {
        store.ingest(() => store.messages.upsert(connectionId, m)); // the engine's path: its batch commits later
        expect(isDurable()).toBe(false);
        let answered = false;
        const res = get<{ messages: Array<{ id: string }> }>(`/chats/${carol}/messages`).then((r) => ((answered = true), r));
        while (!letGo) await new Promise((r) => setTimeout(r, 5));
        expect(store.isDurable()).toBe(true); // committed and synced
        await new Promise((r) => setTimeout(r, 50));
        expect(answered).toBe(false);
        letGo();
        const body = (await res).body;
        expect(body.messages.map((x) => x.id)).toEqual([m.id]);
        expect((await res).headers.get('content-type')).toBe('application/json; charset=utf-8');
        // Nothing open or syncing: answered without waiting on anything.
        expect((await get(`/chats/${carol}/messages`)).status).toBe(200);
        expect(waits).toBe(1);
      } finally {
        store.durable = durable;
        store.isDurable = isDurable;
      }
    });
  });

  it('lists contacts by name with limit and offset', async () => {
    const res = await get<Array<{ jid: string }>>('/contacts');
    expect(res.body).toEqual([
      { jid: ALICE, name: 'Alice', phoneNumber: '+15550101', isGroup: false },
      { jid: BOB, name: 'Bob', phoneNumber: '+15550102', isGroup: false },
    ]);
    expect((await get<Array<{ jid: string }>>('/contacts?offset=1&limit=1')).body.map((c) => c.jid)).toEqual([BOB]);
  });

  describe('send', () => {
    const send = (body: unknown) =>
      api.request('POST', `/connections/${connectionId}/send`, { token: user.token, body });
    const count = () => (api.store.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;

    it.each([
      [{ text: 'hi' }, 'body/chatId is required'],
      [{ chatId: 15550101, text: 'hi' }, 'body/chatId must be string'],
      [{ chatId: ALICE }, 'body/text is required'],
      [{ chatId: ALICE, text: '' }, 'body/text must not be empty'],
      [{ chatId: ALICE, text: 'x'.repeat(65537) }, 'body/text must be at most 65536 characters long'],
      [{ chatId: ALICE, text: 'hi', skipPresence: 'yes' }, 'body/skipPresence must be boolean'],
      [{ chatId: ALICE, text: 'hi', replyTo: 5 }, 'body/replyTo must be string'],
      [{ chatId: ALICE, text: 'hi', media: {} }, 'body/media is not allowed'],
    ])('400 for %j, nothing stored', async (body, message) => {
      const before = count();
      const res = await send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message });
      expect(count()).toBe(before);
    });

    it('409 when the connection has no online session', async () => {
      const before = count();
      const res = await send({ chatId: ALICE, text: 'hi', skipPresence: true });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        statusCode: 409,
        error: 'Conflict',
        message: expect.stringContaining('Connection is not online'),
      });
      expect(count()).toBe(before);
    });
  });

  describe('groups', () => {
    const GROUP = '120363000000000042@g.us';
    it.each([
      ['GET', '/groups', undefined],
      ['GET', `/groups/${encodeURIComponent(GROUP)}`, undefined],
      ['POST', '/groups', { subject: 'Team', participants: ['+15550101'] }],
      ['PATCH', `/groups/${GROUP}`, { subject: 'Renamed' }],
      ['POST', `/groups/${GROUP}/participants`, { action: 'add', participants: ['+15550101'] }],
      ['POST', `/groups/${GROUP}/leave`, undefined],
      ['GET', `/groups/${GROUP}/invite-code`, undefined],
    ] as const)('%s %s: 409 when the connection has no online session, nothing stored', async (method, route, body) => {
      const before = api.store.db.prepare('SELECT count(*) AS n FROM group_metadata').get();
      const res = await api.request(method, `/connections/${connectionId}${route}`, { token: user.token, ...(body && { body }) });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict', message: expect.stringContaining('Connection is not online') });
      expect(api.store.db.prepare('SELECT count(*) AS n FROM group_metadata').get()).toEqual(before);
    });
  });
});
