/**
 * Connection routes over real HTTP with the real engine (pointed at an unreachable server, so sessions stay
 * booting): create / get-or-create / read / rename / delete / restart / QR / profile, ownership (403 on every
 * connection route), 404 for unknown and deleted connections, and validation that stores nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

/** Every route that takes a connection id, with a body that passes validation. */
const CONNECTION_ROUTES: Array<[method: string, route: string, body?: unknown]> = [
  ['GET', '/connections/:id'],
  ['PATCH', '/connections/:id', { name: 'x' }],
  ['DELETE', '/connections/:id'],
  ['POST', '/connections/:id/restart'],
  ['GET', '/connections/:id/qr'],
  ['GET', '/connections/:id/me'],
  ['GET', '/connections/:id/chats'],
  ['GET', '/connections/:id/chats/15550101@s.whatsapp.net/messages'],
  ['GET', '/connections/:id/messages/false_15550101@s.whatsapp.net_ABC?chatId=15550101@s.whatsapp.net'],
  ['GET', '/connections/:id/contacts'],
  ['POST', '/connections/:id/send', { chatId: '+15550101', text: 'hi', skipPresence: true }],
];

describe('connections', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    api = await startTestApi();
    alice = api.user('alice');
    bob = api.user('bob');
  });
  afterAll(() => api.close());

  it('creates a connection: 201, status starting, the spec fields, session started', async () => {
    const res = await api.request<Record<string, unknown>>('POST', '/connections', {
      token: alice.token,
      body: { name: 'Sales' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      userId: alice.id,
      name: 'Sales',
      workerId: 'test',
      sessionName: expect.stringMatching(/^u_[0-9a-f]{8}_s_[0-9a-f]{8}$/),
      phoneNumber: null,
      status: 'starting',
      statusReason: expect.toBeOneOf([null, 'new session']),
      engine: 'NOWEB',
      rejectCalls: false,
      rejectCallsMessage: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    // The session runs: it tries the (unreachable) server and reports a status change.
    const id = res.body.id as string;
    await waitFor('a session.status event of the new connection', () =>
      api.store.events.after(alice.id, 0, 1000).find((e) => e.connectionId === id && e.event === 'session.status'),
    );
  });

  it('creates without a body, and get-or-create reuses the newest idle connection', async () => {
    const created = await api.request<{ id: string; name: string | null }>('POST', '/connections', {
      token: bob.token,
    });
    expect(created.status).toBe(201);
    expect(created.body.name).toBeNull();
    const reused = await api.request<{ id: string }>('POST', '/connections/get-or-create', {
      token: bob.token,
      body: {},
    });
    expect(reused.status).toBe(200);
    expect(reused.body.id).toBe(created.body.id);
  });

  it('get-or-create creates (201) when nothing is idle', async () => {
    const carol = api.user('carol');
    api.connection(carol.id, 'online');
    const res = await api.request<{ id: string; status: string }>('POST', '/connections/get-or-create', {
      token: carol.token,
    });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('starting');
    expect(api.store.connections.listByUser(carol.id)).toHaveLength(2);
  });

  it("lists only the caller's connections", async () => {
    const res = await api.request<Array<{ userId: string }>>('GET', '/connections', { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThan(0);
    expect(res.body.every((c) => c.userId === alice.id)).toBe(true);
  });

  it('renames with PATCH, and clears the name with null', async () => {
    const c = api.connection(alice.id);
    const renamed = await api.request<{ name: string }>('PATCH', `/connections/${c.id}`, {
      token: alice.token,
      body: { name: 'Support' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Support');
    const cleared = await api.request<{ name: null }>('PATCH', `/connections/${c.id}`, {
      token: alice.token,
      body: { name: null },
    });
    expect(cleared.body.name).toBeNull();
  });

  it('restarts a connection', async () => {
    const created = await api.request<{ id: string }>('POST', '/connections', { token: alice.token });
    const res = await api.request<{ id: string; status: string }>('POST', `/connections/${created.body.id}/restart`, {
      token: alice.token,
    });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(created.body.id);
  });

  describe('QR code and profile', () => {
    it.each(['starting', 'reconnecting'] as const)('503 with Retry-After while the worker is %s', async (status) => {
      const c = api.connection(alice.id, status);
      const res = await api.request('GET', `/connections/${c.id}/qr`, { token: alice.token });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'Worker is booting, please retry in a few seconds',
      });
      expect(res.headers.get('retry-after')).toBe('2');
    });

    it('503 in scan_qr while the engine has no QR yet', async () => {
      const c = api.connection(alice.id, 'scan_qr');
      expect((await api.request('GET', `/connections/${c.id}/qr`, { token: alice.token })).status).toBe(503);
    });

    it.each([
      ['online', 'Connection is already linked'],
      ['connected', 'Connection is already linked'],
      ['logged_out', 'Connection was logged out; restart it to link it again'],
      ['failed', 'Connection is failed; restart it to get a new QR code'],
    ] as const)('409 for a connection in status %s', async (status, message) => {
      const c = api.connection(alice.id, status);
      const res = await api.request('GET', `/connections/${c.id}/qr`, { token: alice.token });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ statusCode: 409, error: 'Conflict', message });
    });

    it('409 Connection is not online, with its status as the send routes say it, for the profile of a connection that is not online', async () => {
      for (const status of ['scan_qr', 'starting', 'online'] as const) {
        // 'online' in the database but no live session behind it: still not online for the engine.
        const c = api.connection(alice.id, status);
        for (const [method, route, body] of [
          ['GET', `/connections/${c.id}/me`, undefined],
          ['PATCH', `/connections/${c.id}/me`, { about: 'x' }],
        ] as const) {
          const res = await api.request(method, route, { token: alice.token, body });
          expect(res.status).toBe(409);
          expect(res.body).toEqual({ statusCode: 409, error: 'Conflict', message: `Connection is not online (status: ${status})` });
        }
        // The send routes' message for the same connection (engine.ts): the same words.
        const send = await api.request('POST', `/connections/${c.id}/send`, { token: alice.token, body: { chatId: '+15550101', text: 'hi' } });
        expect(send.body).toMatchObject({ message: `Connection is not online (status: ${status})` });
      }
    });
  });

  describe('delete', () => {
    it('soft-deletes: 200 { success: true }, status stopped, gone from the list, a session.status event', async () => {
      const created = await api.request<{ id: string }>('POST', '/connections', { token: alice.token });
      const id = created.body.id;
      const res = await api.request('DELETE', `/connections/${id}`, { token: alice.token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });

      const record = await api.request<{ status: string }>('GET', `/connections/${id}`, { token: alice.token });
      expect(record.status).toBe(200);
      expect(record.body.status).toBe('stopped');
      const list = await api.request<Array<{ id: string }>>('GET', '/connections', { token: alice.token });
      expect(list.body.map((c) => c.id)).not.toContain(id);
      const last = api.store.events
        .after(alice.id, 0, 1000)
        .filter((e) => e.connectionId === id)
        .at(-1);
      expect(last).toMatchObject({ event: 'session.status', payload: { status: 'stopped', reason: 'deleted' } });
    });

    it('lists deleted connections only with include=deleted (the caller’s own, read-only records); another include is 400', async () => {
      const kept = await api.request<{ id: string }>('POST', '/connections', { token: alice.token });
      const gone = await api.request<{ id: string }>('POST', '/connections', { token: alice.token });
      expect((await api.request('DELETE', `/connections/${gone.body.id}`, { token: alice.token })).status).toBe(200);
      const bobs = api.connection(bob.id, 'stopped');
      const plain = await api.request<Array<{ id: string; status: string }>>('GET', '/connections', { token: alice.token });
      expect(plain.body.map((c) => c.id)).toContain(kept.body.id);
      expect(plain.body.some((c) => c.status === 'stopped')).toBe(false);
      const all = await api.request<Array<{ id: string; status: string; statusReason: string | null }>>('GET', '/connections?include=deleted', {
        token: alice.token,
      });
      expect(all.status).toBe(200);
      expect(all.body.find((c) => c.id === gone.body.id)).toMatchObject({ status: 'stopped', statusReason: 'deleted' });
      expect(all.body.map((c) => c.id)).toContain(kept.body.id);
      expect(all.body.map((c) => c.id)).not.toContain(bobs.id);
      expect(all.body.filter((c) => c.status !== 'stopped')).toEqual(plain.body);
      const bad = await api.request<{ message: string }>('GET', '/connections?include=everything', { token: alice.token });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/^querystring\/include/);
    });

    it('answers 404 Connection not found on every other route of a stopped connection', async () => {
      const c = api.connection(alice.id, 'stopped');
      for (const [method, route, body] of CONNECTION_ROUTES) {
        if (method === 'GET' && route === '/connections/:id') continue;
        const res = await api.request(method, route.replace(':id', c.id), { token: alice.token, body });
        expect({ method, route, status: res.status, body: res.body }).toEqual({
          method,
          route,
          status: 404,
          body: { statusCode: 404, error: 'Not Found', message: 'Connection not found' },
        });
      }
    });
  });

  it('answers 403 on every connection route for another user, and changes nothing', async () => {
    const c = api.connection(alice.id, 'scan_qr');
    for (const [method, route, body] of CONNECTION_ROUTES) {
      const res = await api.request(method, route.replace(':id', c.id), { token: bob.token, body });
      expect({ method, route, status: res.status, body: res.body }).toEqual({
        method,
        route,
        status: 403,
        body: { statusCode: 403, error: 'Forbidden', message: 'Connection belongs to another user' },
      });
    }
    expect(api.store.connections.get(c.id)).toMatchObject({ status: 'scan_qr', name: null });
  });

  it('answers 404 Connection not found on every connection route for an unknown id', async () => {
    for (const [method, route, body] of CONNECTION_ROUTES) {
      const res = await api.request(method, route.replace(':id', '00000000-0000-4000-8000-000000000000'), {
        token: bob.token,
        body,
      });
      expect({ method, route, status: res.status, message: (res.body as { message: string }).message }).toEqual({
        method,
        route,
        status: 404,
        message: 'Connection not found',
      });
    }
  });

  describe('validation', () => {
    it.each([
      [{ name: 5 }, 'body/name must be string'],
      [{ name: '' }, 'body/name must not be empty'],
      [{ name: 'x'.repeat(101) }, 'body/name must be at most 100 characters long'],
      [{ label: 'x' }, 'body/label is not allowed'],
      [[], 'body must be object'],
      ['text', 'body must be object'],
    ])('POST /connections %j → 400 %s, nothing stored', async (body, message) => {
      const before = api.store.connections.listByUser(alice.id).length;
      const res = await api.request('POST', '/connections', { token: alice.token, body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message });
      expect(api.store.connections.listByUser(alice.id)).toHaveLength(before);
    });

    it('400 for malformed JSON and 415 for a non-JSON body', async () => {
      const bad = await api.request('POST', '/connections', {
        token: alice.token,
        rawBody: '{"name":',
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      const text = await api.request('POST', '/connections', {
        token: alice.token,
        rawBody: '<name>x</name>',
        headers: { 'content-type': 'application/xml' },
      });
      expect(text.status).toBe(415);
      const hint = 'Unsupported Media Type: send a JSON body with Content-Type: application/json';
      expect(text.body).toEqual({ statusCode: 415, error: 'Unsupported Media Type', message: hint });
      // `curl -d '{…}'` without `-H 'content-type: application/json'` sends a form: the same hint, nothing stored.
      const before = api.store.connections.listByUser(alice.id).length;
      const form = await api.request('POST', '/connections', {
        token: alice.token,
        rawBody: '{"name":"x"}',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.body).toEqual({ statusCode: 415, error: 'Unsupported Media Type', message: hint });
      expect(api.store.connections.listByUser(alice.id)).toHaveLength(before);
    });

    it('PATCH with an unknown field changes nothing', async () => {
      const c = api.connection(alice.id);
      api.store.connections.rename(c.id, 'Keep');
      const res = await api.request('PATCH', `/connections/${c.id}`, {
        token: alice.token,
        body: { name: 'New', status: 'online' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ message: 'body/status is not allowed' });
      expect(api.store.connections.get(c.id)).toMatchObject({ name: 'Keep', status: 'scan_qr' });
    });
  });
});
