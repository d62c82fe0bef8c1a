/**
 * The media proxy over HTTP against a real store and media folder (no session): streaming with the right headers,
 * single byte ranges (206/416, suffix and open-ended), several ranges → whole file, HEAD, auth and ownership,
 * and file names that try to leave the connection's folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMPTY_CONTENT, messageIdOf } from '../../service/db/messages.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const ALICE = '15550101@s.whatsapp.net';

describe('media proxy', () => {
  let api: TestApi;
  let user: TestUser;
  let other: TestUser;
  let connectionId: string;
  const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const messageId = messageIdOf(false, ALICE, 'KEYMEDIA1');
  let url: string;

  const get = (route: string, headers: Record<string, string> = {}, token = user.token, method = 'GET') =>
    fetch(api.baseUrl + route, { method, headers: { authorization: `Bearer ${token}`, ...headers } });

  beforeAll(async () => {
    api = await startTestApi();
    user = api.user('alice');
    other = api.user('mallory');
    connectionId = api.connection(user.id, 'online').id;
    url = `/api/connections/${connectionId}/media/KEYMEDIA1.png`;
    api.store.messages.upsert(connectionId, {
      id: messageId,
      keyId: 'KEYMEDIA1',
      chatId: ALICE,
      timestamp: 1000,
      fromMe: false,
      senderJid: ALICE,
      senderPushName: 'Alice',
      type: 'image',
            kind: 'image',
            rawType: null,
            ...EMPTY_CONTENT,
      text: '',
      quotedMessageId: null,
      media: { url, mimetype: 'image/png', filename: null, size: bytes.length },
      ack: null,
      raw: null,
    });
    const dir = path.join(api.dataDir, 'media', connectionId);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'KEYMEDIA1.png'), bytes);
    fs.writeFileSync(path.join(api.dataDir, 'secret.txt'), 'secret');
  });
  afterAll(() => api.close());

  const route = () => `/connections/${connectionId}/media/KEYMEDIA1.png`;

  it('streams the whole file with type, length and Accept-Ranges', async () => {
    const res = await get(route());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('content-length')).toBe('1000');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    const byMessage = await get(`/connections/${connectionId}/messages/${messageId}/media?chatId=${ALICE}`);
    expect(Buffer.from(await byMessage.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('answers media.url as an absolute URL on the API address, which downloads the file as given', async () => {
    const res = await get(`/connections/${connectionId}/messages/${messageId}?chatId=${ALICE}`);
    const message = (await res.json()) as { media: { url: string } };
    expect(message.media.url).toBe(`${api.baseUrl}/connections/${connectionId}/media/KEYMEDIA1.png`);
    const file = await fetch(message.media.url, { headers: { authorization: `Bearer ${user.token}` } });
    expect(Buffer.from(await file.arrayBuffer()).equals(bytes)).toBe(true);
    // The column keeps the file name, not an address (the URL depends on where the service is reached).
    const column = api.store.db.prepare('SELECT media FROM messages WHERE id = ?').get(messageId) as { media: string };
    expect(JSON.parse(column.media)).toEqual({ file: 'KEYMEDIA1.png', mimetype: 'image/png', filename: null, size: bytes.length });
  });

  it('answers rows stored with the old relative path with the absolute URL too', async () => {
    const legacy = { url: `/api/connections/${connectionId}/media/KEYMEDIA1.png`, mimetype: 'image/png', filename: null, size: 1000 };
    api.store.db.prepare('UPDATE messages SET media = ? WHERE id = ?').run(JSON.stringify(legacy), messageId);
    const res = await get(`/connections/${connectionId}/chats/${ALICE}/messages`);
    const page = (await res.json()) as { messages: Array<{ media: { url: string } }> };
    expect(page.messages[0]!.media).toEqual({ ...legacy, url: `${api.baseUrl}/connections/${connectionId}/media/KEYMEDIA1.png` });
  });

  it.each([
    ['bytes=0-0', 0, 0],
    ['bytes=100-199', 100, 199],
    ['bytes=990-', 990, 999],
    ['bytes=-10', 990, 999],
    ['bytes=900-5000', 900, 999],
  ])('serves %s as 206', async (range, start, end) => {
    const res = await get(route(), { range });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/1000`);
    expect(res.headers.get('content-length')).toBe(String(end - start + 1));
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(start, end + 1))).toBe(true);
  });

  it.each(['bytes=1000-', 'bytes=5-2', 'bytes=-0', 'items=0-1', 'bytes=-'])('answers 416 for %s', async (range) => {
    const res = await get(route(), { range });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe('bytes */1000');
  });

  it('serves several ranges as the whole file', async () => {
    const res = await get(route(), { range: 'bytes=0-1,5-6' });
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(1000);
  });

  it('answers HEAD with the headers only', async () => {
    const res = await get(route(), {}, user.token, 'HEAD');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe('1000');
  });

  it('needs the Bearer token and the owner', async () => {
    expect((await fetch(api.baseUrl + route())).status).toBe(401);
    expect((await get(route(), {}, other.token)).status).toBe(403);
  });

  it.each(['..%2Fsecret.txt', '..%2F..%2Fsecret.txt', '%2E%2E', 'a%00b.png', '..%5Csecret.txt', '.hidden', 'x%2Fy.png'])(
    'refuses the file name %s',
    async (name) => {
      const res = await get(`/connections/${connectionId}/media/${name}`);
      // fetch() itself resolves a `%2E%2E` segment (the request then misses the route: 404); the rest reach us.
      expect(res.status).toBe(name === '%2E%2E' ? 404 : 400);
      expect(await res.text()).not.toContain('secret');
    },
  );

  it('answers 404 Media not found for unknown files and messages without media', async () => {
    const res = await get(`/connections/${connectionId}/media/NOPE.png`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ message: 'Media not found' });
    const wrongChat = await get(`/connections/${connectionId}/messages/${messageId}/media?chatId=15559999@s.whatsapp.net`);
    expect(wrongChat.status).toBe(404);
    const noChat = await get(`/connections/${connectionId}/messages/${messageId}/media`);
    expect(noChat.status).toBe(400);
  });
});
