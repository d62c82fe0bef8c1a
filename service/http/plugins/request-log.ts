/**
 * Request logging: one line per response with method, path, status and duration. Replaces Fastify's own
 * request logs so nothing secret is written: credentials in the URL are redacted and headers and bodies are never
 * logged.
 */
import type { FastifyInstance } from 'fastify';
import { redactCredentials } from '../../secrets/credentials.ts';

/** Decodes `%XX` escapes byte by byte and `+` as a space; never throws (a bad escape stays as it is). */
function lenientDecode(text: string): string {
  return text.replace(/\+/g, ' ').replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** True when a query parameter (`key=value` as sent) names a token in any spelling, or hides one in its key. */
function isTokenParameter(segment: string): boolean {
  let text = segment;
  // Decoded up to three times: `%2574oken` is not what the server reads as `token`, but no spelling is worth a leak.
  for (let i = 0; i < 3; i++) {
    const next = lenientDecode(text);
    if (next === text) break;
    text = next;
  }
  return text.split('=', 1)[0]!.trim().toLowerCase() === 'token';
}

/**
 * `url` with every credential redacted: anything shaped like an API token or a JWT wherever it is (a path segment,
 * any parameter's name or value, percent-encoded or not: secrets/credentials.ts), and every `token` query parameter,
 * whatever its value, however it is spelled: any case (`TOKEN=`), percent-encoded names (`%74oken=`), an encoded
 * `=` that puts the secret into the name (`token%3Dwh_…`), repeated parameters, and `;` as well as `&` between
 * parameters. `token=…` becomes `token=[redacted]` (the name as sent); a parameter with no literal `=` becomes
 * `[redacted]`. Other parameters (`mytoken=`) keep values that are not credentials.
 */
export function redactUrl(url: string): string {
  return redactCredentials(redactTokenParameters(url));
}

function redactTokenParameters(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split(/([&;])/)
    .map((part, i) => {
      if (i % 2 === 1 || !isTokenParameter(part)) return part; // separators and other parameters as they were
      const eq = part.indexOf('=');
      return eq < 0 ? '[redacted]' : `${part.slice(0, eq)}=[redacted]`;
    })
    .join('');
  return `${url.slice(0, q + 1)}${query}`;
}

/** Whether `log` writes `info` lines (pino's isLevelEnabled; a logger without it is assumed to). */
function infoEnabled(log: object): boolean {
  const check = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return check ? check.call(log, 'info') : true;
}

export function registerRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    if (!infoEnabled(request.log)) return done(); // below the level: not even the line's fields are built
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
    done();
  });
}
