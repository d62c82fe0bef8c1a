/**
 * Webhooks end to end: the real `switchboard serve --sandbox --allow-lan-webhooks` process, a connection paired
 * through the sandbox, and a consumer on 127.0.0.1 that verifies every signature with `standardwebhooks`.
 * Engine events (session.status, message, message.sent, message.ack) arrive as webhooks; `/events?after=` and
 * `/ws?after=` return exactly the events missed while a client was away.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';
import { startConsumer, type Consumer } from '../integration/webhooks-consumer.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';

interface Frame {
  event: string;
  seq: number;
  payload: Record<string, unknown>;
}

describe('webhooks end to end with the sandbox', () => {
  let dir: string;
  let service: ServiceProcess;
  let token: string;
  let consumer: Consumer;
  let connectionId: string;
  let sessionName: string;
  let hookId: string;

  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${service.apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON of several shapes
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
  };
  const sandbox = async (route: string, body: unknown) =>
    fetch(`${service.sandboxUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const events = (type: string) => consumer.on('/all').filter((r) => r.verified?.event === type);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-wh-e2e-'));
    consumer = await startConsumer();
    service = await startServe(['--sandbox', '--allow-lan-webhooks', '--webhook-retry-delays', '0,50,100,200,400', '--typing-delay-ms', '0', '--port', '0', '--data-dir', dir]);
    token = (await runCli(['token', 'create', '--user', 'wh', '--data-dir', dir])).stdout.trim();
  });

  afterAll(async () => {
    await service?.stop('SIGKILL');
    await consumer?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('delivers session.status while pairing, then message, message.sent and message.ack', { timeout: 60_000 }, async () => {
    const c = await api('POST', '/connections', {});
    connectionId = c.body.id;
    sessionName = c.body.sessionName;
    const hook = await api('POST', `/connections/${connectionId}/webhooks`, { url: consumer.url('/all'), events: ['*'] });
    expect(hook.status).toBe(201);
    hookId = hook.body.id;
    consumer.secret('/all', hook.body.signingSecret);
    // The service's own port is refused even with LAN webhooks on.
    const self = await api('POST', `/connections/${connectionId}/webhooks`, { url: `${service.apiUrl}/`, events: ['*'] });
    expect(self.status).toBe(400);
    expect(self.body.message).toMatch(/own port/);
    // The first QR may show before the webhook existed (~80 ms after the connection was created): restart the
    // pairing, so the whole status sequence happens with the webhook in place.
    expect((await api('POST', `/connections/${connectionId}/restart`)).status).toBe(200);

    const qr = await waitFor('QR', async () => {
      const r = await api('GET', `/connections/${connectionId}/qr?format=text`);
      return r.status === 200 ? (r.body.value as string) : undefined;
    });
    expect((await sandbox(`/accounts/${encodeURIComponent(PHONE)}/scan`, { qr })).status).toBe(200);
    await waitFor('online webhook', () => events('session.status').find((r) => r.verified!.payload.status === 'online'), { timeoutMs: 30_000 });
    const statuses = events('session.status').map((r) => r.verified!.payload);
    expect(statuses.find((p) => p.status === 'scan_qr')).toMatchObject({ status: 'scan_qr', previous: expect.any(String) });
    // Order across events is best effort (concurrent deliveries); each payload is { status, previous, reason }.
    expect(statuses.find((p) => p.status === 'online')).toEqual({ status: 'online', previous: expect.any(String), reason: expect.toBeOneOf([null, expect.any(String)]) });
    expect(consumer.on('/all').every((r) => r.verified && r.verified.session === sessionName)).toBe(true);

    expect((await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'hello webhook' })).status).toBe(201);
    const msg = await waitFor('message webhook', () => events('message').find((r) => r.verified!.payload.body === 'hello webhook'));
    expect(msg.verified!.payload).toMatchObject({ id: expect.stringMatching(/^false_/), from: ALICE_JID, body: 'hello webhook', timestamp: expect.any(Number), hasMedia: false });

    const sent = await api('POST', `/connections/${connectionId}/send`, { chatId: ALICE, text: 'reply via api', skipPresence: true });
    expect(sent.status).toBe(201);
    await waitFor('message.sent webhook', () => events('message.sent').find((r) => r.verified!.payload.id === sent.body.id));
    const ack = await waitFor('message.ack webhook', () => events('message.ack').find((r) => r.verified!.payload.id === sent.body.id));
    expect(ack.verified!.payload).toMatchObject({ id: sent.body.id, ack: expect.any(Number) });
    expect([2, 3, 4, 5]).toContain(ack.verified!.payload.ack);

    // Every delivery verified; the log shows them delivered on the first attempt.
    expect(consumer.on('/all').every((r) => r.error === undefined)).toBe(true);
    const logs = await api('GET', `/webhooks/${hookId}/logs`);
    expect(logs.body.length).toBeGreaterThan(3);
    await waitFor('all delivered', async () => ((await api('GET', `/webhooks/${hookId}/logs`)).body.every((l: { status: string }) => l.status === 'delivered') ? true : undefined));
  });

  it('resumes /events and /ws after a disconnect with exactly the missed events, in order', { timeout: 30_000 }, async () => {
    const frames: Frame[] = [];
    const ws = new WebSocket(`${service.apiUrl.replace(/^http/, 'ws')}/ws?token=${token}`);
    ws.on('message', (d) => frames.push(JSON.parse(d.toString()) as Frame));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'before disconnect' });
    await waitFor('frame', () => frames.find((f) => f.payload.body === 'before disconnect'));
    const last = frames.at(-1)!.seq;
    ws.close();

    const texts = ['missed 1', 'missed 2', 'missed 3'];
    for (const text of texts) await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text });
    const page = await waitFor('missed events in /events', async () => {
      const r = await api('GET', `/events?after=${last}&events=message`);
      return r.body.events.length >= 3 ? r.body : undefined;
    });
    expect(page.events.map((e: Frame) => e.payload.body)).toEqual(texts);
    const all = (await api('GET', `/events?after=${last}`)).body.events as Frame[];

    const resumed: Frame[] = [];
    const ws2 = new WebSocket(`${service.apiUrl.replace(/^http/, 'ws')}/ws?token=${token}&after=${last}`);
    ws2.on('message', (d) => resumed.push(JSON.parse(d.toString()) as Frame));
    await waitFor('replayed frames', () => (resumed.length >= all.length ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    ws2.close();
    expect(resumed.slice(0, all.length).map((f) => f.seq)).toEqual(all.map((e) => e.seq));
    expect(resumed.map((f) => f.seq)).toEqual([...resumed.map((f) => f.seq)].sort((a, b) => a - b));
    expect(new Set(resumed.map((f) => f.seq)).size).toBe(resumed.length);
    expect(all[0]!.seq).toBe(last + 1);
  });
});
