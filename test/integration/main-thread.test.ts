/**
 * The API's main thread serves every user while one user's work is heavy (issue 25 item 4), over real HTTP on
 * loopback and real SQLite files:
 * - searches and exports read on a reader thread: the main store's own heavy reads can be removed and the answers
 *   stay the same, byte for byte; and user B's request is answered while user A's export is still being produced
 *   (its batches come from the reader thread, one round trip each; on the main thread the whole export was written
 *   in one go before B's request could even be read);
 * - a user runs at most `maxExports` exports at once (429 with `retry-after`, others unaffected, the slot comes back);
 * - the routes that ask WhatsApp are paced per connection (429 with `retry-after`; other connections, users and
 *   routes unaffected; another user's connection is 403 and takes nothing from the pace);
 * - a write that cannot get the database's write lock (another connection holds it) answers 503 with `retry-after`
 *   within the main thread's wait, writes nothing, and reads keep working.
 */
import fs from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReader, heavyReads, type Reader } from '../../service/db/reader.ts';
import { MAIN_THREAD_WRITE_WAIT_MS, type Store } from '../../service/db/store.ts';
import { startService, type RunningService } from '../../service/index.ts';
import { incomingText } from '../helpers/messages.ts';
import { offlineServiceConfig, startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const CHAT = '15550101@s.whatsapp.net';
const OTHER_CHAT = '15550102@s.whatsapp.net';

/** `n` messages in `chatId` with text in several scripts (search and JSON escaping see more than ASCII). */
function seedChat(store: Store, connectionId: string, chatId: string, n: number, base = 1_700_000_000): void {
  const words = ['invoice', 'São Paulo', 'Москве', '東京タワー', 'emoji 🎉', 'quote "x" \\ back', 'harbour'];
  store.tx(() => {
    for (let i = 0; i < n; i++) {
      store.messages.upsert(connectionId, incomingText(chatId, `K${chatId.slice(0, 8)}${String(i).padStart(5, '0')}`, base + i, `message ${i} ${words[i % words.length]}`));
    }
  });
}

const threadReader = (exportBatch?: number) => (store: Store) =>
  createReader({
    file: store.db.name,
    inProcess: heavyReads(store),
    mediaBase: () => store.mediaUrls.base,
    ...(exportBatch !== undefined && { exportBatch }),
  });

/**
 * A gate the thread reader's JSONL export waits at after its first batch, until the test opens it (or 10 s pass):
 * an export produced through the reader cannot finish before the gate opens, whatever the machine's load, while an
 * export written on the main thread would not pass the gate at all and finish at once.
 */
function gatedExports(reader: Reader): { reader: Reader; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
    setTimeout(resolve, 10_000).unref();
  });
  return {
    open,
    reader: {
      ...reader,
      search: (...args) => reader.search(...args),
      messages: (...args) => reader.messages(...args),
      close: () => reader.close(),
      async *jsonl(...args) {
        let first = true;
        for await (const lines of reader.jsonl(...args)) {
          yield lines;
          if (first) await opened;
          first = false;
        }
      },
    },
  };
}

