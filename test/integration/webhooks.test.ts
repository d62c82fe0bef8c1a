/**
 * Webhooks through the real API and dispatcher, in process: CRUD and ownership, URL policy, signed delivery
 * verified with `standardwebhooks`, subscriptions, pause/resume, delete, the 100-entry log, retries with a stable
 * webhook-id, failure after 5 attempts, 410, redirects not followed, Retry-After, per-webhook isolation, test
 * events, replay, `/events?after=` paging and the `events=` WebSocket filter, and retention.
 * Events are appended straight to the log (the sandbox end-to-end test drives them through the engine).
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectionRow } from '../../service/db/connections.ts';
import { startRetention } from '../../service/events/retention.ts';
import { WebhookDispatcher } from '../../service/webhooks/dispatcher.ts';
import { OutboundPolicy, classifyAddress } from '../../service/net/outbound.ts';
import { waitFor } from '../helpers/wait.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';
import { startConsumer, type Consumer } from './webhooks-consumer.ts';

interface Hook {
  id: string;
  sessionId: string;
  url: string;
  events: string[];
  signingSecret: string;
  active: boolean;
  disabledReason: string | null;
}
interface Log {
  id: string;
  eventType: string;
  status: string;
  attempts: number;
  deliveredAt: string | null;
  webhookMessageId: string;
  lastStatusCode: number | null;
  lastError: string | null;
  payload: { event: string; session: string; payload: Record<string, unknown> };
}

describe('webhooks (in-process API + dispatcher)', () => {
  let api: TestApi;
  let consumer: Consumer;
  let dispatcher: WebhookDispatcher;
  let alice: TestUser;
  let bob: TestUser;
  let conn: ConnectionRow;

  beforeAll(async () => {
    api = await startTestApi();
    api.store.webhooks.setAllowLanSetting(true); // the operator setting in the settings table
    consumer = await startConsumer();
    const policy = new OutboundPolicy({ allowLan: false, allowLanSetting: () => api.store.webhooks.allowLanSetting() });
    dispatcher = new WebhookDispatcher({
      store: api.store,
      outbox: api.outbox,
      logger: api.app.log,
      policy,
      retryDelaysMs: [0, 50, 100, 200, 400],
      pollMs: 100,
    });
    await dispatcher.start();
    alice = api.user('alice');
    bob = api.user('bob');
    conn = api.connection(alice.id, 'online');
  });

  afterAll(async () => {
    await dispatcher?.close();
    await consumer?.close();
    await api?.close();
  });

  const createHook = async (path: string, events: string[] = ['*'], extra: Record<string, unknown> = {}) => {
    const res = await api.request<Hook>('POST', `/connections/${conn.id}/webhooks`, {
      token: alice.token,
      body: { url: consumer.url(path), events, ...extra },
    });
    expect(res.status).toBe(201);
    consumer.secret(path, res.body.signingSecret);
    return res.body;
  };
  const logs = async (id: string) => (await api.request<Log[]>('GET', `/webhooks/${id}/logs`, { token: alice.token })).body;
  const emit = (event: string, payload: Record<string, unknown> = {}) => api.events.append(alice.id, conn.id, event, payload);

  it('creates, lists, updates and deletes webhooks with ownership checks', async () => {
    const hook = await createHook('/crud', ['message']);
    expect(hook).toMatchObject({ sessionId: conn.id, url: consumer.url('/crud'), events: ['message'], active: true, disabledReason: null });
    expect(hook.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(hook.signingSecret.slice(6), 'base64')).toHaveLength(32);

    const list = await api.request<Hook[]>('GET', `/connections/${conn.id}/webhooks`, { token: alice.token });
    expect(list.body.map((h) => h.id)).toContain(hook.id);

    const put = await api.request<Hook>('PUT', `/webhooks/${hook.id}`, { token: alice.token, body: { events: ['message', 'message.ack'] } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ url: hook.url, events: ['message', 'message.ack'], active: true, signingSecret: hook.signingSecret });

    expect((await api.request('PUT', `/webhooks/${hook.id}`, { token: bob.token, body: { active: false } })).status).toBe(403);
    expect((await api.request('GET', `/webhooks/${hook.id}/logs`, { token: bob.token })).status).toBe(403);
    expect((await api.request('GET', `/connections/${conn.id}/webhooks`, { token: bob.token })).status).toBe(403);
    expect(await api.request('PUT', '/webhooks/nope', { token: alice.token, body: {} })).toMatchObject({
      status: 404,
      body: { message: 'Webhook not found', statusCode: 404, error: 'Not Found' },
    });
    expect((await api.request('POST', '/connections/nope/webhooks', { token: alice.token, body: { url: consumer.url('/x'), events: ['message'] } })).body).toMatchObject({
      statusCode: 404,
      message: 'Connection not found',
    });
    expect((await api.request('POST', `/connections/${conn.id}/webhooks`, { token: alice.token, body: { url: consumer.url('/x'), events: [] } })).status).toBe(400);

    expect(await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token })).toMatchObject({ status: 200, body: { success: true } });
    expect((await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token })).status).toBe(404);
    expect((await api.request('GET', `/webhooks/${hook.id}/logs`, { token: alice.token })).body).toMatchObject({ message: 'Webhook not found' });
  });

  it('enforces the URL policy at create and update', async () => {
    const create = (url: string) => api.request<{ message: string }>('POST', `/connections/${conn.id}/webhooks`, { token: alice.token, body: { url, events: ['message'] } });
    // Always refused, even with allowLanWebhooks on.
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::1]/',
      'http://100.100.100.200/',
      'http://224.0.0.1/',
      'http://0.0.0.0:8080/',
      'http://[::ffff:169.254.169.254]/',
      'ftp://example.com/',
      'http://user:pw@127.0.0.1/',
    ]) {
      const res = await create(url);
      expect(res.status, url).toBe(400);
    }
    expect((await create('http://169.254.169.254/')).body.message).toMatch(/link-local.*never allowed/);
    // LAN targets are fine with the setting on.
    for (const url of ['http://10.1.2.3/hook', 'http://[fd00::1]/hook', 'http://100.64.1.1/hook', 'http://localhost:9/x']) {
      expect((await create(url)).status, url).toBe(201);
    }
    api.store.webhooks.setAllowLanSetting(false);
    try {
      expect((await create('http://10.1.2.3/hook')).body.message).toMatch(/https/);
      const res = await create('https://127.0.0.1/hook');
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/loopback.*allowLanWebhooks/);
      expect((await create('https://192.168.1.10/hook')).status).toBe(400);
      expect((await create('https://8.8.8.8/hook')).status).toBe(201);
      const hook = (await create('https://8.8.4.4/hook')).body as unknown as Hook;
      expect((await api.request('PUT', `/webhooks/${hook.id}`, { token: alice.token, body: { url: 'https://10.0.0.1/' } })).status).toBe(400);
    } finally {
      api.store.webhooks.setAllowLanSetting(true);
    }
    // Clean up so these never-reachable hooks do not receive later events.
    for (const h of api.store.webhooks.listByConnection(conn.id)) api.store.webhooks.delete(h.id);
    // Own port and address classes (unit level).
    const policy = new OutboundPolicy({ allowLan: true, ownPort: 7575 });
    expect(() => policy.checkWebhookUrl('http://127.0.0.1:7575/api')).toThrow(/own port/);
    expect(() => policy.checkWebhookUrl('http://localhost:7575/')).toThrow(/own port/);
    expect(classifyAddress('::ffff:127.0.0.1').cls).toBe('lan');
    expect(classifyAddress('fd00:ec2::254').cls).toBe('refused');
    expect(classifyAddress('2002:a9fe:a9fe::').cls).toBe('refused');
    expect(classifyAddress('93.184.216.34').cls).toBe('public');
  });

  it('delivers signed events of the subscribed types with body { event, session, payload }', async () => {
    const all = await createHook('/all', ['*']);
    const some = await createHook('/some', ['message', 'session.status']);
    const types = ['session.status', 'message', 'message.sent', 'message.ack', 'message.reaction', 'message.edited', 'presence.update'];
    const seqs = types.map((t) => emit(t, { kind: t, ...(t === 'message.ack' ? { id: 'm1', ack: 3 } : {}) }).seq);
    await waitFor('all 7 on /all', () => (consumer.on('/all').length >= 7 ? true : undefined));
    await waitFor('2 on /some', () => (consumer.on('/some').length >= 2 ? true : undefined));
    const got = consumer.on('/all');
    for (const r of got) expect(r.error).toBeUndefined();
    expect(got.map((r) => r.verified!.event).sort()).toEqual([...types].sort());
    expect(got.every((r) => r.verified!.session === conn.sessionName)).toBe(true);
    expect(got.find((r) => r.verified!.event === 'message.ack')!.verified!.payload).toMatchObject({ id: 'm1', ack: 3 });
    expect(new Set(got.map((r) => r.id))).toEqual(new Set(seqs.map((s) => `msg_${alice.id.replace(/-/g, '')}_${s}`)));
    expect(JSON.parse(got[0]!.body)).toEqual(got[0]!.verified); // exactly the three fields
    expect(Object.keys(JSON.parse(got[0]!.body))).toEqual(['event', 'session', 'payload']);
    expect(consumer.on('/some').map((r) => r.verified!.event).sort()).toEqual(['message', 'session.status']);
    // The same event carries the same webhook-id on both webhooks.
    const msgId = consumer.on('/some').find((r) => r.verified!.event === 'message')!.id;
    expect(got.find((r) => r.verified!.event === 'message')!.id).toBe(msgId);
    await waitFor('logged delivered', async () => ((await logs(all.id)).filter((l) => l.status === 'delivered').length === 7 ? true : undefined));
    const l = (await logs(all.id))[0]!;
    expect(l).toMatchObject({ attempts: 1, status: 'delivered', lastStatusCode: 204 });
    expect(l.deliveredAt).toMatch(/Z$/);
    await api.request('DELETE', `/webhooks/${all.id}`, { token: alice.token });
    await api.request('DELETE', `/webhooks/${some.id}`, { token: alice.token });
  });

  it('holds events while paused (log status paused), delivers them in order on resume, and stops after delete', async () => {
    const hook = await createHook('/pause', ['message']);
    expect((await api.request<Hook>('PUT', `/webhooks/${hook.id}`, { token: alice.token, body: { active: false } })).body.active).toBe(false);
    emit('message', { body: 'while paused 1' });
    emit('message', { body: 'while paused 2' });
    await new Promise((r) => setTimeout(r, 200));
    expect(consumer.on('/pause')).toHaveLength(0);
    expect((await logs(hook.id)).map((l) => [l.status, l.attempts])).toEqual([
      ['paused', 0],
      ['paused', 0],
    ]);

    await api.request('PUT', `/webhooks/${hook.id}`, { token: alice.token, body: { active: true } });
    emit('message', { body: 'after resume' });
    await waitFor('delivery after resume', () => (consumer.on('/pause').length === 3 ? true : undefined));
    expect(consumer.on('/pause').map((r) => r.verified?.payload.body)).toEqual(['while paused 1', 'while paused 2', 'after resume']);
    await waitFor('logged delivered', async () => ((await logs(hook.id)).every((l) => l.status === 'delivered') ? true : undefined));

    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
    emit('message', { body: 'after delete' });
    await new Promise((r) => setTimeout(r, 200));
    expect(consumer.on('/pause')).toHaveLength(3);
  });

  it('retries a failing consumer with the same webhook-id, fresh signatures, and counts attempts', async () => {
    consumer.behave('/flaky', (n) => (n <= 2 ? { status: 500 } : { status: 200 }));
    const hook = await createHook('/flaky', ['message']);
    const seq = emit('message', { body: 'flaky' }).seq;
    await waitFor('3 attempts', () => (consumer.on('/flaky').length >= 3 ? true : undefined));
    const got = consumer.on('/flaky');
    expect(new Set(got.map((r) => r.id))).toEqual(new Set([`msg_${alice.id.replace(/-/g, '')}_${seq}`]));
    expect(got.every((r) => r.verified)).toBe(true);
    await waitFor('delivered', async () => ((await logs(hook.id))[0]?.status === 'delivered' ? true : undefined));
    expect((await logs(hook.id))[0]).toMatchObject({ status: 'delivered', attempts: 3, lastStatusCode: 200 });
    // Attempt 2 ≈ 50 ms × U(0.8,1.2) after attempt 1; attempt 3 ≈ 100 ms after attempt 2.
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(35);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(75);
  });

  it('gives up after 5 attempts (failed), and does not follow redirects', async () => {
    consumer.behave('/down', () => ({ status: 503, body: 'x'.repeat(5000) }));
    consumer.behave('/redirect', () => ({ status: 302, headers: { location: consumer.url('/target') } }));
    const down = await createHook('/down', ['message']);
    const redirect = await createHook('/redirect', ['message']);
    emit('message', { body: 'doomed' });
    await waitFor('failed /down', async () => ((await logs(down.id))[0]?.status === 'failed' ? true : undefined), { timeoutMs: 10_000 });
    await waitFor('failed /redirect', async () => ((await logs(redirect.id))[0]?.status === 'failed' ? true : undefined), { timeoutMs: 10_000 });
    expect((await logs(down.id))[0]).toMatchObject({ status: 'failed', attempts: 5, deliveredAt: null, lastStatusCode: 503, lastError: 'HTTP 503' });
    expect(consumer.on('/down')).toHaveLength(5);
    expect((await logs(redirect.id))[0]).toMatchObject({ status: 'failed', attempts: 5, lastStatusCode: 302 });
    expect(consumer.on('/redirect')).toHaveLength(5);
    expect(consumer.on('/target')).toHaveLength(0);
    // Only 1 KiB of the response body is kept (and never returned by the API).
    const row = api.store.db.prepare(`SELECT length(last_response) AS n FROM webhook_deliveries WHERE webhook_id = ?`).get(down.id) as { n: number };
    expect(row.n).toBeLessThanOrEqual(1024);
    expect(JSON.stringify(await logs(down.id))).not.toContain('xxxx');
    await api.request('DELETE', `/webhooks/${down.id}`, { token: alice.token });
    await api.request('DELETE', `/webhooks/${redirect.id}`, { token: alice.token });
  });

  it('deactivates a webhook whose consumer answers 410 Gone', async () => {
    consumer.behave('/gone', () => ({ status: 410 }));
    const hook = await createHook('/gone', ['message']);
    emit('message', { body: 'gone 1' });
    await waitFor('failed', async () => ((await logs(hook.id))[0]?.status === 'failed' ? true : undefined));
    const after = (await api.request<Hook[]>('GET', `/connections/${conn.id}/webhooks`, { token: alice.token })).body.find((h) => h.id === hook.id)!;
    expect(after).toMatchObject({ active: false, disabledReason: expect.stringMatching(/410/) });
    expect((await logs(hook.id))[0]).toMatchObject({ attempts: 1, lastStatusCode: 410 });
    emit('message', { body: 'gone 2' });
    await new Promise((r) => setTimeout(r, 150));
    expect(consumer.on('/gone')).toHaveLength(1);
    expect((await logs(hook.id))[0]!.status).toBe('paused');
    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
  });

  it('honours Retry-After', async () => {
    consumer.behave('/later', (n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    const hook = await createHook('/later', ['message']);
    emit('message', { body: 'later' });
    await waitFor('2 attempts', () => (consumer.on('/later').length >= 2 ? true : undefined), { timeoutMs: 5_000 });
    const [a, b] = consumer.on('/later');
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(950);
    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
  });

  it('retries a pending delivery now when asked, instead of at its next attempt', async () => {
    consumer.behave('/wait', (n) => (n === 1 ? { status: 429, headers: { 'retry-after': '60' } } : { status: 200 }));
    const hook = await createHook('/wait', ['message']);
    emit('message', { body: 'waiting' });
    const pending = await waitFor('a pending retry', async () => {
      const d = (await logs(hook.id))[0];
      return d?.status === 'pending' && d.lastStatusCode === 429 ? d : undefined;
    });
    const now = await api.request<Log>('POST', `/webhooks/${hook.id}/deliveries/${pending.id}/retry`, { token: alice.token });
    expect(now.status).toBe(200);
    expect(now.body).toMatchObject({ id: pending.id, status: 'pending' });
    await waitFor('delivered long before Retry-After', async () => ((await logs(hook.id))[0]?.status === 'delivered' ? true : undefined), {
      timeoutMs: 5_000,
    });
    expect(consumer.on('/wait')).toHaveLength(2);
    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
  });

  it('keeps a slow consumer from delaying another webhook', async () => {
    consumer.behave('/slow', () => ({ status: 200, delayMs: 3_000 }));
    const slow = await createHook('/slow', ['message']);
    const fast = await createHook('/fast', ['message']);
    const start = performance.now();
    for (let i = 0; i < 100; i++) emit('message', { body: `burst ${i}` });
    await waitFor('100 on /fast', () => (consumer.on('/fast').length >= 100 ? true : undefined), { timeoutMs: 5_000 });
    expect(performance.now() - start).toBeLessThan(2_000);
    await api.request('DELETE', `/webhooks/${slow.id}`, { token: alice.token });
    await api.request('DELETE', `/webhooks/${fast.id}`, { token: alice.token });
  });

  it('sends a test delivery to a paused webhook (shown in its log) while its events stay held', async () => {
    const hook = await createHook('/test-paused', ['message'], { active: false });
    emit('message', { body: 'held' });
    const res = await api.request<{ success: true; delivery: Log }>('POST', `/webhooks/${hook.id}/test`, {
      token: alice.token,
      headers: { 'content-type': 'application/json' }, // and an empty body (many clients send the header on every request)
      rawBody: '',
    });
    expect(res.status).toBe(200);
    const got = await waitFor('test delivery', () => consumer.on('/test-paused')[0]);
    expect(got.verified).toMatchObject({ event: 'webhook.test', payload: { webhookId: hook.id } });
    await waitFor('logged', async () => ((await logs(hook.id)).find((l) => l.eventType === 'webhook.test')?.status === 'delivered' ? true : undefined));
    expect((await logs(hook.id)).find((l) => l.eventType === 'message')).toMatchObject({ status: 'paused', attempts: 0 });
    expect(consumer.on('/test-paused')).toHaveLength(1);
    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
  });

  it.each([
    ['POST', ['message', 'mesage']],
    ['PUT', ['*', 'message.deleted']],
  ])('refuses an unknown event type on %s with 400 naming it', async (method, events) => {
    const hook = await createHook('/types', ['message']);
    const res =
      method === 'POST'
        ? await api.request('POST', `/connections/${conn.id}/webhooks`, { token: alice.token, body: { url: consumer.url('/types'), events } })
        : await api.request('PUT', `/webhooks/${hook.id}`, { token: alice.token, body: { events } });
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(new RegExp(`^body/events/1: unknown event type "${events[1]!.replace('.', '\\.')}" \\(known: session\\.status, message,`));
    expect((await api.request<Hook[]>('GET', `/connections/${conn.id}/webhooks`, { token: alice.token })).body.find((h) => h.id === hook.id)!.events).toEqual(['message']);
    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
  });

  it('sends a test event to one webhook, and replays a logged delivery with the same webhook-id', async () => {
    const a = await createHook('/test-a', ['message']);
    const b = await createHook('/test-b', ['*']);
    const res = await api.request<{ success: true; delivery: Log }>('POST', `/webhooks/${a.id}/test`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body.delivery).toMatchObject({ eventType: 'webhook.test', status: 'pending' });
    const first = await waitFor('test event', () => consumer.on('/test-a')[0]);
    expect(first.verified).toMatchObject({ event: 'webhook.test', session: conn.sessionName, payload: { webhookId: a.id } });
    await new Promise((r) => setTimeout(r, 100));
    expect(consumer.on('/test-b')).toHaveLength(0); // only that webhook

    await waitFor('delivered', async () => ((await logs(a.id))[0]?.status === 'delivered' ? true : undefined));
    const replay = await api.request<Log>('POST', `/webhooks/${a.id}/deliveries/${res.body.delivery.id}/retry`, { token: alice.token });
    expect(replay.status).toBe(201);
    expect(replay.body).toMatchObject({ webhookMessageId: first.id, status: 'pending', replayOf: res.body.delivery.id });
    const second = await waitFor('replayed', () => consumer.on('/test-a')[1]);
    expect(second.id).toBe(first.id);
    expect(second.verified).toEqual(first.verified);
    expect((await api.request('POST', `/webhooks/${a.id}/deliveries/nope/retry`, { token: alice.token })).status).toBe(404);
    expect((await api.request('POST', `/webhooks/${a.id}/test`, { token: bob.token })).status).toBe(403);
    await api.request('DELETE', `/webhooks/${a.id}`, { token: alice.token });
    await api.request('DELETE', `/webhooks/${b.id}`, { token: alice.token });
  });

  it('returns at most the 100 most recent log entries', async () => {
    const hook = await createHook('/many', ['message']);
    api.store.tx(() => {
      for (let i = 0; i < 130; i++) emit('message', { body: `m${i}` });
    });
    await waitFor('130 received', () => (consumer.on('/many').length >= 130 ? true : undefined));
    const l = await logs(hook.id);
    expect(l).toHaveLength(100);
    expect(l[0]!.payload.payload.body).toBe('m129');
    expect(l[99]!.payload.payload.body).toBe('m30');
    await api.request('DELETE', `/webhooks/${hook.id}`, { token: alice.token });
  });

  it('pages the event log with /events?after= and filters by type', async () => {
    const before = (await api.request<{ lastSeq: number }>('GET', '/events?limit=1', { token: alice.token })).body.lastSeq;
    const seqs = [emit('message', { n: 1 }).seq, emit('message.ack', { id: 'x', ack: 2 }).seq, emit('message', { n: 2 }).seq];
    const page1 = await api.request<{ events: Array<{ seq: number; event: string }>; nextAfter: number; lastSeq: number }>('GET', `/events?after=${before}&limit=2`, { token: alice.token });
    expect(page1.body.events.map((e) => e.seq)).toEqual(seqs.slice(0, 2));
    expect(page1.body.nextAfter).toBe(seqs[1]);
    const page2 = await api.request<{ events: Array<{ seq: number }>; nextAfter: number }>('GET', `/events?after=${page1.body.nextAfter}&limit=2`, { token: alice.token });
    expect(page2.body.events.map((e) => e.seq)).toEqual([seqs[2]]);
    expect(page2.body.nextAfter).toBe(seqs[2]);
    const filtered = await api.request<{ events: Array<{ event: string }> }>('GET', `/events?after=${before}&events=message`, { token: alice.token });
    expect(filtered.body.events.map((e) => e.event)).toEqual(['message', 'message']);
    expect((await api.request('GET', `/events?after=${seqs[2]! + 10}`, { token: alice.token })).status).toBe(400);
    expect((await api.request('GET', '/events?events=Bad Type', { token: alice.token })).status).toBe(400);
    expect((await api.request<{ events: unknown[] }>('GET', '/events', { token: bob.token })).body.events).toEqual([]);
  });

  it('resumes the WebSocket with after= and filters it with events=', async () => {
    const start = api.store.events.lastSeq(alice.id);
    emit('message', { n: 'a' });
    emit('presence.update', { n: 'b' });
    emit('message', { n: 'c' });
    const ws = new WebSocket(`${api.baseUrl.replace(/^http/, 'ws')}/ws?token=${alice.token}&after=${start}&events=message`);
    const frames: Array<{ event: string; seq: number; payload: { n: string } }> = [];
    ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
    await waitFor('2 frames', () => (frames.length >= 2 ? true : undefined));
    emit('presence.update', { n: 'd' });
    emit('message', { n: 'e' });
    await waitFor('3 frames', () => (frames.length >= 3 ? true : undefined));
    expect(frames.map((f) => f.payload.n)).toEqual(['a', 'c', 'e']);
    ws.close();
    const bad = await api.request('GET', '/ws?events=NOPE!', { token: alice.token });
    expect(bad.status).toBe(400);
  });

  it('claims fresh rows at insert: sent once committed, never when rolled back', async () => {
    const hook = await createHook('/fresh', ['message']);
    const claimsBefore = dispatcher.stats.claims;
    // Rolled back after its row was written (and claimed): nothing may be sent for it.
    expect(() =>
      api.store.tx(() => {
        emit('message', { n: 'rolled back' });
        throw new Error('abort');
      }),
    ).toThrow('abort');
    for (let i = 0; i < 3; i++) emit('message', { n: `fresh ${i}` });
    await waitFor('3 on /fresh', () => (consumer.on('/fresh').length >= 3 ? true : undefined));
    const got = consumer.on('/fresh').map((r) => (r.verified?.payload as { n: string }).n);
    expect(got.sort()).toEqual(['fresh 0', 'fresh 1', 'fresh 2']);
    // Sent without a claim transaction: each row was written `delivering` with its first attempt counted.
    expect(dispatcher.stats.claims).toBe(claimsBefore);
    await waitFor('logged as delivered', async () => {
      const l = await logs(hook.id);
      return l.length === 3 && l.every((d) => d.status === 'delivered' && d.attempts === 1) ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 150)); // two dispatcher polls: the rolled-back event stays unsent
    expect(consumer.on('/fresh').some((r) => (r.verified?.payload as { n: string }).n === 'rolled back')).toBe(false);
  });

  it('prunes old events but keeps those with undelivered deliveries; a pause holds events only for the retention', async () => {
    consumer.behave('/never', () => ({ status: 500 }));
    const hook = await createHook('/never', ['message']);
    // A row claimed at insert or pending (undelivered either way) whose webhook is paused right after.
    api.store.tx(() => {
      emit('message', { body: 'held' });
      api.store.webhooks.update(hook.id, { active: false });
    });
    const held = api.store.deliveries.logs(hook.id, 1)[0]!;
    expect(['pending', 'delivering']).toContain(held.status);
    const retention = startRetention({ store: api.store, logger: api.app.log, days: 7 });
    retention.stop();
    // Within the retention nothing undelivered is dropped.
    expect(retention.pruneNow(Date.now() + 6 * 86_400_000).events).toBe(0);
    expect(api.store.events.after(alice.id, held.eventSeq - 1, 1)[0]?.seq).toBe(held.eventSeq);
    // Past it, the held delivery fails (HELD_TOO_LONG) and, finished and old, is pruned with its event and the rest.
    await waitFor('released', () => (['pending', 'failed'].includes(api.store.deliveries.get(held.id)!.status) ? true : undefined));
    const result = retention.pruneNow(Date.now() + 8 * 86_400_000);
    expect(result.events).toBeGreaterThan(0);
    expect(api.store.deliveries.get(held.id)).toBeUndefined();
    expect(api.store.events.after(alice.id, 0, 10_000)).toEqual([]);
    expect(emit('message', { body: 'next' }).seq).toBe(held.eventSeq + 1); // seq continues, never reused
  });
});
