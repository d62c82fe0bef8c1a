/**
 * `GET /api/`: unauthenticated liveness and a few facts about this service (docs/architecture.md § Base URL and
 * health).
 */
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
  portFallback: Type.Optional(
    Type.Object(
      {
        requested: Type.Integer({ description: 'The configured API port, which another program holds' }),
        port: Type.Integer({ description: 'The port the API listens on instead' }),
        message: Type.String({ description: 'What happened and what to do, for the operator' }),
      },
      { description: 'Present when the configured port was taken and the desktop app fell back to a free one' },
    ),
  ),
});

export const healthRoutes: ApiPlugin<ApiDeps> = async (api, { asyncStore: store, version, sandbox, startedAt, storage, portFallback }) => {
  api.get('/', { config: { auth: 'none' }, schema: { response: { 200: HealthSchema } } }, async () => {
    const fallback = portFallback?.();
    return {
      status: 'ok' as const,
      version,
      uptime: Math.floor((Date.now() - startedAt) / 1000),
      connections: await store.read.connections.countActive(),
      sandbox,
      storage: storage?.() ?? (store.storage().state === 'unavailable' ? ('unavailable' as const) : ('ok' as const)),
      ...(fallback && { portFallback: fallback }),
    };
  });
};