describe('searches and exports read on a reader thread', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;
  let connectionId: string;
  let gate: ReturnType<typeof gatedExports>;

  beforeAll(async () => {
    // Small export batches: an export is many round trips to the reader thread.
    api = await startTestApi({
      reader: (store) => {
        gate = gatedExports(threadReader(5)(store));
        return gate.reader;
      },
    });
    alice = api.user('alice');
    bob = api.user('bob');
    connectionId = api.connection(alice.id).id;
    api.connection(bob.id);
    seedChat(api.store, connectionId, CHAT, 148);
    // A document with media (its URL built from the API's address) and a reaction: the records' other fields.
    const doc = { ...incomingText(CHAT, 'DOC1', 1_700_001_000, 'invoice attached'), type: 'document' as const, kind: 'document' as const };
    api.store.tx(() => {
      api.store.messages.upsert(connectionId, { ...doc, media: { url: 'DOC1.pdf', mimetype: 'application/pdf', filename: 'March invoice.pdf', size: 1234 } });
      api.store.messages.upsert(connectionId, incomingText(CHAT, 'LAST', 1_700_001_001, 'the last one'));
      api.store.messages.react(connectionId, doc.id, CHAT, '👍', 1_700_001_002);
    });
    seedChat(api.store, connectionId, OTHER_CHAT, 20, 1_600_000_000);
  });
  afterAll(() => api.close());

  it("answers user B while user A's export is still being produced", async () => {
    // Server side: the order in which responses are completely handed to the OS.
    const finished: string[] = [];
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const what = req.url?.includes('/export') ? 'A export' : 'B connections';
      res.once('finish', () => {
        finished.push(what);
        if (what === 'B connections') gate.open();
      });
    };
    api.app.server.on('request', onRequest);
    try {
      let b: Promise<Response> | undefined;
      const body = await new Promise<string>((resolve, reject) => {
        const url = `${api.baseUrl}/connections/${connectionId}/chats/${CHAT}/export?format=jsonl`;
        http
          .get(url, { headers: { authorization: `Bearer ${alice.token}` } }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              // The export has begun: B asks for its connections now.
              b ??= fetch(`${api.baseUrl}/connections`, { headers: { authorization: `Bearer ${bob.token}` } });
              text += chunk;
            });
            res.on('end', () => resolve(text));
            res.on('error', reject);
          })
          .on('error', reject);
      });
      const bAnswer = await b!;
      expect(bAnswer.status).toBe(200);
      expect(((await bAnswer.json()) as unknown[]).length).toBe(1);
      expect(body.trimEnd().split('\n')).toHaveLength(150);
      expect(finished).toEqual(['B connections', 'A export']);
    } finally {
      api.app.server.off('request', onRequest);
    }
  });

  it("answers the same bytes with the main thread's store unable to search or read a chat", async () => {
    const store = api.store;
    // What the main thread read before: the export's lines and the search page, built from the store here.
    const expectedJsonl = [...store.messages.iterate(connectionId, CHAT)].map((m) => `${JSON.stringify(m)}\n`).join('');
    expect(expectedJsonl).toContain(`"url":"${api.baseUrl}/connections/${connectionId}/media/DOC1.pdf"`);
    expect(expectedJsonl).toContain('"emoji":"👍"');
    const hits = store.search.search('invoice', { connectionIds: [connectionId] }, { limit: 20, order: 'recent' });
    const expectedSearch = {
      results: hits.hits.map((h) => {
        const message = store.messages.get(h.connectionId, h.messageId)!;
        return { message, snippet: h.snippet, chatName: store.search.chatName(h.connectionId, message.chatId) };
      }),
      nextBefore: hits.nextBefore,
    };
    expect(expectedSearch.results).toHaveLength(20);
    expect(expectedSearch.nextBefore).not.toBeNull();

    const originals = { iterate: store.messages.iterate, range: store.messages.range, get: store.messages.get, search: store.search.search };
    const refuse = () => {
      throw new Error('a heavy read ran on the main thread');
    };
    Object.assign(store.messages, { iterate: refuse, range: refuse, get: refuse });
    Object.assign(store.search, { search: refuse });
    try {
      const exported = await fetch(`${api.baseUrl}/connections/${connectionId}/chats/${CHAT}/export?format=jsonl`, {
        headers: { authorization: `Bearer ${alice.token}` },
      });
      expect(exported.status).toBe(200);
      expect(await exported.text()).toBe(expectedJsonl);

      const found = await api.request<typeof expectedSearch>('GET', `/connections/${connectionId}/search?q=invoice`, { token: alice.token });
      expect(found.status).toBe(200);
      expect(found.body).toEqual(JSON.parse(JSON.stringify(expectedSearch)));

      const html = await fetch(`${api.baseUrl}/connections/${connectionId}/chats/${OTHER_CHAT}/export?format=html`, {
        headers: { authorization: `Bearer ${alice.token}` },
      });
      expect(html.status).toBe(200);
      const page = await html.text();
      expect(page.match(/class="row"/g)).toHaveLength(20);
      expect(page).toContain('20 messages · exported by Switchboard');

      const malformed = await api.request<{ message: string }>('GET', `/connections/${connectionId}/search?q=${encodeURIComponent('"open')}`, { token: alice.token });
      expect(malformed.status).toBe(400); // the reader thread's 400 keeps its status and message
      expect(malformed.body.message).toMatch(/quote/i);
    } finally {
      Object.assign(store.messages, { iterate: originals.iterate, range: originals.range, get: originals.get });
      Object.assign(store.search, { search: originals.search });
    }
  });
});

