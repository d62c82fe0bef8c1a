/**
 * One error shape for every failure (interface-spec §7, docs/architecture.md § Errors):
 * `{ message, statusCode, error }`. ServiceErrors keep their status and message; validation and other client errors
 * Fastify raises (bad JSON, body too large) keep theirs, an unsupported media type says to send JSON; a write that
 * could not get the database's write lock in time is a 503 with `retry-after` (nothing was written); anything else
 * is a 500 that reveals nothing internal.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance } from 'fastify';
import { isBusyError, isStorageError } from '../../db/store.ts';
import { ServiceError } from '../../errors.ts';

export interface ErrorBody {
  message: string;
  statusCode: number;
  error: string;
}

/** The spec's error body for `statusCode`. */
export function errorBody(statusCode: number, message: string): ErrorBody {
  return { message, statusCode, error: STATUS_CODES[statusCode] ?? 'Error' };
}

/** The 415 for a body that is not JSON (Fastify's own message is the status text alone). */
export const UNSUPPORTED_MEDIA_TYPE = 'Unsupported Media Type: send a JSON body with Content-Type: application/json';

/** Seconds a client should wait before polling again after a 503 (worker booting). */
const RETRY_AFTER_S = 2;
/** Seconds a client should wait before retrying a write refused because the database stayed locked. */
const BUSY_RETRY_AFTER_S = 1;

/**
 * The 503 of a write that could not get the database's write lock within the main thread's wait
 * (db/store.ts MAIN_THREAD_WRITE_WAIT_MS): nothing was written.
 */
export const DATABASE_BUSY_MESSAGE =
  'The database is busy (another writer holds its write lock): nothing was changed; retry in a moment';

/** The body for a deliberate error; undefined for an unexpected one (a 500). */
function classify(err: unknown): ErrorBody | undefined {
  if (err instanceof ServiceError) return errorBody(err.statusCode, err.message);
  if (isBusyError(err)) return errorBody(503, DATABASE_BUSY_MESSAGE);
  if (isStorageError(err)) {
    return errorBody(507, 'Storage is unavailable (the data directory is full or not writable): nothing was changed; try again once space is freed');
  }
  if (!(err instanceof Error)) return undefined;
  const status = (err as Partial<FastifyError>).statusCode;
  // Every body the API takes is JSON: say how to send one (curl -d without -H sends a form, for one).
  if ((err as Partial<FastifyError>).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return errorBody(415, UNSUPPORTED_MEDIA_TYPE);
  if (typeof status === 'number' && status >= 400 && status < 500) return errorBody(status, err.message);
  return undefined;
}

/** Installs the error and not-found handlers on the root instance (children inherit them). */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const body = classify(err);
    if (!body) {
      request.log.error({ err }, 'request failed');
      return reply.code(500).send(errorBody(500, 'Internal Server Error'));
    }
    if (body.statusCode === 503) {
      const busy = body.message === DATABASE_BUSY_MESSAGE;
      if (busy) request.log.warn({ err }, 'a write could not get the database lock in time (503)');
      reply.header('retry-after', String(busy ? BUSY_RETRY_AFTER_S : RETRY_AFTER_S));
    }
    return reply.code(body.statusCode).send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0];
    return reply.code(404).send(errorBody(404, `Route ${request.method} ${path} not found`));
  });
}
