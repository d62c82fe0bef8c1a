/**
 * Property-based fuzzing (fast-check) of every route of the route table with malformed path parameters, query
 * strings and bodies (random JSON, wrong types, broken JSON text): never a 5xx, the service keeps answering,
 * and a 4xx stores nothing (row counts of every table and the settings file unchanged). Sessions are not started (the engine's
 * lifecycle calls are stubbed) so only the request itself can write.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';
import { apiRoutes, sample } from './route-table.ts';

const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 12);

describe('fuzzing every route', () => {
  let api: TestApi;
  let alice: TestUser;
  let connectionId: string;
  let tables: string[];

  const settingsFile = () => {
    try {
      return fs.readFileSync(path.join(api.dataDir, 'settings.json'), 'utf8');
    } catch {
      return '(none)';
    }
  };
  const counts = () =>
    tables.map((t) => (api.store.db.prepare(`SELECT COUNT(*) AS n FROM "${t}"`).get() as { n: number }).n).join(',') +
    settingsFile();

  beforeAll(async () => {
    api = await startTestApi({ app: { rateLimit: { max: 1_000_000, windowMs: 60_000, authFailures: 1_000_000 } } });
    const engine = api.engine as unknown as Record<string, unknown>;
    engine.start = () => undefined;
    engine.startAll = () => undefined;
    engine.restart = async () => undefined;
    engine.stop = async () => undefined;
    alice = api.user('alice');
    connectionId = api.connection(alice.id, 'scan_qr').id;
    tables = (
      api.store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as {
        name: string;
      }[]
    ).map((r) => r.name);
  });
  afterAll(() => api.close());

  const segment = fc.oneof(
    fc.constantFrom('', ' ', '..', '%', '%00', 'null', '-1', '1e309', '\u0000', '😀', 'x'.repeat(3000)),
    fc.string({ maxLength: 40 }),
    fc.uuid(),
  );
  const paramValue = () => fc.oneof(fc.constant('OWN'), segment);
  const queryArb = fc.dictionary(
    fc.oneof(fc.constantFrom('limit', 'offset', 'before', 'chatId', 'after', 'around', 'format', 'unread_only', 'token', 'q', 'order', 'since', 'refresh'), fc.string({ maxLength: 8 })),
    fc.oneof(segment, fc.integer().map(String), fc.constantFrom('true', 'false', '5.5', '-0', '999999999999999999')),
    { maxKeys: 4 },
  );
  const bodyArb = (valid: unknown) =>
    fc.oneof(
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 3 }).map((v) => ({ json: v })),
      fc.string({ maxLength: 60 }).map((raw) => ({ raw })),
      fc.constantFrom('{', '[1,', '{"a":1}}', 'null', '""', '1e999', '{"__proto__":{"x":1}}').map((raw) => ({ raw })),
      // A valid body with one field replaced by a random value: exercises the checks past the schema.
      fc.tuple(fc.jsonValue({ maxDepth: 2 }), fc.nat()).map(([v, i]) => {
        if (typeof valid !== 'object' || valid === null) return { json: v };
        const keys = Object.keys(valid);
        return { json: keys.length ? { ...valid, [keys[i % keys.length]!]: v } : v };
      }),
    );

  it('never answers 5xx and stores nothing on a 4xx', async () => {
    const problems: string[] = [];
    for (const r of apiRoutes(api.app)) {
      if (r.url.endsWith('/ws')) continue; // upgrade route: covered by the stream tests
      const names = [...r.url.matchAll(/:(\w+)/g)].map((m) => m[1]!);
      const valid = sample(r.schema.body);
      await fc.assert(
        fc.asyncProperty(
          fc.array(paramValue(), { minLength: names.length, maxLength: names.length }),
          queryArb,
          r.method === 'GET' ? fc.constant(undefined) : bodyArb(valid),
          async (params, query, body) => {
            let i = 0;
            const path = r.url
              .replace(/^\/api/, '')
              .replace(/:(\w+)/g, () => {
                const v = params[i++]!;
                return encodeURIComponent(v === 'OWN' ? connectionId : v) || '%20';
              });
            const qs = Object.keys(query).length ? '?' + new URLSearchParams(query).toString() : '';
            const before = counts();
            const headers: Record<string, string> = {};
            let rawBody: string | undefined;
            if (body && 'raw' in body) {
              headers['content-type'] = 'application/json';
              rawBody = body.raw;
            }
            const res = await api.request(r.method, path + qs, {
              token: alice.token,
              headers,
              ...(body && 'json' in body && body.json !== undefined && { body: body.json }),
              ...(rawBody !== undefined && { rawBody }),
            }).catch((err: Error) => ({ status: 599, body: String(err), headers: new Headers() }));
            if (res.status >= 500) problems.push(`${r.method} ${path}${qs} ${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`);
            if (res.status >= 400 && res.status < 500 && counts() !== before)
              problems.push(`${r.method} ${path}${qs} → ${res.status} but rows changed`);
            return res.status < 500;
          },
        ),
        { numRuns: RUNS_PER_ROUTE, seed: Number(process.env.FUZZ_SEED ?? 20260101) },
      ).catch(() => undefined); // collected in `problems` with the full request
    }
    expect(problems.slice(0, 20)).toEqual([]);
    expect((await api.request('GET', '/')).status).toBe(200);
  });

  it('search: any q gives 200 or a 400 with a message, never a 5xx', async () => {
    const { incomingText } = await import('../helpers/messages.ts');
    const searchConnection = api.connection(alice.id, 'connected').id; // the first test may have deleted its own
    api.store.tx(() => {
      for (const [i, text] of ['São Paulo invoice', 'NEAR the "quoted" col:umn', '東京タワー', 'a-b c*d ^e'].entries()) {
        api.store.messages.upsert(searchConnection, incomingText('15550101@s.whatsapp.net', `fz${i}`, 1000 + i, text));
      }
    });
    // Query text built from FTS5's own syntax characters and operators, mixed with words and other scripts.
    const piece = fc.oneof(
      fc.constantFrom('"', '-', '*', '(', ')', ':', '^', '+', '{', '}', ' ', 'AND', 'OR', 'NOT', 'NEAR', 'NEAR(', 'col:', '""', '-"', '*"'),
      fc.constantFrom('sao', 'São', 'invoice', '東京', 'quoted', '\u0000', '😀', '\u0301', 'x'.repeat(600)),
      fc.string({ maxLength: 6 }),
    );
    const problems: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 12 }).map((a) => a.join('')), fc.constantFrom('recent', 'relevance'), async (q, order) => {
        for (const route of [`/connections/${searchConnection}/search`, '/search']) {
          const res = await api.request('GET', `${route}?${new URLSearchParams({ q, order })}`, { token: alice.token });
          const body = res.body as { message?: unknown; results?: unknown };
          if (res.status === 200 ? !Array.isArray(body.results) : res.status !== 400 || typeof body.message !== 'string') {
            problems.push(`${route} q=${JSON.stringify(q)} → ${res.status} ${JSON.stringify(res.body)}`);
          }
        }
        return true;
      }),
      { numRuns: RUNS_PER_ROUTE * 25, seed: Number(process.env.FUZZ_SEED ?? 20260101) },
    );
    expect(problems.slice(0, 20)).toEqual([]);
  });
});
