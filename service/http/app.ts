/**
 * Builds the Fastify instance of the local API: validation, error shape, authentication and request logging
 * as cross-cutting hooks, then one route plugin per resource under `/api` (interface-spec §4), including the
 * WebSocket event stream. The caller listens and closes it.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { apiTokenVerifier, type OtherModeTokens } from '../auth/api-tokens.ts';
import { createAuthenticator } from '../auth/authenticate.ts';
import { jwtVerifier, type JwtVerifierOptions } from '../auth/jwt.ts';
import { LiveCredentials } from '../auth/live-credentials.ts';
import type { RateLimitSettings } from '../config/service-config.ts';
import { createReader, heavyReads, type Reader } from '../db/reader.ts';
import type { EventStream, StreamLimits } from './stream/event-stream.ts';
import { registerWebSocketSupport, streamRoutes } from './stream/routes.ts';
import type { ApiDeps } from './deps.ts';
import { registerAuth } from './plugins/auth.ts';
import { registerConnectionScope } from './plugins/connection-scope.ts';
import { registerErrorHandling } from './plugins/errors.ts';
import { registerIdempotency } from './plugins/idempotency.ts';
import { registerHardening } from './plugins/hardening.ts';
import { registerRateLimit } from './plugins/rate-limit.ts';
import { registerRequestLog } from './plugins/request-log.ts';
import { DEFAULT_USER_CAPS, registerUploadCap, type UserCaps } from './plugins/user-caps.ts';
import { registerWaQueryPace, type PaceSettings } from './plugins/wa-query-pace.ts';
import { DOCS_PATH, registerOpenApi } from './openapi.ts';
import { registerStatusLog, STATUS_LOG_ENV } from './status-log.ts';
import { billingRoutes } from './routes/billing.ts';
import { chatRoutes } from './routes/chats.ts';
import { consoleRoutes } from './routes/console.ts';
import { connectionRoutes } from './routes/connections.ts';
import { contactRoutes } from './routes/contacts.ts';
import { groupRoutes } from './routes/groups.ts';
import { healthRoutes } from './routes/health.ts';
import { mediaRoutes } from './routes/media.ts';
import { messageRoutes } from './routes/messages.ts';
import { searchRoutes } from './routes/search.ts';
import { presenceRoutes } from './routes/presence.ts';
import { sendRoutes } from './routes/send.ts';
import { statusRoutes } from './routes/status.ts';
import { operationRoutes } from './routes/operations.ts';
import { profileRoutes } from './routes/profiles.ts';
import { eventRoutes } from './routes/events.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { settingsRoutes } from './routes/settings.ts';
import { tokenRoutes } from './routes/tokens.ts';
import type { ApiInstance, TypeBoxTypeProvider } from './type-provider.ts';
import { typeBoxValidatorCompiler } from './validation.ts';
import { serializerSchemaController } from './serializer.ts';

export interface AppOptions extends ApiDeps {
  logger: Logger;
  /** Overrides of the event stream's buffering and heartbeat limits (tests use small ones). */
  streamLimits?: Partial<StreamLimits>;
  /** Identity-provider JWTs; absent: only API tokens are accepted. */
  jwt?: JwtVerifierOptions;
  /** Request limits; absent: DEFAULT_RATE_LIMIT (3000/min per user, 30 failed authentications/min per address). */
  rateLimit?: RateLimitSettings;
  /** Extra Host header values and browser origins accepted (plugins/hardening.ts). */
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /** How often open WebSocket streams are re-checked against revocations made elsewhere (the CLI). */
  revocationSweepMs?: number;
  /** Per-user caps on open event streams, large uploads and exports in progress; absent: DEFAULT_USER_CAPS (20, 2, 2). */
  userCaps?: Partial<UserCaps>;
  /** The other mode's data dir (live ↔ sandbox), named in a 401 for one of its tokens; absent: no such hint. */
  otherModeTokens?: OtherModeTokens;
  /** Where searches and exports read; absent: a pool of reader threads on the store's file (db/reader.ts), closed with the app. */
  reader?: Reader;
  /** The pace of the routes that query WhatsApp, per connection (plugins/wa-query-pace.ts); absent: DEFAULT_WA_QUERY_PACE. */
  waQueryPace?: PaceSettings;
}

export const API_PREFIX = '/api';

/**
 * Many HTTP clients send `Content-Type: application/json` on every request, bodyless POSTs and DELETEs included;
 * Fastify's JSON parser refuses an empty body (400 FST_ERR_CTP_EMPTY_JSON_BODY). An empty (or blank) body is
 * parsed as no body, so it is accepted wherever the body is optional or absent; anything else goes to Fastify's
 * own parser (prototype-poisoning checks kept).
 */
function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    return parseJson(request, text, done);
  });
}

