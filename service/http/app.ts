/**
 * Builds the Fastify instance of the local API: validation, error shape, authentication and request logging
 * as cross-cutting hooks, then one route plugin per resource under `/api` (interface-spec §4), including the
 * WebSocket event stream. The caller listens and closes it.
 */
import Fastify, { LogController, type FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';
import { apiTokenVerifier } from '../auth/api-tokens.ts';
import { createAuthenticator } from '../auth/authenticate.ts';
import type { EventStream, StreamLimits } from '../stream/event-stream.ts';
import { registerWebSocketSupport, streamRoutes } from '../stream/routes.ts';
import type { ApiDeps } from './deps.ts';
import { registerAuth } from './plugins/auth.ts';
import { registerErrorHandling } from './plugins/errors.ts';
import { registerRequestLog } from './plugins/request-log.ts';
import { chatRoutes } from './routes/chats.ts';
import { connectionRoutes } from './routes/connections.ts';
import { contactRoutes } from './routes/contacts.ts';
import { healthRoutes } from './routes/health.ts';
import { messageRoutes } from './routes/messages.ts';
import { sendRoutes } from './routes/send.ts';
import type { ApiInstance, TypeBoxTypeProvider } from './type-provider.ts';
import { typeBoxValidatorCompiler } from './validation.ts';

export interface AppOptions extends ApiDeps {
  logger: Logger;
  /** Overrides of the event stream's buffering and heartbeat limits (tests use small ones). */
  streamLimits?: Partial<StreamLimits>;
}

export const API_PREFIX = '/api';

/** A ready-to-listen API instance. */
export async function buildApp(opts: AppOptions): Promise<ApiInstance> {
  const { logger, streamLimits, ...deps } = opts;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Fastify's own request lines would log URLs with `?token=`; plugins/request-log.ts writes redacted ones.
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(typeBoxValidatorCompiler);
  registerErrorHandling(app);
  const streams = new Set<EventStream>();
  await registerWebSocketSupport(app, streams); // before auth: see its doc
  registerAuth(app, createAuthenticator([apiTokenVerifier(deps.store)]));
  registerRequestLog(app);

  for (const routes of [healthRoutes, connectionRoutes, chatRoutes, messageRoutes, contactRoutes, sendRoutes]) {
    await app.register(routes, { ...deps, prefix: API_PREFIX });
  }
  await app.register(streamRoutes, { ...deps, streams, ...(streamLimits && { streamLimits }), prefix: API_PREFIX });
  await app.ready();
  return app;
}
