/**
 * Connection-scoped routes: every route whose path has a connection `:id` (`/connections/:id`, `/connections/:id/…`)
 * resolves it to the caller's connection before its handler runs and finds it as `request.connection`; a route under
 * that path cannot forget the check. A preHandler hook, so a malformed request (params, query, body) still answers
 * 400 first, as each handler's own check did before.
 *
 * Unknown → 404 `Connection not found`; another user's → 403 `Connection belongs to another user`; `stopped`
 * (soft-deleted) → 404 `Connection not found`, except on routes whose config sets `includeStoppedConnection`
 * (reading the record itself).
 */
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { ConnectionRow } from '../../db/connections.ts';
import type { Repos } from '../../db/store-api.ts';
import { forbidden, notFound } from '../../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's connection named by `:id`; set on connection-scoped routes only (see connection-scope.ts). */
    connection: ConnectionRow;
  }
  interface FastifyContextConfig {
    /** A connection-scoped route that also finds a `stopped` (soft-deleted) connection. */
    includeStoppedConnection?: boolean;
  }
}

/** A path with a connection `:id`: `/connections/:id` or anything under it. */
const CONNECTION_PATH = /\/connections\/:id(\/|$)/;

/**
 * The caller's connection `id`.
 * @throws ServiceError 404 `Connection not found`, 403 `Connection belongs to another user`.
 */
async function ownedConnection(
  repos: Pick<Repos, 'connections'>,
  request: Pick<FastifyRequest, 'user'>,
  id: string,
  opts: { includeStopped?: boolean } = {},
): Promise<ConnectionRow> {
  const row = await repos.connections.get(id);
  if (!row) throw notFound('Connection not found');
  if (row.userId !== request.user.id) throw forbidden('Connection belongs to another user');
  if (row.status === 'stopped' && !opts.includeStopped) throw notFound('Connection not found');
  return row;
}

/** Adds `request.connection` and the hook that sets it on every connection-scoped route registered afterwards. */
export function registerConnectionScope(app: FastifyInstance, repos: Pick<Repos, 'connections'>): void {
  app.decorateRequest('connection', null as unknown as ConnectionRow);
  app.addHook('onRoute', (route) => {
    if (!CONNECTION_PATH.test(route.url ?? route.path)) return;
    const includeStopped = route.config?.includeStoppedConnection === true;
    const resolve: preHandlerAsyncHookHandler = async (request) => {
      request.connection = await ownedConnection(repos, request, (request.params as { id: string }).id, { includeStopped });
    };
    const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [resolve, ...own];
  });
}