/** A ready-to-listen API instance. */
export async function buildApp(opts: AppOptions): Promise<ApiInstance> {
  const {
    logger,
    streamLimits,
    jwt,
    rateLimit,
    allowedHosts,
    allowedOrigins,
    revocationSweepMs,
    userCaps,
    otherModeTokens,
    reader: givenReader,
    waQueryPace,
    ...deps
  } = opts;
  const caps: UserCaps = { ...DEFAULT_USER_CAPS, ...userCaps };
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Fastify's own request lines would log URLs with `?token=`; plugins/request-log.ts writes redacted ones.
    logController: new LogController({ disableRequestLogging: true }),
    schemaController: serializerSchemaController(),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(typeBoxValidatorCompiler);
  acceptEmptyJsonBodies(app);
  registerErrorHandling(app);
  const streams = new Set<EventStream>();
  await registerWebSocketSupport(app, streams); // before auth: see its doc
  // Order matters: Host/Origin checks first, then the rate limit's per-route hooks and OpenAPI's onRoute
  // hook (both apply to routes registered after them), then authentication.
  await registerHardening(app, {
    apiPrefix: API_PREFIX,
    docsPrefix: API_PREFIX + DOCS_PATH,
    ...(allowedHosts && { allowedHosts }),
    ...(allowedOrigins && { allowedOrigins }),
  });
  const onAuthFailure = await registerRateLimit(app, rateLimit);
  const verifiers = [
    apiTokenVerifier(deps.store, undefined, otherModeTokens),
    ...(jwt ? [jwtVerifier(deps.store, jwt)] : []),
  ];
  registerAuth(app, createAuthenticator(verifiers), onAuthFailure);
  registerConnectionScope(app, deps.asyncStore.read); // `/connections/:id…` routes: request.connection, 404/403
  registerIdempotency(app, deps.store); // Idempotency-Key on send and operation routes (after the scope: it needs request.connection)
  registerWaQueryPace(app, waQueryPace); // after the connection scope: a route's pace counts only the caller's connections
  registerUploadCap(app, caps);
  registerRequestLog(app);
  // Test runs only (status-log.ts): which statuses each route answered, checked against the OpenAPI document.
  const statusLog = process.env[STATUS_LOG_ENV];
  if (statusLog) registerStatusLog(app, statusLog, API_PREFIX);
  // The engine writes incoming traffic in group commits (db/store.ts); a response must never report a write
  // that is not on disk yet, so commit whatever is open, and wait for its sync, before any answer leaves. With no
  // batch open or syncing (most reads) there is nothing to wait for: a callback hook answers without a promise.
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (deps.store.isDurable()) return done(null, payload);
    // The open batch held incoming traffic, not this request's writes (those committed in their own transaction):
    // if it fails, the sessions drop what waited for it and retry (store.onCommitFailure); the answer stands.
    const failed = (err: unknown) => {
      request.log.warn({ err }, 'the open group commit failed while answering');
      done(null, payload);
    };
    try {
      deps.store.durable().then(() => done(null, payload), failed);
    } catch (err) {
      failed(err);
    }
  });
  await registerOpenApi(app, { prefix: API_PREFIX, version: deps.version });

  const live = new LiveCredentials();
  live.start(deps.store, revocationSweepMs);
  app.addHook('onClose', async () => live.stop());

  for (const routes of [healthRoutes, connectionRoutes, chatRoutes, messageRoutes, contactRoutes, groupRoutes, sendRoutes, statusRoutes, operationRoutes, profileRoutes, presenceRoutes, mediaRoutes, webhookRoutes, eventRoutes, billingRoutes]) {
    await app.register(routes, { ...deps, prefix: API_PREFIX });
  }
  // Searches and exports read on reader threads, never on this thread (db/reader.ts).
  const reader =
    givenReader ??
    createReader({
      file: deps.store.db.memory ? undefined : deps.store.db.name,
      inProcess: heavyReads(deps.store),
      mediaBase: () => deps.store.mediaUrls.base,
      onError: (err) => logger.error({ err }, 'a reader thread failed; the next read starts a new one'),
    });
  if (!givenReader) app.addHook('onClose', async () => reader.close());
  await app.register(searchRoutes, { ...deps, reader, maxExports: caps.maxExports, prefix: API_PREFIX });
  await app.register(tokenRoutes, { ...deps, live, prefix: API_PREFIX });
  if (deps.settings) await app.register(settingsRoutes, { ...deps, settings: deps.settings, prefix: API_PREFIX });
  await app.register(streamRoutes, {
    ...deps,
    streams,
    live,
    maxStreamsPerUser: caps.maxStreams,
    ...(streamLimits && { streamLimits }),
    prefix: API_PREFIX,
  });
  await app.register(consoleRoutes); // last: the operator console at `/` (no auth; the page asks for a token)
  await app.ready();
  return app;
}
