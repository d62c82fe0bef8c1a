/**
 * Identity-provider JWTs against a JWKS served by node:http on 127.0.0.1: valid tokens (user created from
 * `sub`/`email`, then found again), expired → `Token has expired`, wrong issuer/audience/algorithm/key,
 * unknown kid after rotation, provider down → 503, disabled user, JWTs refused on the WebSocket, and a
 * service without an issuer configured refusing JWTs.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApi, type TestApi } from './api-harness.ts';

const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'switchboard';
const unauthorized = (message: string) => ({ statusCode: 401, error: 'Unauthorized', message });

interface Key {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function makeKey(kid: string, alg = 'RS256'): Promise<Key> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

describe('identity-provider JWTs', () => {
  let jwks: http.Server;
  let published: Key[] = [];
  let jwksDown = false;
  let api: TestApi;
  let rsa: Key;
  let ec: Key;

  const mint = (
    key: Key,
    o: { sub?: string; iss?: string; aud?: string; exp?: string | number; claims?: Record<string, unknown> } = {},
  ) => {
    const jwt = new SignJWT({ ...o.claims }).setProtectedHeader({ alg: key.alg, kid: key.kid }).setIssuedAt();
    if (o.sub !== '') jwt.setSubject(o.sub ?? 'user-1');
    return jwt
      .setIssuer(o.iss ?? ISSUER)
      .setAudience(o.aud ?? AUDIENCE)
      .setExpirationTime(o.exp ?? '1h')
      .sign(key.privateKey);
  };

  beforeAll(async () => {
    rsa = await makeKey('rsa-1');
    ec = await makeKey('ec-1', 'ES256');
    published = [rsa, ec];
    jwks = http.createServer((_req, res) => {
      if (jwksDown) return res.writeHead(500).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: published.map((k) => k.jwk) }));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
    api = await startTestApi({
      app: {
        jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUrl, algorithms: ['RS256', 'ES256'], cooldownMs: 0, timeoutMs: 1000 },
        rateLimit: { max: 10_000, windowMs: 60_000, authFailures: 10_000 },
      },
    });
  });
  afterAll(async () => {
    await api.close();
    await new Promise((r) => jwks.close(r));
  });

  it('accepts a valid RS256 JWT and creates the user from sub and email once', async () => {
    const token = await mint(rsa, { sub: 'idp-user-42', claims: { email: 'ann@example.test', name: 'Ann' } });
    const before = api.store.users.count();
    const res = await api.request('GET', '/connections', { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    const user = api.store.users.byJwtIdentity(ISSUER, 'idp-user-42')!;
    expect(user).toMatchObject({ kind: 'jwt', name: 'ann@example.test', email: 'ann@example.test', disabled: false });
    expect(api.store.users.count()).toBe(before + 1);

    // The same subject again (a renewed JWT, ES256 this time) is the same user; its data is scoped to it.
    const again = await mint(ec, { sub: 'idp-user-42' });
    const created = await api.request<{ id: string; userId: string }>('POST', '/connections', { token: again, body: {} });
    expect(created.status).toBe(201);
    expect(created.body.userId).toBe(user.id);
    expect(api.store.users.count()).toBe(before + 1);
    // JWT users can create API tokens for scripts.
    const t = await api.request<{ token: string }>('POST', '/tokens', { token: again, body: { name: 'script' } });
    expect(t.status).toBe(201);
    expect((await api.request<unknown[]>('GET', '/connections', { token: t.body.token })).body).toHaveLength(1);
  });

  it('a JWT user whose label equals a local user\'s name is another user; the label is never a key', async () => {
    const bob = api.user('bob');
    const token = await mint(rsa, { sub: 'bob', claims: { preferred_username: 'bob' } });
    const res = await api.request<{ id: string }>('POST', '/connections', { token, body: {} });
    expect(res.status).toBe(201);
    const jwtBob = api.store.users.byJwtIdentity(ISSUER, 'bob')!;
    expect(jwtBob).toMatchObject({ kind: 'jwt', name: 'bob', issuer: ISSUER, subject: 'bob' });
    expect(jwtBob.id).not.toBe(bob.id);
    expect(api.store.users.byLocalName('bob')!.id).toBe(bob.id);
    // Two JWT users may carry the same label.
    const other = await mint(rsa, { sub: 'bob-2', claims: { preferred_username: 'bob' } });
    expect((await api.request('GET', '/connections', { token: other })).body).toEqual([]);
    expect(api.store.users.byJwtIdentity(ISSUER, 'bob-2')).toMatchObject({ name: 'bob' });
    expect((await api.request('GET', `/connections/${res.body.id}`, { token: bob.token })).status).toBe(403);
  });

  it('iat more than 30 s in the future → 401 Unauthorized; within the skew → accepted', async () => {
    const now = Math.floor(Date.now() / 1000);
    const future = async (iat: number) =>
      new SignJWT({})
        .setProtectedHeader({ alg: rsa.alg, kid: rsa.kid })
        .setSubject('clock-skew')
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + 3600)
        .sign(rsa.privateKey);
    for (const iat of [now + 120, now + 86_400 * 365]) {
      const res = await api.request('GET', '/connections', { token: await future(iat) });
      expect(res.status, String(iat - now)).toBe(401);
      expect(res.body).toEqual(unauthorized('Unauthorized'));
    }
    expect(api.store.users.byJwtIdentity(ISSUER, 'clock-skew')).toBeUndefined();
    expect((await api.request('GET', '/connections', { token: await future(now + 5) })).status).toBe(200);
  });

  it('expired → 401 Token has expired (beyond the 30 s tolerance), within tolerance → accepted', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await mint(rsa, { exp: now - 120 });
    const res = await api.request('GET', '/connections', { token: expired });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(unauthorized('Token has expired'));
    const justExpired = await mint(rsa, { exp: now - 5 });
    expect((await api.request('GET', '/connections', { token: justExpired })).status).toBe(200);
  });

  it.each([
    ['wrong issuer', { iss: 'https://evil.example.test/' }],
    ['wrong audience', { aud: 'someone-else' }],
    ['no subject', { sub: '' }],
  ])('%s → 401 Unauthorized', async (_case, o) => {
    const res = await api.request('GET', '/connections', { token: await mint(rsa, o) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(unauthorized('Unauthorized'));
  });

  it('a key that is not published, an algorithm not allowed, a tampered payload and alg none → 401', async () => {
    const stranger = await makeKey('rsa-1'); // same kid, other key: signature fails
    const rs384 = await makeKey('rs384', 'RS384');
    published = [rsa, ec, rs384]; // published, but RS384 is not in the allow-list
    const good = await mint(rsa);
    const [h, p, s] = good.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: 9e9 })).toString('base64url')}.${s}`;
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`;
    for (const token of [await mint(stranger), await mint(rs384), tampered, none, 'a.b.c']) {
      const res = await api.request('GET', '/connections', { token });
      expect(res.status, token).toBe(401);
      expect(res.body).toEqual(unauthorized('Unauthorized'));
    }
    published = [rsa, ec];
  });

  it('unknown kid: refetches the JWKS (key rotation), and rejects kids the provider does not have', async () => {
    const rotated = await makeKey('rsa-2');
    const token = await mint(rotated, { sub: 'rotated' });
    expect((await api.request('GET', '/connections', { token })).status).toBe(401);
    published = [rsa, ec, rotated];
    expect((await api.request('GET', '/connections', { token })).status).toBe(200);
    published = [rsa, ec];
  });

  it('provider down while a new key is needed → 503, never accepted unverified', async () => {
    jwksDown = true;
    const token = await mint(await makeKey('rsa-3'));
    const res = await api.request('GET', '/connections', { token });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'Identity provider unavailable, please retry',
    });
    jwksDown = false;
  });

  it('a disabled user → 401 User is disabled', async () => {
    const token = await mint(rsa, { sub: 'to-disable' });
    expect((await api.request('GET', '/connections', { token })).status).toBe(200);
    api.store.users.setDisabled(api.store.users.byJwtIdentity(ISSUER, 'to-disable')!.id, true);
    const res = await api.request('GET', '/connections', { token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(unauthorized('User is disabled'));
  });

  it('the WebSocket takes API tokens only: a valid JWT is refused with 401', async () => {
    const token = await mint(rsa);
    const url = api.baseUrl.replace(/^http/, 'ws') + '/ws';
    for (const opts of [{ url: `${url}?token=${token}` }, { url, headers: { authorization: `Bearer ${token}` } }]) {
      const status = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(opts.url, { headers: opts.headers ?? {} });
        ws.on('open', () => reject(new Error('opened')));
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('error', () => undefined);
      });
      expect(status).toBe(401);
    }
  });
});

describe('JWTs without an identity provider configured', () => {
  it('are refused as invalid tokens', async () => {
    const api = await startTestApi();
    try {
      const key = await makeKey('k');
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid: 'k' })
        .setSubject('x')
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setExpirationTime('1h')
        .sign(key.privateKey);
      const res = await api.request('GET', '/connections', { token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(unauthorized('Invalid or revoked API token'));
    } finally {
      await api.close();
    }
  });
});
