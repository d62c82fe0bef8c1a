/**
 * The API's routes as the running Fastify instance registered them (app.routeTable, filled by the OpenAPI
 * plugin's onRoute hook), for the authorization matrix, fuzz and OpenAPI coverage tests: a route added by anyone
 * is covered without editing the tests. Also a sampler that builds a request valid for a route's schemas.
 */
import type { RouteEntry } from '../../service/http/openapi.ts';
import type { ApiInstance } from '../../service/http/type-provider.ts';

/** Routes callers use: not HEAD (Fastify's automatic twin of GET), not the docs' hidden asset routes. */
export function apiRoutes(app: ApiInstance): RouteEntry[] {
  return app.routeTable.filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS' && !r.hidden);
}

export const paramNames = (url: string) => [...url.matchAll(/:(\w+)/g)].map((m) => m[1]!);

interface S {
  type?: string;
  properties?: Record<string, S>;
  required?: string[];
  anyOf?: S[];
  allOf?: S[];
  items?: S;
  const?: unknown;
  default?: unknown;
  minimum?: number;
  minLength?: number;
  minItems?: number;
  pattern?: string;
  enum?: unknown[];
}

/** Values for fields whose meaning a generic sample would miss. */
const FIELD_SAMPLES: Record<string, unknown> = {
  url: 'https://example.com/hook',
  events: ['message'],
  chatId: '+15550101',
  text: 'hi',
  quantity: 1,
  name: 'sample',
  emoji: '👍',
  phoneNumbers: ['+15550101'],
  participants: ['+15550101'],
  subject: 'Sample group',
};

/** A value that satisfies `schema` (required fields only), or undefined when the schema is absent. */
export function sample(schema: unknown, field?: string): unknown {
  const s = schema as S | undefined;
  if (!s) return undefined;
  if (field !== undefined && field in FIELD_SAMPLES) return FIELD_SAMPLES[field];
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  if (s.anyOf) return sample(s.anyOf.find((a) => a.type !== 'null') ?? s.anyOf[0], field);
  if (s.allOf) return Object.assign({}, ...s.allOf.map((a) => sample(a) as object));
  switch (s.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of s.required ?? []) out[key] = sample(s.properties?.[key], key);
      return out;
    }
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 0) }, () => sample(s.items));
    case 'integer':
    case 'number':
      return Math.max(1, s.minimum ?? 1);
    case 'boolean':
      return false;
    case 'string':
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    default:
      return {};
  }
}