describe('chat exports in progress per user', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;
  let aliceConnection: string;
  let bobConnection: string;
  /** Exports of CHAT stop after their first line until this resolves. */
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));

  beforeAll(async () => {
    api = await startTestApi({
      app: { userCaps: { maxExports: 1 } },
      reader: (store) => {
        const real: Reader = createReader({ file: store.db.name, inProcess: heavyReads(store), mediaBase: () => store.mediaUrls.base });
        return {
          ...real,
          async *jsonl(connectionId, chatId, range) {
            let first = true;
            for await (const text of real.jsonl(connectionId, chatId, range)) {
              yield text;
              if (first && chatId === CHAT) await held;
              first = false;
            }
          },
        };
      },
    });
    alice = api.user('alice');
    bob = api.user('bob');
    aliceConnection = api.connection(alice.id).id;
    bobConnection = api.connection(bob.id).id;
    for (const c of [aliceConnection, bobConnection]) {
      seedChat(api.store, c, CHAT, 10);
      seedChat(api.store, c, OTHER_CHAT, 3, 1_600_000_000);
    }
  });
  afterAll(() => api.close());

  const exportOf = (user: TestUser, connectionId: string, chatId: string) =>
    fetch(`${api.baseUrl}/connections/${connectionId}/chats/${chatId}/export?format=jsonl`, { headers: { authorization: `Bearer ${user.token}` } });

  it('answers 429 with retry-after past the cap, lets other users export, and frees the slot when an export ends', async () => {
    const first = await exportOf(alice, aliceConnection, CHAT); // headers and a first line; the rest is held
    expect(first.status).toBe(200);

    const second = await exportOf(alice, aliceConnection, OTHER_CHAT);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1');
    expect(await second.json()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'Too many chat exports in progress for this user (limit 1 at once); retry when one has finished',
    });

    const bobs = await exportOf(bob, bobConnection, OTHER_CHAT);
    expect(bobs.status).toBe(200);
    expect((await bobs.text()).trimEnd().split('\n')).toHaveLength(3);

    release();
    expect((await first.text()).trimEnd().split('\n')).toHaveLength(10);
    let again: Response | undefined;
    for (let i = 0; i < 50 && again?.status !== 200; i++) {
      if (again) await new Promise((r) => setTimeout(r, 20)); // the slot is freed when the response closes
      again = await exportOf(alice, aliceConnection, OTHER_CHAT);
      if (again.status !== 200) await again.text();
    }
    expect(again!.status).toBe(200);
    expect((await again!.text()).trimEnd().split('\n')).toHaveLength(3);
  });
});

