/**
 * Authentication over real HTTP: every 401 message of interface-spec §5, the public health route,
 * unknown routes, lastUsedAt bookkeeping, and that credentials never reach the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '../../service/auth/api-tokens.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

const MISSING = { statusCode: 401, error: 'Unauthorized', message: 'Missing or invalid Authorization header' };
const INVALID = { statusCode: 401, error: 'Unauthorized', message: 'Invalid or revoked API token' };

describe('authentication', () => {
  let api: TestApi;
  let alice: TestUser;

  beforeAll(async () => {
    api = await startTestApi();
    alice = api.user('alice');
  });
  afterAll(() => api.close());

  it('serves health without credentials', async () => {
    api.connection(alice.id, 'scan_qr');
    const res = await api.request('GET', '/');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      version: '0.0.0-test',
      uptime: expect.any(Number),
      connections: 1,
      sandbox: false,
      storage: 'ok',
    });
    expect((await api.request('GET', '')).status).toBe(200);
  });

  it('accepts a valid token and attaches the caller', async () => {
    const res = await api.request('GET', '/connections', { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
  });

  it.each([
    ['no header', undefined],
    ['another scheme', 'Basic YWxpY2U6c2VjcmV0'],
    ['Bearer without a token', 'Bearer'],
    ['Bearer with blanks only', 'Bearer    '],
    ['two tokens', 'Bearer a b'],
  ])('401 %s → Missing or invalid Authorization header', async (_case, header) => {
    const res = await api.request(
      'GET',
      '/connections',
      header === undefined ? {} : { headers: { authorization: header } },
    );
    expect(res.status).toBe(401);
    expect(res.body).toEqual(MISSING);
  });

  it.each([
    ['an unknown well-formed token', () => generateToken()],
    ['a wh_ token with a bad checksum', () => generateToken().slice(0, -1) + 'x'],
    ['a short wh_ string', () => 'wh_abc'],
    ['a JWT-looking bearer', () => 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'],
    ['an opaque non-wh_ bearer', () => 'sk_live_123'],
  ])('401 for %s → Invalid or revoked API token', async (_case, token) => {
    const res = await api.request('GET', '/connections', { token: token() });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(INVALID);
  });

  it('401 for a revoked token', async () => {
    const bob = api.user('bob-revoked');
    expect((await api.request('GET', '/connections', { token: bob.token })).status).toBe(200);
    api.store.tokens.revoke(bob.tokenId);
    const res = await api.request('GET', '/connections', { token: bob.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(INVALID);
  });

  it('401 for a token of a disabled user', async () => {
    const carol = api.user('carol-disabled');
    api.store.users.setDisabled(carol.id, true);
    const res = await api.request('GET', '/connections', { token: carol.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(INVALID);
  });

  it('rejects before reading the body: an unauthenticated POST with bad JSON is a 401, not a 400', async () => {
    const res = await api.request('POST', '/connections', {
      rawBody: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(401);
    expect(api.store.connections.listByUser(alice.id)).toHaveLength(1);
  });

  it('answers unknown routes 404 in the error shape, with or without a token', async () => {
    for (const token of [undefined, alice.token]) {
      const res = await api.request('GET', '/nope?token=secret', token === undefined ? {} : { token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Route GET /api/nope not found' });
    }
  });

  it('records lastUsedAt on first use and not again within a minute', async () => {
    const dave = api.user('dave');
    expect(api.store.tokens.get(dave.tokenId)!.lastUsedAt).toBeNull();
    await api.request('GET', '/connections', { token: dave.token });
    const first = api.store.tokens.get(dave.tokenId)!.lastUsedAt;
    expect(first).not.toBeNull();
    await new Promise((r) => setTimeout(r, 5));
    await api.request('GET', '/connections', { token: dave.token });
    expect(api.store.tokens.get(dave.tokenId)!.lastUsedAt).toBe(first);
  });

  it('never logs tokens or Authorization headers', async () => {
    await api.request('GET', `/connections?token=${alice.token}`, { token: alice.token });
    await api.request('GET', `/ws?token=${alice.token}`);
    // Any spelling of the parameter (issue 20): encoded names, an encoded "=", case, repeats, ";" separators.
    for (const query of [
      `%74oken=${alice.token}`,
      `token%3D${alice.token}`,
      `TOKEN=${alice.token}`,
      `token=${alice.token}&token=${alice.token}`,
      `after=0;token=${alice.token}`,
      `%54oKeN%3d${alice.token}`,
    ]) {
      await api.request('GET', `/ws?${query}`);
      await api.request('GET', `/connections?${query}`, { token: alice.token });
    }
    // Anywhere else in the URL, recognised by its shape (issue 25): a path segment, any parameter name,
    // percent-encoded; and in headers other than Authorization. (test/integration/log-leak.test.ts: a real process.)
    const encoded = [...Buffer.from(alice.token)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
    for (const route of [
      `/connections/${alice.token}`,
      `/connections/${encoded}`,
      `/connections?access_token=${alice.token}`,
      `/connections?foo=${alice.token}`,
      `/connections?token[]=${alice.token}`,
      `/connections?to%00ken=${alice.token}`,
      `/connections?foo=${encoded}`,
      `/connections?foo=${encoded.replace(/%/g, '%25')}`,
    ]) {
      await api.request('GET', route, { token: alice.token });
    }
    await api.request('GET', '/connections', {
      headers: { 'x-api-key': alice.token, cookie: `session=${alice.token}` },
    });
    const logs = api.logs();
    expect(logs).toContain('request completed');
    expect(logs).toContain('token=[redacted]');
    expect(logs).not.toContain(alice.token);
    expect(logs).not.toContain(alice.token.slice(3, 20));
    expect(logs.toLowerCase()).not.toContain('bearer');
  });
});

describe('unexpected failures', () => {
  it('answer 500 Internal Server Error without internals, and are logged', async () => {
    const api = await startTestApi();
    const user = api.user('erin');
    api.store.db.close(); // every query now throws
    const res = await api.request('GET', '/connections', { token: user.token });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
    expect(api.logs()).toContain('"level":50');
    expect(api.logs()).toContain('request failed');
    await api.close();
  });
});
