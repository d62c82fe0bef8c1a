/**
 * Authentication hook: every route needs `Authorization: Bearer <token>` unless its config says otherwise
 * (`config.auth`). The caller is attached as `request.user`. Runs in onRequest, so unauthenticated requests
 * are rejected before their body is read. Unknown routes skip it and answer 404.
 */
import type { FastifyInstance } from 'fastify';
import { AUTH_MESSAGES, bearerToken, unauthorized, type AuthUser } from '../../auth/authenticate.ts';

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
  }
}

/** Adds the hook and the `request.user` decoration; `authenticate` maps a token to its user or throws a 401. */
export function registerAuth(app: FastifyInstance, authenticate: (token: string) => Promise<AuthUser>): void {
  app.decorateRequest('user', null as unknown as AuthUser);
  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const mode = request.routeOptions.config.auth ?? 'bearer';
    if (mode === 'none') return;
    const header = request.headers.authorization;
    const token = header === undefined && mode === 'bearer-or-query' ? queryToken(request.query) : bearerToken(header);
    if (!token) throw unauthorized(AUTH_MESSAGES.missingHeader);
    request.user = await authenticate(token);
  });
}

function queryToken(query: unknown): string | undefined {
  const token = (query as Record<string, unknown> | undefined)?.token;
  return typeof token === 'string' && token !== '' ? token : undefined;
}
