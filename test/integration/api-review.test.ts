/**
 * Findings of the spec review (issue 17) that a real store and the HTTP layer decide: every chatId form on every
 * read route, an empty JSON body, `lastMessage` never null, a revoke clears reactions, editing someone else's
 * message is a 400, and `/react` takes `skipPresence`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageIdOf } from '../../service/db/messages.ts';
import { incomingText } from '../helpers/messages.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const ALICE = '15550101@s.whatsapp.net';
const ALICE_LID = '99887766@lid';
const GROUP = '120363000000000001@g.us';

describe('issue 17: chat ids, empty bodies, chats and messages', () => {
  let api: TestApi;
  let user: TestUser;
  let connectionId: string;
  const aliceMessage = messageIdOf(false, ALICE, 'KEYA1');
  const groupMessage = messageIdOf(false, GROUP, 'KEYG1');

  beforeAll(async () => {
    api = await startTestApi();
    user = api.user('alice');
    connectionId = api.connection(user.id, 'online').id;
    const { store } = api;
    store.tx(() => {
      store.messages.upsert(connectionId, incomingText(ALICE, 'KEYA1', 100, 'hello'));
      store.chats.touch(connectionId, { chatId: ALICE, isGroup: false, messageId: messageIdOf(false, ALICE, 'KEYA1'), kind: 'text', timestamp: 100, body: 'hello', fromMe: false, unreadDelta: 1 });
      store.messages.upsert(connectionId, { ...incomingText(GROUP, 'KEYG1', 90, 'group hello'), senderJid: ALICE });
      store.chats.touch(connectionId, { chatId: GROUP, isGroup: true, messageId: groupMessage, kind: 'text', timestamp: 90, body: 'group hello', fromMe: false, unreadDelta: 0 });
      store.contacts.upsert(connectionId, { jid: ALICE, lid: ALICE_LID, name: 'Alice', phoneNumber: '+15550101' });
    });
  });
  afterAll(() => api.close());

  const get = <T>(route: string) => api.request<T>('GET', `/connections/${connectionId}${route}`, { token: user.token });

  const aliceForms = ['15550101@s.whatsapp.net', '15550101@c.us', ALICE_LID, '+15550101', '15550101', '+1 555-0101'];
  const groupForms = [GROUP];
  const cases = [
    ...aliceForms.map((form) => [form, ALICE, aliceMessage] as const),
    ...groupForms.map((form) => [form, GROUP, groupMessage] as const),
  ];

  describe.each(cases)('chatId %s', (form, canonical, messageId) => {
    const enc = encodeURIComponent(form);

    it('GET /chats/:chatId/messages reads the canonical chat', async () => {
      const res = await get<{ messages: Array<{ id: string; chatId: string }> }>(`/chats/${enc}/messages`);
      expect(res.status).toBe(200);
      expect(res.body.messages.map((m) => [m.id, m.chatId])).toEqual([[messageId, canonical]]);
    });

    it('GET /chats/:chatId/messages?around= reads the canonical chat', async () => {
      const around = await get<{ messages: Array<{ id: string }>; nextAfter: string | null }>(
        `/chats/${enc}/messages?around=${encodeURIComponent(messageId)}`,
      );
      expect(around.status, JSON.stringify(around.body)).toBe(200);
      expect(around.body.messages.map((m) => m.id)).toEqual([messageId]);
    });

    it('GET /chats/:chatId/export and GET /search?chatId= answer for the canonical chat', async () => {
      const exported = await get<{ id: string }>(`/chats/${enc}/export?format=jsonl`);
      expect(exported.status).toBe(200);
      expect(exported.body.id).toBe(messageId); // one line: the harness parsed it as one JSON document
      const found = await get<{ results: Array<{ message: { id: string } }> }>(`/search?q=hello&chatId=${enc}`);
      expect(found.status, JSON.stringify(found.body)).toBe(200);
      expect(found.body.results.map((r) => r.message.id)).toEqual([messageId]);
    });

    it('GET /messages/:messageId?chatId= finds the message', async () => {
      const res = await get<{ id: string }>(`/messages/${encodeURIComponent(messageId)}?chatId=${enc}`);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(messageId);
    });

    it('GET /messages/:messageId/media?chatId= finds the message (which has no media)', async () => {
      const res = await get<{ message: string }>(`/messages/${encodeURIComponent(messageId)}/media?chatId=${enc}`);
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('Media not found');
    });
  });

  it.each(['hello', 'alice@example.com', '123', '15550101@broadcast'])('400 for the chatId %s on every read route', async (bad) => {
    const enc = encodeURIComponent(bad);
    for (const route of [`/chats/${enc}/messages`, `/messages/${encodeURIComponent(aliceMessage)}?chatId=${enc}`, `/messages/${encodeURIComponent(aliceMessage)}/media?chatId=${enc}`]) {
      const res = await get<{ message: string }>(route);
      expect(res.status, route).toBe(400);
      expect(res.body.message).toMatch(/^chatId (must be a JID or a phone number in international format|is not a valid international phone number)$/);
    }
  });

  it('an unknown LID reads the chat stored under that LID', async () => {
    const res = await get<{ messages: unknown[] }>(`/chats/${encodeURIComponent('11112222@lid')}/messages`);
    expect(res.body).toEqual({ messages: [], nextBefore: null, historyStartsAt: null });
  });

  it('lastMessage is always an object: the newest message, else the activity the phone reported, else 0', async () => {
    const { store } = api;
    store.tx(() => {
      store.chats.upsertMeta(connectionId, { id: '15550103@s.whatsapp.net', name: 'Old chat', isGroup: false, activityTs: 1_600_000_000 });
      store.chats.upsertMeta(connectionId, { id: '15550104@s.whatsapp.net', name: 'No activity', isGroup: false });
      // Phone metadata never overrides a stored message.
      store.chats.upsertMeta(connectionId, { id: ALICE, isGroup: false, activityTs: 1_700_000_000 });
    });
    const chats = (await get<Array<{ id: string; lastMessage: unknown }>>('/chats')).body;
    const last = Object.fromEntries(chats.map((c) => [c.id, c.lastMessage]));
    expect(last).toEqual({
      [ALICE]: { body: 'hello', timestamp: 100, fromMe: false, id: messageIdOf(false, ALICE, 'KEYA1'), kind: 'text' },
      [GROUP]: { body: 'group hello', timestamp: 90, fromMe: false, id: groupMessage, kind: 'text' },
      '15550103@s.whatsapp.net': { body: '', timestamp: 1_600_000_000, fromMe: false, id: null, kind: null },
      '15550104@s.whatsapp.net': { body: '', timestamp: 0, fromMe: false, id: null, kind: null },
    });
    // The first stored message replaces the phone's activity, even when it is older.
    store.tx(() => {
      store.messages.upsert(connectionId, incomingText('15550103@s.whatsapp.net', 'KEYOLD', 1_500_000_000, 'old one'));
      store.chats.touch(connectionId, { chatId: '15550103@s.whatsapp.net', isGroup: false, messageId: messageIdOf(false, '15550103@s.whatsapp.net', 'KEYOLD'), kind: 'text', timestamp: 1_500_000_000, body: 'old one', fromMe: false, unreadDelta: 0 });
    });
    const after = (await get<Array<{ id: string; lastMessage: unknown }>>('/chats')).body.find((c) => c.id === '15550103@s.whatsapp.net');
    expect(after?.lastMessage).toEqual({ body: 'old one', timestamp: 1_500_000_000, fromMe: false, id: messageIdOf(false, '15550103@s.whatsapp.net', 'KEYOLD'), kind: 'text' });
  });

  it('a revoke clears the reactions of the message, as stored and as read', async () => {
    const { store } = api;
    const id = messageIdOf(false, ALICE, 'KEYREV');
    store.tx(() => {
      store.messages.upsert(connectionId, incomingText(ALICE, 'KEYREV', 50, 'to be deleted'));
      store.messages.react(connectionId, id, ALICE, '👍', 51);
      store.messages.react(connectionId, id, '15550199@s.whatsapp.net', '❤️', 52);
    });
    expect((await get<{ reactions: unknown[] }>(`/messages/${encodeURIComponent(id)}?chatId=${ALICE}`)).body.reactions).toHaveLength(2);
    store.tx(() => store.messages.revoke(connectionId, id));
    const read = await get<{ type: string; reactions: unknown[] }>(`/messages/${encodeURIComponent(id)}?chatId=${ALICE}`);
    expect(read.body).toMatchObject({ kind: 'revoked', reactions: [] });
    const row = store.db.prepare('SELECT count(*) AS n FROM message_reactions WHERE connection_id = ? AND message_id = ?').get(connectionId, id) as { n: number };
    expect(row.n).toBe(0);
  });

  it.each(['15550101@c.us', '+15550101', ALICE])("editing someone else's message (chatId %s) is 400, not 403", async (chatId) => {
    const res = await api.request<{ message: string; statusCode: number }>('PUT', `/connections/${connectionId}/messages/${encodeURIComponent(aliceMessage)}`, {
      token: user.token,
      body: { chatId, text: 'changed' },
    });
    expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'Only your own messages can be edited' });
    expect(api.store.messages.get(connectionId, aliceMessage)?.text).toBe('hello');
  });

  it('/react accepts skipPresence like every send (this connection has no session: 409, not a 400)', async () => {
    const res = await api.request<{ message: string }>('POST', `/connections/${connectionId}/react`, {
      token: user.token,
      body: { chatId: '15550101@c.us', messageId: aliceMessage, emoji: '👍', skipPresence: true },
    });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/^Connection is not online/);
  });

  describe('an empty body sent as application/json', () => {
    const empty = { headers: { 'content-type': 'application/json' }, rawBody: '' };

    it.each([
      ['POST', () => `/connections/${connectionId}/restart`],
      ['POST', () => '/connections/get-or-create'],
      ['DELETE', () => `/tokens/${user.tokenId}-unknown`],
    ])('%s is read as no body', async (method, route) => {
      const res = await api.request<{ message?: string }>(method, route(), { token: user.token, ...empty });
      expect(res.status).not.toBe(400);
      expect(res.status).not.toBe(415);
    });

    it('a route that needs a body names the missing field', async () => {
      const res = await api.request<{ message: string }>('POST', `/connections/${connectionId}/send`, { token: user.token, ...empty });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('body/chatId is required');
    });

    it('broken JSON is still a 400', async () => {
      const res = await api.request<{ message: string }>('POST', '/tokens', {
        token: user.token,
        headers: { 'content-type': 'application/json' },
        rawBody: '{"name":',
      });
      expect(res.status).toBe(400);
    });
  });
});
