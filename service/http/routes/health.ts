/** `GET /api/`: unauthenticated liveness and a few facts about this service (DESIGN.md §4). */
import { Type } from '@sinclair/typebox';
import type { ApiDeps } from '../deps.ts';
import type { ApiPlugin } from '../type-provider.ts';

const HealthSchema = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  /** Seconds since the service started. */
  uptime: Type.Integer(),
  /** Connections of all users that are not stopped. */
  connections: Type.Integer(),
  sandbox: Type.Boolean(),
  storage: Type.Union([Type.Literal('ok'), Type.Literal('low'), Type.Literal('unavailable')], {
    description: '`low`: the data dir has less than twice --min-free-mb free; `unavailable`: commits are failing (disk full)',
  }),
});

export const healthRoutes: ApiPlugin<ApiDeps> = async (api, { store, version, sandbox, startedAt, storage }) => {
  api.get('/', { config: { auth: 'none' }, schema: { response: { 200: HealthSchema } } }, async () => ({
    status: 'ok' as const,
    version,
    uptime: Math.floor((Date.now() - startedAt) / 1000),
    connections: store.connections.countActive(),
    sandbox,
    storage: storage?.() ?? (store.storage().state === 'unavailable' ? ('unavailable' as const) : ('ok' as const)),
  }));
};
