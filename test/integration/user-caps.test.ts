/**
 * Per-user caps (issue 20) over real sockets: open WebSocket event streams (429 past the cap, 4429 for the losers
 * of a race of simultaneous upgrades, a slot freed when a stream closes, other users unaffected) and large uploads
 * in progress (bodies over 1 MiB held open by the client: past the cap a declared-length body and a chunked one
 * both answer 429 without being read, small bodies and other users pass, and a slot comes back when an upload ends).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../helpers/wait.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const MiB = 1024 * 1024;

type Outcome = { ws: WebSocket } | { status: number; body: { message?: string } } | { closed: number; reason: string };

/** Opens a stream: the open socket, the HTTP answer that refused it, or the close that followed the upgrade. */
function openStream(url: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    let settled = false;
    ws.on('open', () => {
      // A stream refused after the upgrade is closed at once; wait a moment for that close before calling it open.
      ws.once('close', (code, reason) => !settled && ((settled = true), resolve({ closed: code, reason: reason.toString() })));
      ws.ping();
      ws.once('pong', () => !settled && ((settled = true), resolve({ ws })));
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { message?: string } }));
    });
    ws.on('error', (err) => !settled && reject(err));
  });
}

const isOpen = (o: Outcome): o is { ws: WebSocket } => 'ws' in o;

describe('per-user cap on event streams', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;
  const url = (u: TestUser) => `${api.baseUrl.replace(/^http/, 'ws')}/ws?token=${u.token}`;

  beforeAll(async () => {
    api = await startTestApi({ app: { userCaps: { maxStreams: 2 } } });
    alice = api.user('alice');
    bob = api.user('bob');
  });
  afterAll(() => api.close());

  it('past the cap an upgrade answers 429 with a clear message; other users keep theirs; closing frees a slot', async () => {
    const first = await openStream(url(alice));
    const second = await openStream(url(alice));
    expect([isOpen(first), isOpen(second)]).toEqual([true, true]);
    const third = await openStream(url(alice));
    expect(third).toEqual({
      status: 429,
      body: {
        statusCode: 429,
        error: 'Too Many Requests',
        message: 'Too many open event streams for this user (limit 2); close one before opening another',
      },
    });
    const bobs = await openStream(url(bob));
    expect(isOpen(bobs)).toBe(true);

    (first as { ws: WebSocket }).ws.close();
    const again = await waitFor('a freed stream slot', async () => {
      const o = await openStream(url(alice));
      return isOpen(o) ? o : undefined;
    });
    for (const o of [second, bobs, again]) (o as { ws: WebSocket }).ws.close();
  });

  it('simultaneous upgrades never leave more than the cap open', async () => {
    const carol = api.user('carol');
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => openStream(url(carol))));
    const open = outcomes.filter(isOpen);
    expect(open).toHaveLength(2);
    for (const o of outcomes.filter((x) => !isOpen(x))) {
      if ('status' in o) expect(o.status).toBe(429);
      else expect(o).toMatchObject({ closed: 4429, reason: expect.stringMatching(/^Too many open event streams/) });
    }
    for (const o of open) o.ws.close();
  });
});

describe('per-user cap on large uploads', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;
  let path: (u: TestUser) => string;

  beforeAll(async () => {
    api = await startTestApi(); // the defaults: 2 bodies over 1 MiB at once
    alice = api.user('alice');
    bob = api.user('bob');
    const conns = new Map([alice, bob].map((u) => [u.id, api.connection(u.id).id]));
    path = (u) => `/api/connections/${conns.get(u.id)}/send-document`;
  });
  afterAll(() => api.close());

  const port = () => Number(new URL(api.baseUrl).port);

  /** Starts an upload that declares `length` bytes (or is chunked) and sends only the first 64 KiB for now. */
  function holdUpload(u: TestUser, opts: { length?: number; chunked?: boolean }) {
    const headers: Record<string, string | number> = { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' };
    if (opts.length !== undefined) headers['content-length'] = opts.length;
    const req = http.request({ host: '127.0.0.1', port: port(), method: 'POST', path: path(u), headers });
    const response = new Promise<{ status: number; body: string }>((resolve) => {
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.write(Buffer.alloc(64 * 1024, 0x61));
    return { req, response };
  }

  /** Sends a whole body of `bytes` (not JSON: a 400 once read) and returns the status and message. */
  async function upload(u: TestUser, bytes: number) {
    const res = await fetch(`${api.baseUrl.replace(/\/api$/, '')}${path(u)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' },
      body: Buffer.alloc(bytes, 0x61),
    });
    return { status: res.status, body: (await res.json()) as { message: string }, retryAfter: res.headers.get('retry-after') };
  }

  it('two large uploads in progress: a third answers 429 unread; small bodies and other users pass; a slot comes back', async () => {
    const held = [holdUpload(alice, { length: 4 * MiB }), holdUpload(alice, { length: 4 * MiB })];
    const refused = await waitFor('the cap to be reached', async () => {
      const r = await upload(alice, 2 * MiB);
      return r.status === 429 ? r : undefined;
    });
    expect(refused.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message:
        'Too many large uploads in progress for this user (limit 2 bodies over 1 MiB at once); retry when one has finished',
    });
    expect(refused.retryAfter).toBe('1');
    expect((await upload(alice, 512 * 1024)).status).toBe(400); // small: read (and refused as bad JSON)
    expect((await upload(bob, 2 * MiB)).status).toBe(400);

    // A chunked body is refused once it passes 1 MiB.
    const chunked = holdUpload(alice, { chunked: true });
    for (let i = 0; i < 20 && !chunked.req.destroyed; i++) chunked.req.write(Buffer.alloc(128 * 1024, 0x61));
    expect(await chunked.response).toMatchObject({ status: 429 });
    chunked.req.destroy();

    // An upload that ends (here: aborted by its client) gives its slot back.
    held[0]!.req.destroy();
    await waitFor('a freed upload slot', async () => ((await upload(alice, 2 * MiB)).status === 400 ? true : undefined));
    held[1]!.req.end(Buffer.alloc(4 * MiB - 64 * 1024, 0x61));
    expect((await held[1]!.response).status).toBe(400);
    // Uploads that complete normally give their slots back too (keep-alive connections included).
    for (let i = 0; i < 4; i++) expect((await upload(alice, 2 * MiB)).status).toBe(400);
  });
});
