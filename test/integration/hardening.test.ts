/**
 * Localhost hardening over real sockets: Host allowlist (DNS rebinding) on HTTP and WebSocket upgrades,
 * Origin checks on state-changing requests and upgrades, no CORS unless an origin is configured, security
 * headers on every response, and tokens never logged.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API_HELMET_HEADERS, TRANSCRIPT_CSP } from '../../service/http/plugins/hardening.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

/** A raw request (fetch does not let us set Host). */
function raw(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const url = new URL(baseUrl + path);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: url.port, method, path: url.pathname + url.search, headers, setHost: false },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function upgrade(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('error', reject);
  });
}

describe('localhost hardening', () => {
  let api: TestApi;
  let alice: TestUser;
  let port: string;
  let own: string;

  beforeAll(async () => {
    api = await startTestApi({
      app: { allowedHosts: ['switchboard.lan', 'other.lan:1234'], allowedOrigins: ['http://localhost:5173'] },
    });
    alice = api.user('alice');
    port = new URL(api.baseUrl).port;
    own = `http://127.0.0.1:${port}`;
  });
  afterAll(() => api.close());

  const auth = () => ({ authorization: `Bearer ${alice.token}` });

  it.each([
    ['127.0.0.1:PORT', 200],
    ['localhost:PORT', 200],
    ['LOCALHOST:PORT', 200],
    ['[::1]:PORT', 200],
    ['127.0.0.1', 200],
    ['switchboard.lan:PORT', 200],
    ['switchboard.lan:9999', 200],
    ['other.lan:1234', 200],
    ['other.lan:PORT', 403],
    ['evil.example.com:PORT', 403],
    ['127.0.0.1.evil.example.com:PORT', 403],
    ['localhost:1', 403],
    ['localhost@evil.com', 403],
  ])('Host %s → %i', async (host, status) => {
    const res = await raw(api.baseUrl, 'GET', '/connections', { ...auth(), host: host.replace('PORT', port) });
    expect(res.status).toBe(status);
    if (status === 403) expect(JSON.parse(res.body)).toEqual({ statusCode: 403, error: 'Forbidden', message: 'Host not allowed' });
    // Refused or not, the response carries the security headers.
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('checks Host before authentication and on public and unknown routes', async () => {
    for (const path of ['/', '/connections', '/nope', '/openapi.json']) {
      expect((await raw(api.baseUrl, 'GET', path, { host: `evil.test:${port}` })).status).toBe(403);
    }
  });

  it('refuses a WebSocket upgrade with a foreign Host or Origin', async () => {
    const url = `ws://127.0.0.1:${port}/api/ws?token=${alice.token}`;
    expect(await upgrade(url, {})).toBe(101);
    expect(await upgrade(url, { origin: own })).toBe(101);
    expect(await upgrade(url, { origin: `http://localhost:${port}` })).toBe(101);
    expect(await upgrade(url, { origin: 'https://evil.example.com' })).toBe(403);
    expect(await upgrade(url, { origin: `http://127.0.0.1:${port}.evil.com` })).toBe(403);
    expect(await upgrade(url, { origin: 'null' })).toBe(403);
    expect(await upgrade(url, { host: `rebound.evil.com:${port}` })).toBe(403);
  });

  it('state-changing requests from a foreign Origin are refused and change nothing', async () => {
    const before = api.store.connections.listByUser(alice.id).length;
    for (const origin of ['https://evil.example.com', 'null', `http://127.0.0.1:${Number(port) + 1}`]) {
      const res = await api.request('POST', '/connections', { token: alice.token, body: {}, headers: { origin } });
      expect(res.status, origin).toBe(403);
      expect(res.body).toEqual({ statusCode: 403, error: 'Forbidden', message: 'Origin not allowed' });
    }
    expect(api.store.connections.listByUser(alice.id)).toHaveLength(before);
    // Own origin, a configured origin, and no Origin at all (curl, scripts) are fine.
    for (const headers of [{ origin: own }, { origin: 'http://localhost:5173' }, {}] as Record<string, string>[]) {
      expect((await api.request('POST', '/connections', { token: alice.token, body: {}, headers })).status).toBe(201);
    }
    // Reads carry no state change; the browser's CORS rules keep their answers from foreign pages.
    const read = await api.request('GET', '/connections', { token: alice.token, headers: { origin: 'https://evil.example.com' } });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('no CORS by default; a configured origin gets preflight answers and CORS headers', async () => {
    const foreign = await raw(api.baseUrl, 'OPTIONS', '/connections', {
      host: `127.0.0.1:${port}`,
      origin: 'https://evil.example.com',
      'access-control-request-method': 'POST',
    });
    expect(foreign.status).toBe(404);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    const pre = await raw(api.baseUrl, 'OPTIONS', '/connections', {
      host: `127.0.0.1:${port}`,
      origin: 'http://localhost:5173',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(pre.headers['access-control-allow-headers']).toContain('authorization');
    const res = await api.request('GET', '/connections', { token: alice.token, headers: { origin: 'http://localhost:5173' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(res.headers.get('vary')).toContain('Origin');
  });

  it('sends security headers on every response', async () => {
    const responses = [
      await api.request('GET', '/'),
      await api.request('GET', '/connections'),
      await api.request('GET', '/connections', { token: alice.token }),
      await api.request('GET', '/nope'),
      await api.request('POST', '/tokens', { token: alice.token, body: {} }),
    ];
    for (const res of responses) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
    const docs = await fetch(api.baseUrl + '/docs/', { redirect: 'manual' });
    expect(docs.status).toBe(200);
    const csp = docs.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(docs.headers.get('x-frame-options')).toBe('DENY');
    // The console's pages outside /api get the page policy too.
    const root = await fetch(api.baseUrl.replace(/\/api$/, '/'));
    expect(root.headers.get('content-security-policy')).toContain(`connect-src 'self' ws://127.0.0.1:${port}`);
  });

  it("gives the API's routes, which skip helmet, exactly the headers helmet gives the docs (but the policy)", async () => {
    // Everything helmet sets: a docs response's headers without the ones other parts of the stack set.
    const notHelmets = /^(content-security-policy|cache-control|content-type|content-length|date|connection|keep-alive|etag|last-modified|accept-ranges|x-ratelimit-.*)$/;
    const helmets = (headers: Headers) => Object.fromEntries([...headers.entries()].filter(([k]) => !notHelmets.test(k)));
    const docs = helmets((await fetch(api.baseUrl + '/docs/', { redirect: 'manual' })).headers);
    expect(Object.keys(docs).length).toBeGreaterThanOrEqual(10);
    expect(docs).toEqual(API_HELMET_HEADERS);
    const responses = [
      await api.request('GET', '/connections', { token: alice.token }),
      await api.request('GET', '/connections'), // 401
      await api.request('GET', '/'),
      (await raw(api.baseUrl, 'GET', '/connections', { ...auth(), host: 'evil.example.com' })) as never, // refused before auth
    ];
    for (const res of responses) {
      const headers = res.headers instanceof Headers ? res.headers : new Headers(res.headers as Record<string, string>);
      expect(helmets(headers)).toEqual(docs);
    }
  });

  it("keeps the HTML transcript's own policy (from this module, stricter than the page's) on an API route", async () => {
    const c = api.connection(alice.id);
    const res = await fetch(`${api.baseUrl}/connections/${c.id}/chats/15550101@s.whatsapp.net/export?format=html`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get('content-security-policy')).toBe(TRANSCRIPT_CSP);
    expect(TRANSCRIPT_CSP).toContain("default-src 'none'");
    expect(TRANSCRIPT_CSP).not.toContain("'self'");
    expect(res.headers.get('cache-control')).toBe('no-store');
    // The JSON next to it keeps the API policy.
    const json = await api.request('GET', `/connections/${c.id}`, { token: alice.token });
    expect(json.headers.get('content-security-policy')).toBe("default-src 'none';frame-ancestors 'none';base-uri 'none';form-action 'none'");
  });

  it('never logs tokens, including ones created through the API', async () => {
    const created = await api.request<{ token: string }>('POST', '/tokens', { token: alice.token, body: { name: 'x' } });
    await api.request('GET', `/tokens?token=${created.body.token}`, { token: created.body.token });
    await upgrade(`ws://127.0.0.1:${port}/api/ws?token=${created.body.token}`, {});
    const logs = api.logs();
    for (const t of [alice.token, created.body.token]) {
      expect(logs).not.toContain(t);
      expect(logs).not.toContain(t.slice(10));
    }
    expect(logs.toLowerCase()).not.toContain('bearer');
  });
});
