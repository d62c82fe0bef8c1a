/**
 * The pace of the routes that ask WhatsApp something (issue 25): number checks, the group list and a group's
 * metadata, a group's invite code, profiles (the account's and contacts'), the block list — each request may become
 * a usync query or an IQ to WhatsApp's servers, and an account that sends a stream of them can get flagged. The
 * per-user rate limit (3,000/min) does not protect a number; this pace does, per **connection** (all of its users'
 * tokens share it): a token bucket of `max` requests, refilled at `max` per `windowMs` (`--wa-query-pace`, 30/min by
 * default). Every request to these routes counts, also one a cache answers: the route cannot know beforehand.
 *
 * Past it the request answers 429 in the spec's error shape with `retry-after` (whole seconds until the next
 * request is allowed) and asks WhatsApp nothing. It runs after the connection scope, so an unknown or another user's
 * connection is still 404/403 and takes nothing from the bucket. Buckets live in memory (one process) and start full.
 *
 * A route opts in with `config: { waQuery: true }`.
 */
import type { FastifyInstance, preHandlerAsyncHookHandler } from 'fastify';
import { ServiceError } from '../../errors.ts';
import { ErrorResponse } from '../schemas.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route asks WhatsApp (a usync query, an IQ): paced per connection (wa-query-pace.ts). */
    waQuery?: boolean;
  }
}

/** `max` requests per `windowMs` per connection, as a token bucket of `max` (0 = no pace). */
export interface PaceSettings {
  max: number;
  windowMs: number;
}

export const DEFAULT_WA_QUERY_PACE: PaceSettings = { max: 30, windowMs: 60_000 };

/** `per minute`, `per 10 seconds`, `per hour`… */
export function describeWindow(windowMs: number): string {
  const units: Array<[number, string]> = [
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [ms, name] of units) {
    if (windowMs % ms !== 0) continue;
    const n = windowMs / ms;
    return n === 1 ? `per ${name}` : `per ${n} ${name}s`;
  }
  return `per ${windowMs} ms`;
}

/** Token buckets by key (connection id); one small entry per connection paced since the start. */
export class Pace {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly settings: PaceSettings,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Takes one request's token of `key`: 0 when taken, else the milliseconds until one is free (nothing taken). */
  take(key: string): number {
    const { max, windowMs } = this.settings;
    if (max <= 0) return 0;
    const perMs = max / windowMs;
    const at = this.now();
    const b = this.#buckets.get(key);
    const tokens = b ? Math.min(max, b.tokens + (at - b.at) * perMs) : max;
    if (tokens >= 1) {
      this.#buckets.set(key, { tokens: tokens - 1, at });
      return 0;
    }
    this.#buckets.set(key, { tokens, at });
    return Math.ceil((1 - tokens) / perMs);
  }
}

export const tooManyWaQueries = (s: PaceSettings, retryAfterS: number) =>
  new ServiceError(
    429,
    `Too many WhatsApp queries for this connection (limit ${s.max} ${describeWindow(s.windowMs)}); retry in ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}`,
  );

/** Paces every route registered afterwards whose config sets `waQuery` (a preHandler after the connection scope's). */
export function registerWaQueryPace(app: FastifyInstance, settings: PaceSettings = DEFAULT_WA_QUERY_PACE): void {
  const pace = new Pace(settings);
  const paced: preHandlerAsyncHookHandler = async (request, reply) => {
    const waitMs = pace.take(request.connection.id);
    if (waitMs === 0) return;
    const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
    reply.header('retry-after', String(retryAfterS));
    throw tooManyWaQueries(settings, retryAfterS);
  };
  const documented = ErrorResponse(
    `Too many WhatsApp queries for this connection (\`--wa-query-pace\`, ${DEFAULT_WA_QUERY_PACE.max} ` +
      `${describeWindow(DEFAULT_WA_QUERY_PACE.windowMs)} by default), or the rate limit; see \`retry-after\``,
  );
  app.addHook('onRoute', (route) => {
    if (route.config?.waQuery !== true) return;
    const schema = (route.schema ?? {}) as { response?: Record<string, unknown> };
    route.schema = { ...schema, response: { ...schema.response, 429: schema.response?.[429] ?? documented } } as typeof route.schema;
    if (settings.max <= 0) return;
    const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [...own, paced];
  });
}
