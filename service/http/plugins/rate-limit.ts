/**
 * Rate limits (interface-spec §7/§8: 429 exists, thresholds are ours), with `@fastify/rate-limit`:
 *
 * - Every route: `max` requests per `windowMs` per **user** once authenticated (all of a user's tokens and JWTs
 *   share one bucket), per client address on public routes (health, OpenAPI, docs). The limiter runs in
 *   preParsing, after the auth hook (so it knows the user) and before the body is read.
 *   Keying by address alone would be useless here: every local client is 127.0.0.1.
 * - Failed authentications: `authFailures` per window per client address; past it, further failures answer 429
 *   instead of 401 until the window ends. Valid credentials are never blocked by someone else's failures.
 *
 * - The console's static files (routes with `config.staticAsset`) are not limited: they are the same bytes for
 *   everyone, and every local client shares 127.0.0.1, so a per-address bucket would let one local process flooding
 *   a public route lock everyone out of the console page.
 *
 * Responses carry `x-ratelimit-limit`, `x-ratelimit-remaining`, `x-ratelimit-reset` (seconds); a 429 also has
 * `retry-after` (seconds) and the spec's error body `{ message, statusCode: 429, error: 'Too Many Requests' }`.
 * Counters live in memory (one process); they reset when the service restarts.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_RATE_LIMIT, type RateLimitSettings } from '../../config/service-config.ts';
import { ServiceError } from '../../errors.ts';
import type { AuthFailureHook } from './auth.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A static file of the console: not rate-limited (see above). */
    staticAsset?: boolean;
  }
}

/** Registers the per-user limit on every route registered afterwards; returns the failed-authentication hook. */
export async function registerRateLimit(
  app: FastifyInstance,
  settings: RateLimitSettings = DEFAULT_RATE_LIMIT,
): Promise<AuthFailureHook | undefined> {
  const window = Math.max(1, settings.windowMs);
  await app.register(rateLimit, {
    global: settings.max > 0,
    max: settings.max,
    timeWindow: window,
    hook: 'preParsing',
    cache: 10_000,
    keyGenerator: (request: FastifyRequest) => (request.user ? `user:${request.user.id}` : `ip:${request.ip}`),
    allowList: (request: FastifyRequest) => request.routeOptions.config.staticAsset === true,
    errorResponseBuilder: (_request, context) =>
      new ServiceError(429, `Rate limit exceeded, retry in ${context.after}`),
  });
  if (settings.authFailures <= 0) return undefined;

  const failures = app.createRateLimit({
    max: settings.authFailures,
    timeWindow: window,
    keyGenerator: (request: FastifyRequest) => `auth-failure:${request.ip}`,
  });
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const r = await failures(request);
    if (r.isAllowed || !r.isExceeded) return;
    const retryAfter = String(r.ttlInSeconds);
    reply.header('x-ratelimit-limit', r.max);
    reply.header('x-ratelimit-remaining', 0);
    reply.header('x-ratelimit-reset', retryAfter);
    reply.header('retry-after', retryAfter);
    throw new ServiceError(429, `Too many failed authentications, retry in ${retryAfter} seconds`);
  };
}
