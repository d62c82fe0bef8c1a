/**
 * Authentication hook: every route needs `Authorization: Bearer <token>` unless its config says otherwise
 * (`config.auth`). The caller is attached as `request.user`. Runs in onRequest, so unauthenticated requests
 * are rejected before their body is read. Unknown routes skip it and answer 404.
 * The query-token mode (the WebSocket) accepts API tokens only (interface-spec §4.7); a JWT there is an invalid
 * API token. Every 401 is reported to `onFailure` (the failed-authentication rate limit), which may turn it
 * into a 429.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AUTH_MESSAGES, bearerToken, unauthorized, type Authenticate, type AuthUser } from '../../auth/authenticate.ts';
import { ServiceError } from '../../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set on every route whose `config.auth` is not 'none'. */
    user: AuthUser;
  }
  interface FastifyContextConfig {
    /**
     * 'bearer' (default): Authorization header. 'none': public. 'bearer-or-query': the header, or the `token`
     * query parameter when no header is sent (WebSocket clients in browsers cannot set headers).
     */
    auth?: 'bearer' | 'none' | 'bearer-or-query';
    /** The route belongs to the machine, not to a user: only its owner may call it (routes/settings.ts). */
    owner?: boolean;
  }
}

/** Called with every 401 before it is sent; it may throw another error (a 429) instead. */
export type AuthFailureHook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** Adds the hook and the `request.user` decoration; `authenticate` maps a token to its user or throws a 401. */
export function registerAuth(app: FastifyInstance, authenticate: Authenticate, onFailure?: AuthFailureHook): void {
  app.decorateRequest('user', null as unknown as AuthUser);
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return;
    const mode = request.routeOptions.config.auth ?? 'bearer';
    if (mode === 'none') return;
    try {
      const header = request.headers.authorization;
      const queryMode = mode === 'bearer-or-query';
      const token = header === undefined && queryMode ? queryToken(request.query) : bearerToken(header);
      if (!token) throw unauthorized(AUTH_MESSAGES.missingHeader);
      request.user = await authenticate(token, queryMode ? { kinds: ['api-token'] } : {});
    } catch (err) {
      if (onFailure && err instanceof ServiceError && err.statusCode === 401) await onFailure(request, reply);
      throw err;
    }
  });
}

function queryToken(query: unknown): string | undefined {
  const token = (query as Record<string, unknown> | undefined)?.token;
  return typeof token === 'string' && token !== '' ? token : undefined;
}
