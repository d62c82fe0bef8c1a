/**
 * Request logging: one line per response with method, path, status and duration. Replaces Fastify's own
 * request logs so nothing secret is written: query tokens are redacted and headers and bodies are never logged.
 */
import type { FastifyInstance } from 'fastify';

/** `url` with the value of every `token` query parameter replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}

export function registerRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: redactUrl(request.url),
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        ...(request.user && { userId: request.user.id }),
      },
      'request completed',
    );
  });
}