describe('the pace of the routes that ask WhatsApp', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    api = await startTestApi({ app: { waQueryPace: { max: 3, windowMs: 60_000 } } });
    alice = api.user('alice');
    bob = api.user('bob');
  });
  afterAll(() => api.close());

  it('answers 429 with retry-after once a connection used its pace; other connections, users and routes go on', async () => {
    const c = api.connection(alice.id).id;
    const other = api.connection(alice.id).id;
    const bobs = api.connection(bob.id).id;
    // Another user's connection: 403, and nothing taken from that connection's pace.
    expect((await api.request('GET', `/connections/${bobs}/blocklist`, { token: alice.token })).status).toBe(403);
    // Three queries (the connection is not online, so each is the engine's 409: the pace let them through).
    expect((await api.request('GET', `/connections/${c}/blocklist`, { token: alice.token })).status).toBe(409);
    expect((await api.request('POST', `/connections/${c}/contacts/check`, { token: alice.token, body: { phoneNumbers: ['+15550101'] } })).status).toBe(409);
    expect((await api.request('GET', `/connections/${c}/groups`, { token: alice.token })).status).toBe(409);
    for (const route of [`/connections/${c}/contacts/${CHAT}/profile`, `/connections/${c}/me`, `/connections/${c}/groups/123456@g.us`, `/connections/${c}/blocklist`]) {
      const paced = await api.request<{ message: string }>('GET', route, { token: alice.token });
      expect(paced.status, route).toBe(429);
      expect(Number(paced.headers.get('retry-after'))).toBeGreaterThanOrEqual(19); // one request per 20 s
      expect(Number(paced.headers.get('retry-after'))).toBeLessThanOrEqual(20);
      expect(paced.body).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        message: `Too many WhatsApp queries for this connection (limit 3 per minute); retry in ${paced.headers.get('retry-after')} seconds`,
      });
    }
    // Routes that do not ask WhatsApp, the user's other connection and another user: unaffected.
    expect((await api.request('GET', `/connections/${c}/contacts`, { token: alice.token })).status).toBe(200);
    expect((await api.request('GET', `/connections/${other}/blocklist`, { token: alice.token })).status).toBe(409);
    expect((await api.request('GET', `/connections/${bobs}/blocklist`, { token: bob.token })).status).toBe(409);
  });

  it('documents the 429 of the paced routes in the OpenAPI document', async () => {
    const doc = (await api.request<{ paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> }>('GET', '/openapi.json')).body;
    for (const [p, method] of [
      ['/connections/{id}/contacts/check', 'post'],
      ['/connections/{id}/groups', 'get'],
      ['/connections/{id}/groups/{groupId}', 'get'],
      ['/connections/{id}/groups/{groupId}/invite-code', 'get'],
      ['/connections/{id}/me', 'get'],
      ['/connections/{id}/contacts/{jid}/profile', 'get'],
      ['/connections/{id}/blocklist', 'get'],
    ] as const) {
      expect(doc.paths[p]?.[method]?.responses['429']?.description, `${method} ${p}`).toContain('--wa-query-pace');
    }
    expect(doc.paths['/connections/{id}/chats/{chatId}/export']?.get?.responses['429']?.description).toContain('--max-exports-per-user');
    expect(doc.paths['/connections/{id}']?.patch?.responses['503']?.description).toContain('locked');
  });
});

describe('a write while another connection holds the database write lock', () => {
  let dataDir: string;
  let service: RunningService;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-write-busy-'));
    service = await startService(offlineServiceConfig(dataDir), { logger: pino({ level: 'silent' }), openKeychain: null });
  });
  afterAll(async () => {
    await service?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 503 with retry-after within the main thread’s wait, changes nothing, and reads still answer', async () => {
    const token = await service.issueLocalToken('alice', 'test');
    const unused = await service.issueLocalToken('alice', 'first used while locked');
    const call = (method: string, route: string, body?: unknown, bearer = token) =>
      fetch(`${service.apiUrl}${route}`, {
        method,
        headers: { authorization: `Bearer ${bearer}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    const created = await call('POST', '/connections', { name: 'before' });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };

    // Another connection to the file (another process, a tool) takes SQLite's write lock and keeps it.
    const other = new Database(path.join(dataDir, 'switchboard.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      const started = performance.now();
      const res = await call('PATCH', `/connections/${id}`, { name: 'after' });
      const waited = performance.now() - started;
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The database is busy (another writer holds its write lock): nothing was changed; retry in a moment',
      });
      expect(waited).toBeGreaterThanOrEqual(MAIN_THREAD_WRITE_WAIT_MS * 0.9);
      expect(waited).toBeLessThan(5_000); // SQLite's default busy timeout, which the main thread no longer waits

      // A read still answers, also with a token used for the first time (its record of use is skipped, not refused).
      const list = await call('GET', '/connections', undefined, unused);
      expect(list.status).toBe(200);
      expect(((await list.json()) as Array<{ name: string }>)[0]!.name).toBe('before');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    const after = (await (await call('GET', `/connections/${id}`)).json()) as { name: string };
    expect(after.name).toBe('before');
    const retried = await call('PATCH', `/connections/${id}`, { name: 'after' });
    expect(retried.status).toBe(200);
    expect(((await retried.json()) as { name: string }).name).toBe('after');
  });
});
