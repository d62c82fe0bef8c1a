/**
 * Token lifecycle over real HTTP/WS: create (shown once), list, revoke (403 for another user's, 404 unknown),
 * a revoked token stops working at once, including an open WebSocket (closed 4401), revocation and user
 * disable made outside the API (the CLI) close streams via the sweep, and the token never reaches the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { isWellFormedToken } from '../../service/auth/api-tokens.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const INVALID = { statusCode: 401, error: 'Unauthorized', message: 'Invalid or revoked API token' };

interface Created {
  token: string;
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

function openWs(url: string): Promise<{ ws: WebSocket; closed: Promise<{ code: number; reason: string }> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on('open', () => resolve({ ws, closed }));
    ws.on('error', reject);
  });
}

describe('API tokens', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;
  let wsBase: string;

  beforeAll(async () => {
    api = await startTestApi({ app: { revocationSweepMs: 50 } });
    alice = api.user('alice');
    bob = api.user('bob');
    wsBase = api.baseUrl.replace(/^http/, 'ws') + '/ws';
  });
  afterAll(() => api.close());

  it('creates a token shown once, lists it without the secret, and the token works', async () => {
    const res = await api.request<Created>('POST', '/tokens', { token: alice.token, body: { name: 'ci script' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      token: expect.stringMatching(/^wh_[0-9A-Za-z]{49}$/),
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'ci script',
      prefix: res.body.token.slice(0, 10),
      createdAt: expect.any(String),
      lastUsedAt: null,
    });
    expect(isWellFormedToken(res.body.token)).toBe(true);

    const list = await api.request<Record<string, unknown>[]>('GET', '/tokens', { token: res.body.token });
    expect(list.status).toBe(200);
    const mine = list.body.find((t) => t.id === res.body.id)!;
    expect(Object.keys(mine).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'prefix']);
    expect(mine.lastUsedAt).not.toBeNull(); // the list request itself used it
    expect(JSON.stringify(list.body)).not.toContain(res.body.token);
    // Only the caller's tokens.
    expect(list.body.map((t) => t.id)).not.toContain(bob.tokenId);
    expect(api.logs()).not.toContain(res.body.token);
  });

  it('validates the body and stores nothing on a 400', async () => {
    const before = api.store.tokens.listActive(alice.id).length;
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 5 }, { name: 'a', extra: 1 }]) {
      const res = await api.request('POST', '/tokens', { token: alice.token, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(api.store.tokens.listActive(alice.id)).toHaveLength(before);
  });

  it("refuses to revoke another user's token (403) and unknown ids (404)", async () => {
    const other = await api.request('DELETE', `/tokens/${bob.tokenId}`, { token: alice.token });
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ statusCode: 403, error: 'Forbidden', message: 'Token belongs to another user' });
    const unknown = await api.request('DELETE', '/tokens/00000000-0000-4000-8000-000000000000', { token: alice.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Token not found' });
    expect((await api.request('GET', '/connections', { token: bob.token })).status).toBe(200);
  });

  it('revokes: the token answers 401 at once, its open WebSocket is closed with 4401, others keep working', async () => {
    const created = await api.request<Created>('POST', '/tokens', { token: alice.token, body: { name: 'temp' } });
    const stream = await openWs(`${wsBase}?token=${created.body.token}`);
    const other = await openWs(`${wsBase}?token=${alice.token}`); // same user, another token: stays open

    const res = await api.request('DELETE', `/tokens/${created.body.id}`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(await stream.closed).toEqual({ code: 4401, reason: 'Invalid or revoked API token' });

    const after = await api.request('GET', '/connections', { token: created.body.token });
    expect(after.status).toBe(401);
    expect(after.body).toEqual(INVALID);
    const again = await api.request('DELETE', `/tokens/${created.body.id}`, { token: alice.token });
    expect(again.status).toBe(404);
    const list = await api.request<Created[]>('GET', '/tokens', { token: alice.token });
    expect(list.body.map((t) => t.id)).not.toContain(created.body.id);

    expect(other.ws.readyState).toBe(WebSocket.OPEN);
    other.ws.close();
  });

  it('a token can revoke itself', async () => {
    const created = await api.request<Created>('POST', '/tokens', { token: alice.token, body: { name: 'self' } });
    const res = await api.request('DELETE', `/tokens/${created.body.id}`, { token: created.body.token });
    expect(res.status).toBe(200);
    expect((await api.request('GET', '/tokens', { token: created.body.token })).status).toBe(401);
  });

  it('closes streams whose token was revoked outside the API (CLI) within the sweep interval', async () => {
    const carol = api.user('carol');
    const stream = await openWs(`${wsBase}?token=${carol.token}`);
    api.store.tokens.revoke(carol.tokenId); // what `switchboard token revoke` does, from another process
    expect(await stream.closed).toEqual({ code: 4401, reason: 'Invalid or revoked API token' });
  });

  it("a disabled user's tokens stop working and its streams are closed; enabling restores them", async () => {
    const dave = api.user('dave');
    const stream = await openWs(`${wsBase}?token=${dave.token}`);
    api.store.users.setDisabled(dave.id, true); // `switchboard user disable dave`
    expect(await stream.closed).toEqual({ code: 4401, reason: 'Invalid or revoked API token' });
    const res = await api.request('GET', '/tokens', { token: dave.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(INVALID);
    expect((await api.request('POST', '/tokens', { token: dave.token, body: { name: 'x' } })).status).toBe(401);
    api.store.users.setDisabled(dave.id, false);
    expect((await api.request('GET', '/tokens', { token: dave.token })).status).toBe(200);
  });
});
