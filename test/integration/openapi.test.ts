/**
 * The OpenAPI document: public, a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator), covering
 * every route of the route table with summary, tags, security and error responses; paths relative to its `servers`
 * entry `/api` (the spec's `{base_url}`); the statuses routes answer beyond the common ones declared (issue 25
 * item 5: 503 on /qr, 409 where the connection must be online or waiting, 402 on create, 502 where WhatsApp
 * answers, 507 everywhere, the bodies of media and export); each event type's payload is a component, and the
 * event record of `GET /events` is their union discriminated by `event`; Swagger UI is served.
 */
import fs from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGE_TYPES } from '../../service/db/messages.ts';
import { EVENT_PAYLOAD_SCHEMAS, eventTypeName } from '../../service/events/payloads.ts';
import { startTestApi, type TestApi } from './api-harness.ts';
import { apiRoutes } from './route-table.ts';

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  requestBody?: unknown;
  parameters?: Array<{ in: string; name: string }>;
  responses: Record<string, { description: string; content?: Record<string, { schema: Record<string, unknown> }> }>;
}
interface Doc {
  openapi: string;
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string }>; schemas: Record<string, Record<string, unknown>> };
  security: unknown[];
}

/** The document's path of a route URL: relative to the `/api` base (`servers`), `{param}` for `:param`. */
export const docPath = (url: string) => url.replace(/^\/api(?=\/|$)/, '').replace(/:(\w+)/g, '{$1}') || '/';

