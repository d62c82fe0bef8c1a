/**
 * `GET /api/ws` (interface-spec §4.7): the user's event stream over WebSocket. Authentication happens before
 * the upgrade (the auth hook accepts `?token=<API token>` or the Authorization header), so a bad token gets a
 * plain 401 JSON response, as does an `after` beyond the end of the user's log (400) and a user who already has
 * `maxStreamsPerUser` streams open (429; one that gets past that check in a race of simultaneous upgrades is
 * closed with 4429 instead). A plain GET without an upgrade answers 426. On shutdown every stream is closed with 1001.
 */
import websocket from '@fastify/websocket';
import { Type } from '@sinclair/typebox';
import type { LiveCredentials } from '../../auth/live-credentials.ts';
import { badRequest, ServiceError } from '../../errors.ts';
import { parseEventTypes } from '../routes/events.ts';
import type { ApiDeps } from '../deps.ts';
import { errorResponses } from '../schemas.ts';
import type { ApiInstance, ApiPlugin } from '../type-provider.ts';
import { PerUserSlots, TOO_MANY_STREAMS_CLOSE, tooManyStreams } from '../plugins/user-caps.ts';
import { CLOSE_CODES, DEFAULT_STREAM_LIMITS, EventStream, type StreamLimits } from './event-stream.ts';

/** Largest inbound frame we accept; clients have nothing to send yet. */
const MAX_INBOUND_BYTES = 4096;

/**
 * Registers @fastify/websocket on the root instance. Call it before any other onRequest hook (auth): its own
 * hooks mark upgrade requests and destroy their sockets when a hook answers with plain HTTP (a 401), which
 * otherwise stay open and block shutdown. On close, the streams in `streams` get 1001.
 */
export async function registerWebSocketSupport(app: ApiInstance, streams: Set<EventStream>): Promise<void> {
  await app.register(websocket, {
    options: { maxPayload: MAX_INBOUND_BYTES },
    preClose: async () => {
      await Promise.all([...streams].map((s) => s.close(CLOSE_CODES.shuttingDown, 'Server shutting down')));
      app.websocketServer.close();
    },
  });
}

export interface StreamRouteOptions extends ApiDeps {
  /** The open streams, shared with registerWebSocketSupport for the shutdown close. */
  streams: Set<EventStream>;
  streamLimits?: Partial<StreamLimits>;
  /** Where streams are registered so revoking their token (or disabling their user) closes them with 4401. */
  live?: LiveCredentials;
  /** Open streams per user; past it an upgrade answers 429 (0: no cap). */
  maxStreamsPerUser?: number;
}

const StreamQuery = Type.Object({
  token: Type.Optional(Type.String()),
  after: Type.Optional(Type.Integer({ minimum: 0, description: 'Replay events with a greater seq first' })),
  events: Type.Optional(Type.String({ maxLength: 1024, description: 'Comma-separated event types to send (default: all)' })),
});

export const streamRoutes: ApiPlugin<StreamRouteOptions> = async (
  api,
  { store, events, streams, streamLimits, live, maxStreamsPerUser = 0 },
) => {
  const limits: StreamLimits = { ...DEFAULT_STREAM_LIMITS, ...streamLimits };
  const open = new PerUserSlots();

  api.route({
    method: 'GET',
    url: '/ws',
    config: { auth: 'bearer-or-query' },
    schema: {
      querystring: StreamQuery,
      response: {
        101: Type.Null({ description: 'Switching Protocols: the event stream (JSON frames, docs/events.md)' }),
        ...errorResponses(426),
      },
    },
    preHandler: async (request) => {
      const { after } = request.query;
      if (maxStreamsPerUser > 0 && open.count(request.user.id) >= maxStreamsPerUser)
        throw tooManyStreams(maxStreamsPerUser);
      parseEventTypes(request.query.events, 'querystring/events'); // 400 before the upgrade
      const last = store.events.lastSeq(request.user.id);
      if (after !== undefined && after > last) {
        throw badRequest(`querystring/after is beyond the end of the event log (last seq ${last})`);
      }
    },
    handler: async () => {
      throw new ServiceError(426, 'This endpoint needs a WebSocket upgrade');
    },
    wsHandler: (socket, request) => {
      const userId = request.user.id;
      const log = request.log;
      // Checked again here: simultaneous upgrades all pass the preHandler before any of them is counted.
      const release = open.tryAcquire(userId, maxStreamsPerUser);
      if (!release) {
        socket.close(TOO_MANY_STREAMS_CLOSE, tooManyStreams(maxStreamsPerUser).message.slice(0, 123));
        return;
      }
      const types = parseEventTypes(request.query.events, 'querystring/events');
      const stream = new EventStream(socket, {
        store,
        events,
        userId,
        after: request.query.after,
        limits,
        log,
        ...(types && { types: new Set(types) }),
      });
      streams.add(stream);
      const { credential } = request.user;
      const unregister =
        live && credential.kind === 'api-token'
          ? live.add({ userId, tokenId: credential.tokenId, close: (code, reason) => stream.close(code, reason) })
          : undefined;
      log.info({ userId, after: request.query.after ?? null }, 'event stream opened');
      void stream.closed.then(() => {
        release();
        unregister?.();
        streams.delete(stream);
        log.info({ userId, lastSent: stream.lastSent }, 'event stream closed');
      });
    },
  });
};
