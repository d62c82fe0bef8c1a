/**
 * Errors the service raises on purpose. The HTTP layer renders them in the spec's error shape
 * `{ message, statusCode, error }` (interface-spec §7); anything else is a 500 with a generic message.
 */
export class ServiceError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

/**
 * A 502 for a request whose outcome is unknown: it was handed to a session that stopped before answering (its
 * thread died), so what it did on WhatsApp cannot be told from here. An idempotent retry (docs/api.md "Idempotent
 * requests") resolves it from what was recorded instead of acting again.
 */
export class OutcomeUnknownError extends ServiceError {
  constructor(message: string) {
    super(502, message);
    this.name = 'OutcomeUnknownError';
  }
}

export const badRequest = (message: string) => new ServiceError(400, message);
export const forbidden = (message = 'Forbidden') => new ServiceError(403, message);
export const notFound = (message: string) => new ServiceError(404, message);
export const conflict = (message: string) => new ServiceError(409, message);
/** 503 while a session's worker boots (interface-spec §4.1, §7). */
export const booting = () => new ServiceError(503, 'Worker is booting, please retry in a few seconds');