describe('OpenAPI document', () => {
  let api: TestApi;
  let doc: Doc;
  const op = (method: string, url: string) => doc.paths[docPath(url)]?.[method.toLowerCase()];

  beforeAll(async () => {
    api = await startTestApi();
    const res = await api.request<Doc>('GET', '/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(() => api.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('declares bearer authentication, required by default', () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
  });

  it('covers every route of the route table, each with summary, tags, auth and error responses', () => {
    const routes = apiRoutes(api.app);
    expect(routes.length).toBeGreaterThan(20);
    for (const r of routes) {
      const path = docPath(r.url);
      const op = doc.paths[path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.url} is missing from the document`).toBeDefined();
      expect(op!.summary, `${r.method} ${r.url} summary`).toBeTruthy();
      expect(op!.tags?.length, `${r.method} ${r.url} tags`).toBeGreaterThan(0);
      expect(op!.responses['429'], `${r.method} ${r.url} 429`).toBeDefined();
      if (r.public) {
        expect(op!.security).toEqual([]);
      } else {
        expect(op!.security).toBeUndefined();
        expect(op!.responses['401'], `${r.method} ${r.url} 401`).toBeDefined();
      }
      for (const name of [...r.url.matchAll(/:(\w+)/g)].map((m) => m[1])) {
        expect(op!.parameters?.some((p) => p.in === 'path' && p.name === name), `${r.url} :${name}`).toBe(true);
        expect(op!.responses['404'], `${r.method} ${r.url} 404`).toBeDefined();
      }
      if (r.schema.body) expect(op!.requestBody, `${r.method} ${r.url} body`).toBeDefined();
      if (r.schema.body || r.schema.params || r.schema.querystring) expect(op!.responses['400']).toBeDefined();
    }
    // Nothing documented that does not exist.
    const known = new Set(routes.map((r) => `${r.method.toLowerCase()} ${docPath(r.url)}`));
    for (const [path, ops] of Object.entries(doc.paths))
      for (const method of Object.keys(ops)) expect(known, `${method} ${path}`).toContain(`${method} ${path}`);
  });

  it('has the API base as its server, and paths relative to it (a client at the base URL calls /api/…, not /api/api/…)', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/api' })]);
    expect(doc.paths['/connections/{id}/chats']).toBeDefined();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/api'))).toEqual([]);
  });

  it('declares the statuses routes answer beyond the common ones', () => {
    const declares = (method: string, url: string, ...statuses: number[]) => {
      for (const status of statuses) expect(op(method, url)?.responses[String(status)], `${method} ${url} ${status}`).toBeDefined();
    };
    // interface-spec §4.1: 503 while the worker boots; 409 when there is nothing to scan.
    declares('GET', '/api/connections/:id/qr', 503, 409);
    expect(op('GET', '/api/connections/:id/qr')!.responses['503']!.description).toContain('Worker is booting, please retry in a few seconds');
    declares('POST', '/api/connections/:id/pairing-code', 409);
    declares('POST', '/api/connections', 402);
    declares('POST', '/api/connections/get-or-create', 402);
    // Everything that acts through the WhatsApp session: 409 not online, 502 WhatsApp failed.
    const whatsapp = apiRoutes(api.app).filter(
      (r) =>
        /^\/api\/connections\/:id\/(send(-\w+)?|react|forward|mark-read|typing(\/stop)?|groups(\/.*)?|me(\/picture)?|blocklist|calls\/.*|contacts\/check|contacts\/:jid\/.*)$/.test(r.url) ||
        (r.url === '/api/connections/:id/messages/:messageId' && r.method !== 'GET'),
    );
    expect(whatsapp.length).toBeGreaterThan(30);
    for (const r of whatsapp) declares(r.method, r.url, 409, 502);
    // Storage can fail under any authenticated route (plugins/errors.ts answers 507), and any can be asked to retry.
    for (const r of apiRoutes(api.app).filter((r) => !r.public)) declares(r.method, r.url, 503, 507);
    // Media and export have a body, described.
    for (const url of ['/api/connections/:id/media/:filename', '/api/connections/:id/messages/:messageId/media']) {
      declares('GET', url, 200, 206, 416);
      expect(op('GET', url)!.responses['200']!.content?.['*/*']?.schema).toEqual({ type: 'string', format: 'binary' });
    }
    const exported = op('GET', '/api/connections/:id/chats/:chatId/export')!.responses['200']!;
    expect(Object.keys(exported.content ?? {}).sort()).toEqual(['application/x-ndjson', 'application/zip', 'text/html']);
    // Every route describes a success.
    for (const r of apiRoutes(api.app)) {
      const codes = Object.keys(op(r.method, r.url)!.responses);
      expect(codes.some((c) => /^[12]\d\d$/.test(c)), `${r.method} ${r.url} has no success response: ${codes.join(', ')}`).toBe(true);
    }
  });

  it('names only the spec’s message types as a message `type` (a sticker is `kind` sticker, `type` image)', () => {
    const texts = [JSON.stringify(doc), fs.readFileSync('docs/api.md', 'utf8'), fs.readFileSync('README.md', 'utf8')];
    const named = texts.flatMap((t) => [...t.matchAll(/\btype`? `(\w+)`/g)].map((m) => m[1]!));
    expect(named.length).toBeGreaterThan(0);
    for (const type of named) expect(MESSAGE_TYPES, `a message type \`${type}\``).toContain(type);
    expect(op('POST', '/api/connections/:id/send-sticker')!.description).toMatch(/`kind` `sticker` and `type` `image`/);
  });

  it('documents the token routes and the spec’s error shape', () => {
    const create = doc.paths['/tokens']!.post!;
    expect(create.summary).toBe('Create an API token (shown once)');
    expect(create.responses['201']).toBeDefined();
    expect(JSON.stringify(create.responses['401'])).toContain('Invalid or revoked API token');
    expect(doc.paths['/']!.get!.security).toEqual([]);
    expect(doc.paths['/']!.get!.summary).toBe('Health (no authentication)');
  });

  it('query parameters with defaults are optional', () => {
    const chats = doc.paths['/connections/{id}/chats']!.get!;
    const limit = chats.parameters!.find((p) => p.name === 'limit') as { required?: boolean };
    expect(limit.required).toBe(false);
  });

  it("documents every event type's payload, and GET /events and the delivery log by reference to them", () => {
    const schemas = doc.components.schemas;
    const types = Object.keys(EVENT_PAYLOAD_SCHEMAS);
    expect(types.length).toBeGreaterThanOrEqual(15);
    const mapping: Record<string, string> = {};
    for (const type of types) {
      const name = eventTypeName(type);
      // the very schema the service builds its payloads against
      expect(schemas[`${name}Payload`], type).toEqual(JSON.parse(JSON.stringify(EVENT_PAYLOAD_SCHEMAS[type as keyof typeof EVENT_PAYLOAD_SCHEMAS])));
      expect(schemas[`${name}Payload`]!.description, type).toBeTruthy();
      const record = schemas[`${name}Event`] as { properties: Record<string, unknown>; required: string[] };
      expect(record.properties.event).toMatchObject({ const: type });
      expect(record.properties.payload).toEqual({ $ref: `#/components/schemas/${name}Payload` });
      expect(record.required.sort()).toEqual(['connectionId', 'event', 'payload', 'seq', 'timestamp']);
      mapping[type] = `#/components/schemas/${name}Event`;
    }
    expect(schemas.Event).toMatchObject({ discriminator: { propertyName: 'event', mapping } });
    expect(schemas.Event!.oneOf).toHaveLength(types.length);
    type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const events = doc.paths['/events']!.get!.responses['200'] as Json;
    expect(events.content['application/json'].schema.properties.events.items).toEqual({ $ref: '#/components/schemas/Event' });
    const logs = doc.paths['/webhooks/{id}/logs']!.get!.responses['200'] as Json;
    expect(logs.content['application/json'].schema.items.properties.payload.properties.payload).toEqual({ $ref: '#/components/schemas/EventPayload' });
    expect(JSON.stringify(doc)).not.toContain('x-event-');
  });

  it('serves Swagger UI at /api/docs without credentials', async () => {
    const res = await fetch(api.baseUrl + '/docs/');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('swagger-ui');
    const init = await fetch(api.baseUrl + '/docs/static/swagger-initializer.js');
    expect(init.status).toBe(200);
  });
});
