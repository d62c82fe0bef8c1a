/**
 * Idempotent requests (docs/api.md "Idempotent requests", after Stripe's `Idempotency-Key`): every send and
 * operation route (route config `idempotency`) takes an optional `Idempotency-Key` header, 1–255 printable ASCII
 * characters, scoped to the caller and the connection. The same key with the same request within 24 h gets the first
 * answer again (`Idempotent-Replayed: true`) and acts no second time; with another request (route, parameters or
 * body) it is a 422; while the first is still running, a 409.
 *
 * The key's row (db/idempotency.ts) is reserved — durably — before the handler runs, and the final answer stored
 * when it is known. What is final:
 * - a 2xx, and a 4xx other than 409 and 429: stored and replayed;
 * - 409, 429, 503, 507 (refused before anything was done: not online, busy, booting, no storage): the key is
 *   released, so a retry with it runs anew;
 * - any other 5xx of a `message` route: the engine names the request's message on the row in the transaction that
 *   records it, before any frame of it can leave (engine.ts `relay`). Not named: nothing left, the key is released.
 *   Named and the outcome unknown (its session thread died: OutcomeUnknownError, or a 500): the row stays pending,
 *   and a retry answers the stored message as it is now instead of sending again. Named and known (refused by the
 *   server): stored;
 * - any other 5xx of an `operation` route: stored (an operation whose effect is unknown is not repeated).
 * A row left pending by an attempt that never answered (the service stopped) is resolved the same way: a `message`
 * route answers the named message or runs again when none was named; an `operation` route answers 502 and stores it.
 */
import { createHash, type Hash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onErrorHookHandler,
  onSendHookHandler,
  preHandlerAsyncHookHandler,
} from 'fastify';
import { IDEMPOTENCY_TTL_MS, type IdempotencyRef } from '../../db/idempotency.ts';
import type { Store } from '../../db/store.ts';
import type { SendOptions } from '../../engine/types.ts';
import { conflict, OutcomeUnknownError, ServiceError } from '../../errors.ts';

/**
 * How a route's duplicate is resolved after an unknown outcome: `message` routes send one message through the
 * engine's relay and pass `request.idempotency` to it; `operation` routes do anything else on WhatsApp.
 */
export type IdempotencyMode = 'message' | 'operation';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes an `Idempotency-Key` (plugins/idempotency.ts). */
    idempotency?: IdempotencyMode;
  }
  interface FastifyRequest {
    /** The request's Idempotency-Key while it is reserved for this request; `message` routes pass it to the engine. */
    idempotency: IdempotencyRef | undefined;
  }
}

/** Route config of a route that sends one message through the engine's relay (pass `keyOf(request)` to the engine). */
export const MESSAGE = { idempotency: 'message' } as const;
/** Route config of a route that does anything else on WhatsApp. */
export const OPERATION = { idempotency: 'operation' } as const;
/** The engine's send options of a request: its reserved Idempotency-Key, if any. */
export const keyOf = (request: FastifyRequest): SendOptions => ({ idempotency: request.idempotency });

/** The request header (lowercase, as Node gives it) and the answer header of a replayed answer. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
const MAX_KEY_LENGTH = 255;

const errorSchema = (description: string) =>
  Type.Object({ message: Type.String(), statusCode: Type.Integer(), error: Type.String() }, { description });

const HEADERS = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_KEY_LENGTH,
      pattern: '^[!-~]+$', // printable ASCII, no spaces
      description:
        'Makes the request idempotent for 24 h (e.g. a UUID; 1–255 printable ASCII characters, no spaces): the same key with ' +
        'the same request answers the first answer again (header `Idempotent-Replayed: true`) and never acts twice; with ' +
        'another request it is a 422. Scoped to you and the connection. See docs/api.md "Idempotent requests".',
    }),
  ),
});
const RESPONSES = {
  409: errorSchema(
    'Conflict: the connection is not online, or (with an `Idempotency-Key`) `A request with this Idempotency-Key is still in progress`',
  ),
  422: errorSchema(
    'The `Idempotency-Key` was used for another request (another route, parameters or body) in the last 24 h',
  ),
} as const;

/** Statuses that mean the request did nothing and may be made again with its key. */
const NOTHING_DONE = new Set([409, 429, 503, 507]);

