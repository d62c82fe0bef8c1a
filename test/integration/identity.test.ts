/**
 * Identities that cannot collide (issue 20 item 4), through the real CLI (child processes on the API's data dir,
 * as an operator runs them next to `serve`) and the real API with identity-provider JWTs signed by a JWKS on
 * 127.0.0.1. The squatting scenario: a JWT user whose `preferred_username` is "ops" signs in first and creates a
 * connection; `switchboard token create --user ops` then issues a token for a separate LOCAL user "ops", which
 * sees none of the JWT user's connections (403 across, both ways). JWT users are addressed by id only, and the CLI
 * never issues a token for one.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../service/auth/api-tokens.ts';
import { runCli } from '../helpers/service-process.ts';
import { startTestApi, type TestApi } from './api-harness.ts';

const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'switchboard';

describe('JWT and local identities', () => {
  let jwks: http.Server;
  let api: TestApi;
  let key: { kid: string; privateKey: CryptoKey; jwk: JWK };
  const cli = (...args: string[]) => runCli([...args, '--data-dir', api.dataDir]);
  const mint = (sub: string, claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: key.kid })
      .setSubject(sub)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(key.privateKey);

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    key = { kid: 'k1', privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' } };
    jwks = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [key.jwk] }));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
    api = await startTestApi({
      app: { jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUrl, algorithms: ['RS256'], cooldownMs: 0, timeoutMs: 1000 } },
    });
  });
  afterAll(async () => {
    await api.close();
    await new Promise((r) => jwks.close(r));
  });

  it('a JWT user labelled "ops" cannot squat the local name: token create --user ops is another account', async () => {
    // The squatter signs in first and creates a connection.
    const jwt = await mint('attacker-1', { preferred_username: 'ops' });
    const jwtConn = await api.request<{ id: string }>('POST', '/connections', { token: jwt, body: { name: 'theirs' } });
    expect(jwtConn.status).toBe(201);
    const squatter = api.store.users.byJwtIdentity(ISSUER, 'attacker-1')!;
    expect(squatter).toMatchObject({ kind: 'jwt', name: 'ops' });

    // The operator's `token create --user ops` makes (and later finds) the LOCAL user "ops".
    const created = await cli('token', 'create', '--user', 'ops', '--name', 'operator');
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const opsToken = created.stdout.trim();
    const ops = api.store.users.byLocalName('ops')!;
    expect(ops).toMatchObject({ kind: 'local', name: 'ops' });
    expect(ops.id).not.toBe(squatter.id);
    const again = (await cli('token', 'create', '--user', 'ops')).stdout.trim();
    expect(api.store.tokens.findActiveByHash(hashToken(again))!.userId).toBe(ops.id);

    // The local token sees nothing of the JWT user's, and the reverse: 403 across.
    expect((await api.request('GET', '/connections', { token: opsToken })).body).toEqual([]);
    const across = await api.request('GET', `/connections/${jwtConn.body.id}`, { token: opsToken });
    expect(across.status).toBe(403);
    expect(across.body).toMatchObject({ statusCode: 403 });
    const opsConn = await api.request<{ id: string }>('POST', '/connections', { token: opsToken, body: { name: 'mine' } });
    expect(opsConn.status).toBe(201);
    expect((await api.request('GET', `/connections/${opsConn.body.id}`, { token: jwt })).status).toBe(403);
    expect((await api.request('DELETE', `/connections/${opsConn.body.id}`, { token: jwt })).status).toBe(403);
    const jwtList = await api.request<Array<{ id: string }>>('GET', '/connections', { token: jwt });
    expect(jwtList.body.map((c) => c.id)).toEqual([jwtConn.body.id]);
    // The JWT user's own API tokens stay scoped to it.
    const jwtTokens = await api.request<Array<{ name: string }>>('GET', '/tokens', { token: jwt });
    expect(jwtTokens.body).toEqual([]);
  });

  it('JWT users are addressed by id only; the CLI lists and revokes their tokens but never issues one', async () => {
    const jwt = await mint('idp-user-7', { preferred_username: 'dana' });
    const scripted = await api.request<{ id: string; token: string }>('POST', '/tokens', { token: jwt, body: { name: 'script' } });
    expect(scripted.status).toBe(201);
    const user = api.store.users.byJwtIdentity(ISSUER, 'idp-user-7')!;

    const refused = await cli('token', 'create', '--user-id', user.id);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/does not issue tokens for such users/);
    expect(api.store.tokens.listActive(user.id)).toHaveLength(1);

    // By label: not a local user, so nothing is found (list) or a separate local user is made (create).
    expect(await cli('token', 'list', '--user', 'dana')).toMatchObject({ code: 1, stderr: 'switchboard: no local user named "dana"\n' });
    const listed = await cli('token', 'list', '--user-id', user.id);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(scripted.body.id);
    expect(await cli('token', 'revoke', scripted.body.id)).toMatchObject({ code: 0 });
    expect((await api.request('GET', '/connections', { token: scripted.body.token })).status).toBe(401);

    const users = await cli('user', 'list');
    expect(users.stdout.split('\n')[0]).toMatch(/^NAME\s+KIND\s+ID\s+STATUS\s+IDENTITY\s+CREATED$/);
    expect(users.stdout).toMatch(new RegExp(`^dana\\s+jwt\\s+${user.id}\\s+active\\s+${ISSUER} idp-user-7\\s`, 'm'));

    // `user disable NAME` names the local user only; a JWT user is disabled by --id.
    expect(await cli('user', 'disable', 'dana')).toMatchObject({ code: 1, stderr: 'switchboard: no local user named "dana"\n' });
    expect(await cli('user', 'disable', '--id', user.id)).toMatchObject({ code: 0, stdout: `disabled ${user.id}\n` });
    expect((await api.request('GET', '/connections', { token: jwt })).status).toBe(401);
    expect(await cli('user', 'enable', '--id', user.id)).toMatchObject({ code: 0 });
    expect((await api.request('GET', '/connections', { token: jwt })).status).toBe(200);
  });

  it('usage errors: both selectors, neither, or a NAME and --id together → exit 2', async () => {
    for (const args of [
      ['token', 'create', '--user', 'a', '--user-id', 'b'],
      ['token', 'list'],
      ['user', 'disable', 'a', '--id', 'b'],
      ['user', 'enable'],
      ['user', 'create', '--id', 'x'],
    ]) {
      const res = await cli(...args);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stdout).toBe('');
    }
    expect(await cli('token', 'create', '--user-id', 'no-such-id')).toMatchObject({ code: 1, stderr: 'switchboard: no user with id no-such-id\n' });
  });
});
