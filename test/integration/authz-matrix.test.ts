/**
 * Authorization matrix over every route of the route table (so routes added later are covered automatically):
 * - no credentials → 401 `Missing or invalid Authorization header`; an unknown token → 401
 *   `Invalid or revoked API token` (public routes: health, OpenAPI document → 200);
 * - routes with a resource id: alice calling with bob's ids → 403; with an unknown id → 404;
 * - the machine's routes (`config.owner`, the settings): anyone but the owner (the first local user, alice) → 403,
 *   a JWT user labelled like the owner included, and nothing changes.
 * Requests carry bodies and query strings valid for the route's schemas, so ownership is what decides.
 * A path parameter this file cannot resolve fails the test: add it to RESOURCES.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken, issueToken } from '../../service/auth/api-tokens.ts';
import { OWNER_ONLY_MESSAGE } from '../../service/http/routes/settings.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';
import { apiRoutes, paramNames, sample } from './route-table.ts';

interface Owned {
  user: TestUser;
  connectionId: string;
  webhookId: string;
}

/** Which stored resource a route's first path parameter names, from the path segment before it. */
const RESOURCES: Record<string, (o: Owned) => string> = {
  'connections/:id': (o) => o.connectionId,
  'connections/:cid': (o) => o.connectionId,
  'webhooks/:id': (o) => o.webhookId,
  'tokens/:id': (o) => o.user.tokenId,
};
/** Secondary parameters: any value (the primary resource's ownership is checked first). */
const SECONDARY: Record<string, string> = {
  chatId: '15550101@s.whatsapp.net',
  messageId: 'true_15550101@s.whatsapp.net_3EB0AAAA',
  filename: 'file.jpg',
  groupId: '120363000000000001@g.us',
  jid: '15550101@s.whatsapp.net',
  callId: 'CALL0001',
  deliveryId: randomUUID(),
};

function primaryKey(url: string): string | undefined {
  return /([\w-]+\/:\w+)/.exec(url)?.[1];
}

