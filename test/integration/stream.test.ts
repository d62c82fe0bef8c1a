/**
 * The WebSocket event stream over a real socket: authentication before the upgrade, frames, replay with
 * `after` merged with live events without gaps or duplicates, per-user scoping, heartbeat, the slow-consumer
 * close (1013) and the shutdown close (1001).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../helpers/wait.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

interface Frame {
  event: string;
  connectionId: string | null;
  payload: Record<string, unknown>;
  timestamp: string;
  seq: number;
}

type Opened = { ws: WebSocket; frames: Frame[]; closed: Promise<{ code: number; reason: string }> };
type Refused = { status: number; body: unknown };

/** Opens a stream; resolves with the socket (collecting frames) or with the HTTP answer that refused it. */
function openStream(url: string, headers: Record<string, string> = {}): Promise<Opened | Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const frames: Frame[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Frame));
    ws.on('open', () => resolve({ ws, frames, closed }));
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    ws.on('error', reject);
  });
}

function opened(r: Opened | Refused): Opened {
  if (!('ws' in r)) throw new Error(`stream refused: ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

const seqs = (frames: Frame[]) => frames.map((f) => f.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('event stream', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;
  let wsBase: string;
  const emit = (user: TestUser, n: number, extra: Record<string, unknown> = {}) =>
    api.events.append(user.id, null, 'test.event', { n, ...extra });

  beforeAll(async () => {
    api = await startTestApi({ streamLimits: { pageSize: 10, pingIntervalMs: 100 } });
    alice = api.user('alice');
    bob = api.user('bob');
    wsBase = api.baseUrl.replace(/^http/, 'ws') + '/ws';
  });
  afterAll(() => api.close());

  describe('authentication before the upgrade', () => {
    it.each([
      ['no token', '', {}, 'Missing or invalid Authorization header'],
      ['an empty token', '?token=', {}, 'Missing or invalid Authorization header'],
      ['an unknown token', '?token=wh_nope', {}, 'Invalid or revoked API token'],
      [
        'a bad header even with a good query token',
        '?token=GOOD',
        { authorization: 'Basic x' },
        'Missing or invalid Authorization header',
      ],
    ])('401 for %s', async (_case, query, headers, message) => {
      const res = await openStream(wsBase + query.replace('GOOD', alice.token), headers);
      expect(res).toEqual({ status: 401, body: { statusCode: 401, error: 'Unauthorized', message } });
    });

    it('accepts the Authorization header instead of the query token', async () => {
      const { ws } = opened(await openStream(wsBase, { authorization: `Bearer ${alice.token}` }));
      ws.close();
    });

    it('400 for an after beyond the end of the log', async () => {
      const last = api.store.events.lastSeq(alice.id);
      const res = await openStream(`${wsBase}?token=${alice.token}&after=${last + 1}`);
      expect(res).toMatchObject({
        status: 400,
        body: { message: `querystring/after is beyond the end of the event log (last seq ${last})` },
      });
      expect(await openStream(`${wsBase}?token=${alice.token}&after=-1`)).toMatchObject({ status: 400 });
    });

    it('426 for a plain GET', async () => {
      const res = await api.request('GET', '/ws', { token: alice.token });
      expect(res.status).toBe(426);
      expect(res.body).toEqual({
        statusCode: 426,
        error: 'Upgrade Required',
        message: 'This endpoint needs a WebSocket upgrade',
      });
    });
  });

  it("streams the user's live events as frames, and only theirs", async () => {
    const s = opened(await openStream(`${wsBase}?token=${alice.token}`));
    const c = api.connection(alice.id);
    // a stand-in payload (`as never`: not a full message's shape; the stream is under test)
    const logged = api.events.append(alice.id, c.id, 'message', { from: '15550101@s.whatsapp.net', body: 'hi' } as never);
    emit(bob, 1);
    await waitFor('the frame', () => (s.frames.length >= 1 ? true : undefined));
    await new Promise((r) => setTimeout(r, 50));
    expect(s.frames).toEqual([
      {
        event: 'message',
        connectionId: c.id,
        payload: { from: '15550101@s.whatsapp.net', body: 'hi' },
        timestamp: logged.timestamp,
        seq: logged.seq,
      },
    ]);
    s.ws.close();
  });

  it('replays after `after` in pages, then continues live, without gaps or duplicates', async () => {
    const start = api.store.events.lastSeq(alice.id);
    for (let i = 0; i < 95; i++) emit(alice, i);
    const after = start + 7;
    const s = opened(await openStream(`${wsBase}?token=${alice.token}&after=${after}`));
    // Live events arrive while the replay (page size 10) is still running.
    for (let i = 0; i < 50; i++) {
      emit(alice, 100 + i);
      await new Promise((r) => setImmediate(r));
    }
    const end = start + 145;
    await waitFor('all frames', () => (s.frames.at(-1)?.seq === end ? true : undefined));
    expect(seqs(s.frames)).toEqual(range(after + 1, end));
    s.ws.close();
  });

  it('without `after`, starts at the end of the log', async () => {
    emit(alice, 1);
    const s = opened(await openStream(`${wsBase}?token=${alice.token}`));
    const next = emit(alice, 2);
    await waitFor('the live frame', () => (s.frames.length ? true : undefined));
    expect(seqs(s.frames)).toEqual([next.seq]);
    s.ws.close();
  });

  it('pings the client', async () => {
    const s = opened(await openStream(`${wsBase}?token=${alice.token}`));
    await new Promise<void>((resolve) => s.ws.once('ping', () => resolve()));
    s.ws.close();
  });

  it('closes a consumer that stops reading with 1013 and the seq to resume after', async () => {
    // Its own service, with a heartbeat slow enough not to drop the silent client first.
    const api = await startTestApi({ streamLimits: { maxBufferedBytes: 64 * 1024, pingIntervalMs: 60_000 } });
    onTestFinished(() => api.close());
    const alice = api.user('alice');
    // A raw client that completes the handshake and then stops reading, so the server's buffer grows.
    const port = new URL(api.baseUrl).port;
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.write(
      `GET /api/ws?token=${alice.token} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.pause();
    const pad = 'x'.repeat(60_000);
    for (let i = 0; i < 400 && !api.logs().includes('closing slow event stream consumer'); i++) {
      api.events.append(alice.id, null, 'test.event', { i, pad });
      await new Promise((r) => setImmediate(r));
    }
    expect(api.logs()).toContain('closing slow event stream consumer');
    // Drain what the server sent: the stream ends with a close frame carrying 1013.
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve) => {
      let tail = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        chunks.push(d);
        tail = Buffer.concat([tail, d]).subarray(-256);
        if (tail.includes('Slow consumer')) resolve();
      });
      socket.resume();
    });
    socket.destroy();
    const all = Buffer.concat(chunks);
    const at = all.lastIndexOf(Buffer.from([0x88]));
    expect(at).toBeGreaterThan(0);
    expect(all.readUInt16BE(at + 2)).toBe(1013);
    expect(all.subarray(at + 4).toString()).toMatch(/^Slow consumer; reconnect with after=\d+$/);
  });

  it('closes every stream with 1001 when the service shuts down', async () => {
    const other = await startTestApi();
    const user = other.user('zed');
    const url = `${other.baseUrl.replace(/^http/, 'ws')}/ws`;
    const s = opened(await openStream(`${url}?token=${user.token}`));
    // Upgrades refused with plain HTTP must not keep their sockets (and the shutdown) waiting.
    expect(await openStream(url)).toMatchObject({ status: 401 });
    expect(await openStream(url.replace('/ws', '/connections'))).toMatchObject({ status: 401 });
    await other.close();
    expect(await s.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
  });
});
