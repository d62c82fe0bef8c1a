/**
 * Rate limits: per-user buckets (429 in the spec's error shape with retry-after and x-ratelimit-* headers),
 * isolation between users, per-address limits on public routes, and the stricter limit on failed
 * authentications that never blocks valid credentials.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

describe('rate limits', () => {
  let api: TestApi;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    api = await startTestApi({ app: { rateLimit: { max: 5, windowMs: 60_000, authFailures: 3 } } });
    alice = api.user('alice');
    bob = api.user('bob');
  });
  afterAll(() => api.close());

  it('counts per user with x-ratelimit-* headers and answers 429 with retry-after past the limit', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await api.request('GET', '/connections', { token: alice.token });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('5');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(5 - i));
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    }
    const res = await api.request('GET', '/tokens', { token: alice.token });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: expect.stringMatching(/^Rate limit exceeded, retry in /) });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    // A second token of the same user shares the bucket.
    const second = api.store.tokens.listActive(alice.id).length;
    expect(second).toBe(1);
  });

  it('limits before the body is read and stores nothing', async () => {
    const before = api.store.connections.listByUser(alice.id).length;
    const res = await api.request('POST', '/connections', { token: alice.token, body: {} });
    expect(res.status).toBe(429);
    expect(api.store.connections.listByUser(alice.id)).toHaveLength(before);
  });

  it('another user has their own bucket', async () => {
    const res = await api.request('GET', '/connections', { token: bob.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('4');
  });

  it('failed authentications: 401 up to the limit, then 429; valid credentials keep working', async () => {
    const bad = 'wh_' + 'x'.repeat(49);
    for (let i = 0; i < 3; i++) {
      expect((await api.request('GET', '/connections', { token: bad })).status).toBe(401);
    }
    const res = await api.request('GET', '/connections', { token: bad });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await api.request('GET', '/connections')).status).toBe(429); // missing header counts too
    expect((await api.request('GET', '/tokens', { token: bob.token })).status).toBe(200);
  });

  it('public routes are limited per client address', async () => {
    const fresh = await startTestApi({ app: { rateLimit: { max: 2, windowMs: 60_000, authFailures: 3 } } });
    try {
      expect((await fresh.request('GET', '/')).status).toBe(200);
      expect((await fresh.request('GET', '/')).status).toBe(200);
      const res = await fresh.request('GET', '/');
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).not.toBeNull();
    } finally {
      await fresh.close();
    }
  });

  it("one local process flooding a public route does not get the console's files limited", async () => {
    const fresh = await startTestApi({ app: { rateLimit: { max: 2, windowMs: 60_000, authFailures: 3 } } });
    try {
      for (let i = 0; i < 3; i++) await fresh.request('GET', '/');
      expect((await fresh.request('GET', '/openapi.json')).status).toBe(429); // public routes share the address's bucket
      const origin = fresh.baseUrl.replace(/\/api$/, '');
      const page = await fetch(`${origin}/`);
      const html = await page.text();
      expect(page.status).not.toBe(429);
      expect(page.headers.get('x-ratelimit-limit')).toBeNull();
      // The page's own assets too (when the console is built; otherwise `/` explains how to build it, with 503).
      const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
      expect(page.status === 503 || assets.length > 0).toBe(true);
      for (let i = 0; i < 5; i++) {
        for (const asset of ['/', ...assets]) {
          const res = await fetch(origin + asset);
          await res.arrayBuffer(); // read to the end: an unread body holds its connection until garbage collection
          expect(res.status, asset).not.toBe(429);
        }
      }
      expect((await fresh.request('GET', '/')).status).toBe(429); // the flood is still limited
    } finally {
      await fresh.close();
    }
  });

  it('max 0 turns the per-user limit off', async () => {
    const fresh = await startTestApi({ app: { rateLimit: { max: 0, windowMs: 60_000, authFailures: 0 } } });
    try {
      const u = fresh.user('u');
      for (let i = 0; i < 20; i++) expect((await fresh.request('GET', '/tokens', { token: u.token })).status).toBe(200);
      expect((await fresh.request('GET', '/tokens', { token: u.token })).headers.get('x-ratelimit-limit')).toBeNull();
    } finally {
      await fresh.close();
    }
  });
});
