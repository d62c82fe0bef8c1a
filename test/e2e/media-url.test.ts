/**
 * `media.url` end to end (issue 17 item 1), with the real `switchboard serve` process and a sandbox in its own
 * process: a contact sends an image, and the REST message, the WebSocket `message` event, the webhook body and the
 * JSONL/HTML exports carry the same absolute URL, which Node's `fetch(media.url, { headers: { Authorization } })`
 * downloads byte for byte. By default the URL is built from the `API:` line; restarted with `--public-url` behind a
 * small reverse proxy (`/sb/api/*` → the service's `/api/*`), every answer names the proxy instead — also for the
 * message stored before — and the proxy's Host is accepted without `--allowed-hosts`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { startExternalSandboxRig, type ExternalSandboxRig } from '../helpers/external-sandbox.ts';
import type { ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';
import { startConsumer, type Consumer } from '../integration/webhooks-consumer.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';

const pngBytes = (seed: number) => pngBytesOf(6, 6, seed);

interface Frame {
  event: string;
  payload: { id?: string; media?: { url: string } };
}

/** A reverse proxy on 127.0.0.1 that forwards `/sb/api/*` to `<target>/api/*`, Host header as received. */
async function startProxy(): Promise<{ port: number; target: (origin: string) => void; close(): Promise<void> }> {
  let target = '';
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').replace(/^\/sb\/api(\/|$)/, '/api$1');
    const upstream = http.request(`${target}${path}`, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    target: (origin) => (target = origin),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('media.url: one absolute URL in REST, WebSocket, webhooks and exports', { timeout: 120_000 }, () => {
  let rig: ExternalSandboxRig;
  let consumer: Consumer;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let service: ServiceProcess;
  let connectionId: string;
  const sockets: WebSocket[] = [];
  let frames: Frame[] = [];
  const call = (method: string, route: string, body?: unknown) => rig.call(service.apiUrl, method, route, body);
  const auth = () => ({ authorization: `Bearer ${rig.token}` });

  const listen = async () => {
    frames = [];
    const ws = new WebSocket(`${service.apiUrl.replace(/^http/, 'ws')}/ws?token=${rig.token}`);
    ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Frame));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    sockets.push(ws);
  };

  /** Alice sends `image`; resolves with the message id and the URL of each place it shows up. */
  const receiveImage = async (image: Buffer, caption: string) => {
    const sent = await rig.call(rig.sandbox.url, 'POST', `/accounts/${encodeURIComponent(ALICE)}/messages`, {
      to: PHONE,
      image: { base64: image.toString('base64'), mimetype: 'image/png', caption },
    }, false);
    expect(sent.status).toBe(201);
    const id = `false_${ALICE_JID}_${sent.body.id}`;
    const frame = await waitFor('the message event', () => frames.find((f) => f.event === 'message' && f.payload.id === id));
    const webhook = await waitFor('the webhook delivery', () =>
      consumer.on('/hook').find((r) => r.verified?.event === 'message' && r.verified.payload.id === id),
    );
    const rest = await call('GET', `/connections/${connectionId}/messages/${encodeURIComponent(id)}?chatId=${ALICE_JID}`);
    expect(rest.status).toBe(200);
    return {
      id,
      rest: rest.body.media.url as string,
      ws: frame.payload.media!.url,
      webhook: (webhook.verified!.payload.media as { url: string }).url,
    };
  };

  /** The URLs the JSONL and HTML exports give the message `id`. */
  const exported = async (id: string) => {
    const jsonl = await fetch(`${service.apiUrl}/connections/${connectionId}/chats/${ALICE_JID}/export?format=jsonl`, { headers: auth() });
    const line = (await jsonl.text()).trim().split('\n').map((l) => JSON.parse(l) as { id: string; media: { url: string } | null })
      .find((m) => m.id === id);
    const html = await (await fetch(`${service.apiUrl}/connections/${connectionId}/chats/${ALICE_JID}/export?format=html`, { headers: auth() })).text();
    const attr = new RegExp(`id="${id.replace(/[.]/g, '\\.')}"><div class="who">[^<]*</div><div class="media" data-media-url="([^"]+)"`).exec(html)?.[1];
    return { jsonl: line?.media?.url, html: attr?.replace(/&amp;/g, '&') };
  };

  /** Downloads `url` exactly as given with the Authorization header. */
  const download = async (url: string) => {
    const res = await fetch(url, { headers: auth() });
    expect(res.status).toBe(200);
    return Buffer.from(await res.arrayBuffer());
  };

  beforeAll(async () => {
    consumer = await startConsumer();
    proxy = await startProxy();
    rig = await startExternalSandboxRig({ prefix: 'sb-media-url-', user: 'media', serveArgs: ['--allow-lan-webhooks', '--typing-delay-ms', '0'] });
    service = await rig.serve();
    await listen();
    const c = await call('POST', '/connections', {});
    connectionId = c.body.id as string;
    const hook = await call('POST', `/connections/${connectionId}/webhooks`, { url: consumer.url('/hook'), events: ['message'] });
    expect(hook.status).toBe(201);
    consumer.secret('/hook', hook.body.signingSecret as string);
    const qr = await rig.qrText(service, connectionId);
    expect((await rig.call(rig.sandbox.url, 'POST', `/accounts/${encodeURIComponent(PHONE)}/scan`, { qr }, false)).status).toBe(200);
    await waitFor('online', async () => ((await call('GET', `/connections/${connectionId}`)).body.status === 'online' ? true : undefined), {
      timeoutMs: 30_000,
    });
  });

  afterAll(async () => {
    for (const ws of sockets) ws.close();
    await rig?.close();
    await proxy?.close();
    await consumer?.close();
  });

  let first: { id: string; file: string; image: Buffer };

  it('by default names the API: line, the same URL everywhere, and fetch(media.url) downloads the bytes', async () => {
    const image = pngBytes(1);
    const urls = await receiveImage(image, 'first');
    expect(urls.rest).toMatch(new RegExp(`^${service.apiUrl}/connections/${connectionId}/media/[A-Za-z0-9_-]+\\.png$`));
    expect(urls.ws).toBe(urls.rest);
    expect(urls.webhook).toBe(urls.rest);
    expect(await exported(urls.id)).toEqual({ jsonl: urls.rest, html: urls.rest });
    expect((await download(urls.rest)).equals(image)).toBe(true);
    first = { id: urls.id, file: urls.rest.slice(urls.rest.lastIndexOf('/') + 1), image };
  });

  it('with --public-url names that address instead, for stored and new messages, and it works through the proxy', async () => {
    await service.stop('SIGTERM');
    const publicUrl = `http://127.0.0.1:${proxy.port}/sb/api`;
    service = await rig.serve(['--public-url', publicUrl]);
    proxy.target(new URL(service.apiUrl).origin);
    await listen();
    await waitFor('online again', async () => ((await call('GET', `/connections/${connectionId}`)).body.status === 'online' ? true : undefined), {
      timeoutMs: 30_000,
    });

    // The message stored before the restart: its URL is built when REST and the exports answer.
    const old = await call('GET', `/connections/${connectionId}/messages/${encodeURIComponent(first.id)}?chatId=${ALICE_JID}`);
    const oldUrl = `${publicUrl}/connections/${connectionId}/media/${first.file}`;
    expect(old.body.media.url).toBe(oldUrl);
    expect(await exported(first.id)).toEqual({ jsonl: oldUrl, html: oldUrl });
    // Through the proxy: its Host (127.0.0.1:<proxy port>) is accepted because --public-url names it.
    expect((await download(oldUrl)).equals(first.image)).toBe(true);

    const image = pngBytes(2);
    const urls = await receiveImage(image, 'second');
    expect(urls.rest).toMatch(new RegExp(`^${publicUrl}/connections/${connectionId}/media/[A-Za-z0-9_-]+\\.png$`));
    expect(urls.ws).toBe(urls.rest);
    expect(urls.webhook).toBe(urls.rest);
    expect((await download(urls.rest)).equals(image)).toBe(true);
  });
});
