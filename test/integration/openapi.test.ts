/**
 * The OpenAPI document: public, a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator), covering
 * every route of the route table with summary, tags, security and error responses; each event type's payload is a
 * component, and the event record of `GET /events` is their union discriminated by `event`; Swagger UI is served.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_PAYLOAD_SCHEMAS, eventTypeName } from '../../service/events/payloads.ts';
import { startTestApi, type TestApi } from './api-harness.ts';
import { apiRoutes } from './route-table.ts';

interface Operation {
  summary?: string;
  tags?: string[];
  security?: unknown[];
  requestBody?: unknown;
  parameters?: Array<{ in: string; name: string }>;
  responses: Record<string, { description: string }>;
}
interface Doc {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string }>; schemas: Record<string, Record<string, unknown>> };
  security: unknown[];
}

describe('OpenAPI document', () => {
  let api: TestApi;
  let doc: Doc;

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
      const path = r.url.replace(/:(\w+)/g, '{$1}');
      const op = (doc.paths[path] ?? doc.paths[path + '/'])?.[r.method.toLowerCase()];
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
    const norm = (p: string) => p.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1');
    const known = new Set(routes.map((r) => `${r.method.toLowerCase()} ${norm(r.url)}`));
    for (const [path, ops] of Object.entries(doc.paths))
      for (const method of Object.keys(ops)) expect(known, `${method} ${path}`).toContain(`${method} ${norm(path)}`);
  });

  it('documents the token routes and the spec’s error shape', () => {
    const create = doc.paths['/api/tokens']!.post!;
    expect(create.summary).toBe('Create an API token (shown once)');
    expect(create.responses['201']).toBeDefined();
    expect(JSON.stringify(create.responses['401'])).toContain('Invalid or revoked API token');
    expect(doc.paths['/api/']!.get!.security).toEqual([]);
    expect(doc.paths['/api/']!.get!.summary).toBe('Health (no authentication)');
  });

  it('query parameters with defaults are optional', () => {
    const chats = doc.paths['/api/connections/{id}/chats']!.get!;
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
    const events = doc.paths['/api/events']!.get!.responses['200'] as Json;
    expect(events.content['application/json'].schema.properties.events.items).toEqual({ $ref: '#/components/schemas/Event' });
    const logs = doc.paths['/api/webhooks/{id}/logs']!.get!.responses['200'] as Json;
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