describe('authorization matrix', () => {
  let api: TestApi;
  let alice: Owned;
  let bob: Owned;
  const routes = () => apiRoutes(api.app);

  const owned = (name: string): Owned => ownedBy(api.user(name));
  /** An identity-provider (JWT) user whose label is `label`, with an API token as it would make with POST /tokens. */
  const jwtUser = (sub: string, label: string): TestUser => {
    const user = api.store.users.ensureJwtUser('https://idp.example.test/', sub, { preferredName: label });
    const { record, token } = issueToken(api.store.tokens, user.id, 'test');
    return { id: user.id, name: user.name, token, tokenId: record.id };
  };
  const ownedBy = (user: TestUser): Owned => {
    const connectionId = api.connection(user.id, 'online').id;
    const webhookId = randomUUID();
    api.store.webhooks.insert({
      id: webhookId,
      userId: user.id,
      connectionId,
      url: 'https://example.com/hook',
      events: ['message'],
      secret: 'whsec_' + Buffer.alloc(24, 1).toString('base64'),
      active: false,
    });
    return { user, connectionId, webhookId };
  };

  beforeAll(async () => {
    api = await startTestApi({ app: { rateLimit: { max: 100_000, windowMs: 60_000, authFailures: 100_000 } } });
    alice = owned('alice');
    bob = owned('bob');
  });
  afterAll(() => api.close());

  /** The route's path with parameters filled from `target` (`unknown`: a random id for the primary resource). */
  function fill(url: string, target: Owned | 'unknown'): string {
    const key = primaryKey(url);
    return url.replace(/^\/api/, '').replace(/:(\w+)/g, (whole, name: string) => {
      const here = key !== undefined && key.endsWith(whole) && url.includes(key);
      if (here && key) {
        const resolve = RESOURCES[key];
        if (!resolve) throw new Error(`authz-matrix: no fixture for ${key} in ${url}; add it to RESOURCES`);
        return target === 'unknown' ? randomUUID() : encodeURIComponent(resolve(target));
      }
      const v = SECONDARY[name];
      if (v === undefined) throw new Error(`authz-matrix: no value for :${name} in ${url}; add it to SECONDARY`);
      return encodeURIComponent(v);
    });
  }

  function validRequest(r: ReturnType<typeof routes>[number]) {
    const query = sample(r.schema.querystring) as Record<string, unknown> | undefined;
    const qs = query && Object.keys(query).length > 0
      ? '?' + new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()
      : '';
    const body = r.schema.body ? sample(r.schema.body) : undefined;
    return { qs, body };
  }

  it('enumerates the routes of the running service', () => {
    const list = routes().map((r) => `${r.method} ${r.url}`);
    expect(list).toContain('GET /api/connections');
    expect(list).toContain('DELETE /api/tokens/:id');
    expect(list).toContain('GET /api/connections/:id/search');
    expect(list).toContain('GET /api/search');
    expect(list).toContain('GET /api/connections/:id/chats/:chatId/export');
    expect(list).toContain('PATCH /api/settings');
    expect(list.length).toBeGreaterThan(20);
  });

  it('every non-public route: 401 with the exact message without credentials and with an unknown token', async () => {
    const failures: string[] = [];
    for (const r of routes()) {
      const path = fill(r.url, alice);
      const { qs, body } = validRequest(r);
      const none = await api.request(r.method, path + qs, body === undefined ? {} : { body });
      const bad = await api.request(r.method, path + qs, { token: generateToken(), ...(body !== undefined && { body }) });
      if (r.public) {
        if (none.status !== 200) failures.push(`${r.method} ${r.url} public → ${none.status}`);
        continue;
      }
      const expectMissing = { statusCode: 401, error: 'Unauthorized', message: 'Missing or invalid Authorization header' };
      const expectInvalid = { statusCode: 401, error: 'Unauthorized', message: 'Invalid or revoked API token' };
      if (JSON.stringify(none.body) !== JSON.stringify(expectMissing) && !equal(none.body, expectMissing))
        failures.push(`${r.method} ${r.url} no credentials → ${none.status} ${JSON.stringify(none.body)}`);
      if (!equal(bad.body, expectInvalid)) failures.push(`${r.method} ${r.url} unknown token → ${bad.status} ${JSON.stringify(bad.body)}`);
    }
    expect(failures).toEqual([]);
  });

  it('a JWT user labelled like a local user is another user: 403 across on every route with a resource id, both ways', async () => {
    const squatter = ownedBy(jwtUser('squatter-1', 'alice'));
    expect(squatter.user.id).not.toBe(alice.user.id);
    const failures: string[] = [];
    for (const r of routes()) {
      if (r.public || paramNames(r.url).length === 0) continue;
      const { qs, body } = validRequest(r);
      for (const [caller, target, label] of [
        [alice, squatter, 'local alice → jwt "alice"'],
        [squatter, alice, 'jwt "alice" → local alice'],
      ] as const) {
        const res = await api.request(r.method, fill(r.url, target) + qs, {
          token: caller.user.token,
          ...(body !== undefined && { body }),
        });
        if (res.status !== 403) failures.push(`${r.method} ${r.url} ${label} → ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(api.store.connections.get(alice.connectionId)!.status).toBe('online');
    expect(api.store.tokens.get(alice.user.tokenId)!.revokedAt).toBeNull();
  });

  it("every route with a resource id: another user's → 403, an unknown id → 404", async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const r of routes()) {
      if (r.public || paramNames(r.url).length === 0) continue;
      checked++;
      const { qs, body } = validRequest(r);
      const opts = { token: alice.user.token, ...(body !== undefined && { body }) };
      const other = await api.request<{ statusCode: number }>(r.method, fill(r.url, bob) + qs, opts);
      if (other.status !== 403) failures.push(`${r.method} ${r.url} bob's → ${other.status} ${JSON.stringify(other.body)}`);
      const unknown = await api.request(r.method, fill(r.url, 'unknown') + qs, opts);
      if (unknown.status !== 404) failures.push(`${r.method} ${r.url} unknown → ${unknown.status} ${JSON.stringify(unknown.body)}`);
    }
    expect(checked).toBeGreaterThan(10);
    expect(failures).toEqual([]);
    // Bob's resources are untouched.
    expect(api.store.connections.get(bob.connectionId)!.status).toBe('online');
    expect(api.store.tokens.get(bob.user.tokenId)!.revokedAt).toBeNull();
    expect(api.store.webhooks.get(bob.webhookId)).toBeDefined();
  });
});

describe("authorization matrix: the machine's routes", () => {
  let api: TestApi;
  let owner: TestUser;
  let restarts = 0;

  beforeAll(async () => {
    api = await startTestApi({
      app: { rateLimit: { max: 100_000, windowMs: 60_000, authFailures: 100_000 } },
      settings: { restart: () => restarts++ },
    });
    owner = api.user('owner'); // the first local user of the data dir
  });
  afterAll(() => api.close());

  it("every owner-only route: another local user and a JWT user labelled like the owner → 403, nothing changes", async () => {
    const other = api.user('second');
    const user = api.store.users.ensureJwtUser('https://idp.example.test/', 'owner-squatter', { preferredName: 'owner' });
    const squatter = issueToken(api.store.tokens, user.id, 'test').token;
    const routes = apiRoutes(api.app).filter((r) => r.owner);
    expect(routes.map((r) => `${r.method} ${r.url}`).sort()).toEqual(['GET /api/settings', 'PATCH /api/settings', 'POST /api/settings/restart']);
    const failures: string[] = [];
    const body = { workerId: 'changed', allowLanWebhooks: true };
    for (const r of routes) {
      for (const [token, label] of [[other.token, 'second local user'], [squatter, 'jwt "owner"']] as const) {
        // A valid body and an invalid one: the 403 comes before validation.
        for (const b of r.method === 'GET' ? [undefined] : [body, { port: 'x' }]) {
          const res = await api.request(r.method, r.url.replace(/^\/api/, ''), { token, ...(b !== undefined && { body: b }) });
          if (res.status !== 403 || (res.body as { message?: string }).message !== OWNER_ONLY_MESSAGE)
            failures.push(`${r.method} ${r.url} ${label} → ${res.status} ${JSON.stringify(res.body)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(restarts).toBe(0);
    expect(api.settings.allowLanWebhooks()).toBe(false);
    const view = await api.request<{ settings: { workerId: { value: string } } }>('GET', '/settings', { token: owner.token });
    expect(view.status).toBe(200);
    expect(view.body.settings.workerId.value).toBe('local');
  });
});

function equal(a: unknown, b: Record<string, unknown>): boolean {
  return typeof a === 'object' && a !== null && Object.keys(b).every((k) => (a as Record<string, unknown>)[k] === b[k]) &&
    Object.keys(a).length === Object.keys(b).length;
}