interface Reservation {
  ref: IdempotencyRef;
  /** The key as one string (the in-flight set's member). */
  id: string;
  mode: IdempotencyMode;
  error?: unknown;
}

/** Feeds `value` to `hash` as canonical JSON (object keys sorted), piece by piece (a body may hold megabytes of base64). */
function hashCanonical(hash: Hash, value: unknown): void {
  if (Array.isArray(value)) {
    hash.update('[');
    value.forEach((v, i) => {
      if (i > 0) hash.update(',');
      hashCanonical(hash, v);
    });
    hash.update(']');
  } else if (value !== null && typeof value === 'object') {
    hash.update('{');
    let first = true;
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v === undefined) continue;
      if (!first) hash.update(',');
      first = false;
      hash.update(JSON.stringify(k) + ':');
      hashCanonical(hash, v);
    }
    hash.update('}');
  } else {
    hash.update(JSON.stringify(value) ?? 'null');
  }
}

/** SHA-256 hex of what makes two requests the same: the route, its path parameters, query and body. */
export function requestFingerprint(route: string, request: Pick<FastifyRequest, 'params' | 'query' | 'body'>): string {
  const hash = createHash('sha256');
  hashCanonical(hash, {
    route,
    params: request.params ?? null,
    query: request.query ?? null,
    body: request.body ?? null,
  });
  return hash.digest('hex');
}

/**
 * Adds `request.idempotency` and, to every route registered afterwards whose config sets `idempotency`, the header's
 * schema, the 409/422 answers and the hooks above. Register it after the connection scope (its hook runs first and
 * resolves `request.connection`) and before the OpenAPI generator (so the document shows the header).
 */
export function registerIdempotency(app: FastifyInstance, store: Pick<Store, 'txAsync' | 'idempotency' | 'messages'>): void {
  app.decorateRequest('idempotency', undefined);
  /** Keys whose request runs in this process now (one process serves a data dir: data-dir-lock.ts). */
  const inFlight = new Set<string>();
  const reservations = new WeakMap<FastifyRequest, Reservation>();

  app.addHook('onRoute', (route) => {
    const mode = route.config?.idempotency;
    if (!mode) return;
    const schema = { ...(route.schema as Record<string, unknown> | undefined) };
    if (schema.headers) throw new Error(`${route.url}: a route with an Idempotency-Key declares no other headers`);
    schema.headers = HEADERS;
    const response = { ...(schema.response as Record<string, unknown> | undefined) };
    for (const [code, body] of Object.entries(RESPONSES)) response[code] ??= body;
    schema.response = response;
    route.schema = schema;
    const successCode =
      Object.keys(response)
        .map(Number)
        .find((c) => c >= 200 && c < 300) ?? 200;

    const reserve: preHandlerAsyncHookHandler = async function (request, reply) {
      const key = request.headers[IDEMPOTENCY_HEADER];
      if (key === undefined) return;
      const ref: IdempotencyRef = { userId: request.user.id, connectionId: request.connection.id, key: String(key) };
      const id = JSON.stringify([ref.userId, ref.connectionId, ref.key]);
      const routeName = `${request.method} ${request.routeOptions.url ?? route.url}`;
      const fingerprint = requestFingerprint(routeName, request);
      const now = Date.now();
      // The key is marked in flight inside the deciding transaction: the main thread waits for the write lock
      // asynchronously (store.txAsync), so another request with the same key may decide right after this one.
      let marked = false;
      const decide = () => {
        const row = store.idempotency.get(ref);
        if (!row || Date.parse(row.createdAt) <= now - IDEMPOTENCY_TTL_MS) {
          store.idempotency.reserve(ref, { fingerprint, route: routeName, createdAt: new Date(now).toISOString() });
          return { kind: 'run' } as const;
        }
        if (row.fingerprint !== fingerprint) return { kind: 'mismatch', route: row.route } as const;
        if (row.answer) return { kind: 'replay', answer: row.answer } as const;
        if (inFlight.has(id) && !marked) return { kind: 'busy' } as const;
        // Pending, and no request of this process runs it: the attempt that reserved it ended without a final answer.
        if (mode === 'operation') return { kind: 'unknown' } as const;
        return row.messageId ? ({ kind: 'recover', messageId: row.messageId } as const) : ({ kind: 'run' } as const);
      };
      let decision: ReturnType<typeof decide>;
      try {
        decision = await store.txAsync(() => {
          const d = decide();
          if (d.kind === 'run' || d.kind === 'recover' || d.kind === 'unknown') {
            inFlight.add(id);
            marked = true;
          }
          return d;
        });
      } catch (err) {
        if (marked) inFlight.delete(id);
        throw err;
      }
      switch (decision.kind) {
        case 'mismatch':
          throw new ServiceError(
            422,
            `This Idempotency-Key was already used for another request (${decision.route === routeName ? `${routeName} with other parameters or another body` : decision.route}) in the last 24 h; use a new key for a new request`,
          );
        case 'busy':
          throw conflict('A request with this Idempotency-Key is still in progress; retry once it has been answered');
        case 'replay': {
          reply.code(decision.answer.statusCode).header(REPLAYED_HEADER, 'true');
          if (decision.answer.contentType) reply.type(decision.answer.contentType);
          return reply.send(decision.answer.body);
        }
        default:
          break;
      }
      const reservation: Reservation = { ref, id, mode };
      reservations.set(request, reservation);
      if (decision.kind === 'run') {
        request.idempotency = ref;
        return;
      }
      if (decision.kind === 'recover') {
        const message = store.messages.get(ref.connectionId, decision.messageId);
        if (message) {
          reply.code(successCode).header(REPLAYED_HEADER, 'true');
          return reply.send(message as never);
        }
      }
      throw new ServiceError(
        502,
        'The first request with this Idempotency-Key ended without a known outcome (the service or the connection’s session ' +
          'thread stopped during it); it is not repeated: check its effect, and use a new key to try again',
      );
    };
    const own =
      route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [...own, reserve];

    const noteError: onErrorHookHandler = async function (request, _reply, error) {
      const r = reservations.get(request);
      if (r) r.error = error;
    };
    const settle: onSendHookHandler = async function (request, reply, payload) {
      const r = reservations.get(request);
      if (!r) return payload;
      reservations.delete(request);
      try {
        await settleReservation(r, reply, payload);
      } catch (err) {
        request.log.error({ err }, 'could not store the answer of an idempotent request');
      } finally {
        inFlight.delete(r.id);
      }
      return payload;
    };
    route.onError = [...hooksOf(route.onError), noteError];
    route.onSend = [...hooksOf(route.onSend), settle];
  });

  /** Stores, releases or keeps the key of a request that was answered (see the module doc). */
  async function settleReservation(r: Reservation, reply: FastifyReply, payload: unknown): Promise<void> {
    const status = reply.statusCode;
    let outcome: 'store' | 'release' | 'keep';
    if (NOTHING_DONE.has(status)) outcome = 'release';
    else if (status < 500 || r.mode === 'operation') outcome = 'store';
    else {
      const named = store.idempotency.get(r.ref)?.messageId;
      const unknown = r.error instanceof OutcomeUnknownError || status === 500;
      outcome = !named ? 'release' : unknown ? 'keep' : 'store';
    }
    if (outcome === 'keep') return;
    const contentType = reply.getHeader('content-type');
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
    await store.txAsync(() => {
      if (outcome === 'release') store.idempotency.release(r.ref);
      else
        store.idempotency.complete(r.ref, {
          statusCode: status,
          contentType: typeof contentType === 'string' ? contentType : null,
          body,
        });
    });
  }
}

function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
