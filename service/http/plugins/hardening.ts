/**
 * Hardening of a loopback API against the browser (desktop-anchors §2.2). Runs before routing decisions,
 * authentication and rate limits, on every request including WebSocket upgrades and unknown routes:
 *
 * 1. **Host allowlist (DNS rebinding).** `Host` must name the listening port on `127.0.0.1`, `localhost`,
 *    `[::1]` or the address the socket was accepted on (a port-less Host naming them passes too: browsers
 *    always send a non-default port, so that comes from a local tool), or match `allowedHosts` (`name` = any port,
 *    `name:port`, `*` = no check). Otherwise 403 `Host not allowed`.
 * 2. **Origin check (CSRF, cross-site WebSocket hijacking).** State-changing requests (POST, PUT, PATCH, DELETE)
 *    and every WebSocket upgrade that carry an `Origin` must come from the service's own origin
 *    (`http://127.0.0.1:PORT`, `http://localhost:PORT`, `http://[::1]:PORT`) or an `allowedOrigins` entry;
 *    exact string comparison. Otherwise 403 `Origin not allowed`. Requests without `Origin` (curl, SDKs,
 *    scripts) pass: browsers always send it on these requests.
 * 3. **No CORS by default.** Only origins listed in `allowedOrigins` get CORS headers and preflight answers.
 * 4. **Security headers on every response**: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 *    `X-Frame-Options: DENY`, `Cross-Origin-Opener-Policy`/`-Resource-Policy: same-origin`, and a
 *    Content-Security-Policy: `default-src 'none'` for the JSON API, a self-only policy for the docs and
 *    the console (`/`). A route may set its own CSP (e.g. with a nonce); it is then kept. API responses are
 *    `Cache-Control: no-store`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors.ts';

export interface HardeningOptions {
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  /** Path prefix of the JSON API (`/api`) and of the docs (`/api/docs`). */
  apiPrefix: string;
  docsPrefix: string;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Host names of a socket's local address as they appear in a Host header (`[v6]`, IPv4-mapped unwrapped). */
function localHostName(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (v4) return v4;
  return address.includes(':') ? `[${address.toLowerCase()}]` : address;
}

/** `{ name, port }` of a Host header value; undefined when it is not one. */
export function parseHost(value: string | undefined): { name: string; port: number | undefined } | undefined {
  const m = value === undefined ? null : /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/@]+)(?::(\d{1,5}))?$/.exec(value);
  if (!m) return undefined;
  return { name: m[1]!.toLowerCase().replace(/\.$/, ''), port: m[2] === undefined ? undefined : Number(m[2]) };
}

const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The console's and the docs' policy: same-origin resources, inline styles (Mantine, Swagger UI), no framing. */
function pageCsp(wsOrigin: string | undefined): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    `connect-src 'self'${wsOrigin ? ` ${wsOrigin}` : ''}`,
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
  ].join('; ');
}

export function registerHardening(app: FastifyInstance, opts: HardeningOptions): void {
  const anyHost = opts.allowedHosts?.includes('*') ?? false;
  const extraHosts = (opts.allowedHosts ?? []).map(parseHost).filter((h) => h !== undefined);
  const corsOrigins = new Set(opts.allowedOrigins ?? []);

  /** The listening port, or undefined for requests that did not come over a socket (fastify.inject). */
  const localPort = (request: FastifyRequest): number | undefined => request.socket?.localPort;

  function hostAllowed(request: FastifyRequest, port: number): boolean {
    if (anyHost) return true;
    const host = parseHost(request.headers.host);
    if (!host) return false;
    const hostPort = host.port ?? 80;
    const own = [...LOOPBACK_NAMES, localHostName(request.socket.localAddress)];
    // A browser always names a non-default port, so a port-less loopback Host comes from a local tool.
    if ((hostPort === port || host.port === undefined) && own.includes(host.name)) return true;
    return extraHosts.some((h) => h.name === host.name && (h.port === undefined || h.port === hostPort));
  }

  function ownOrigins(request: FastifyRequest, port: number): string[] {
    const names = [...LOOPBACK_NAMES, localHostName(request.socket.localAddress)];
    return names.filter((n) => n !== undefined).map((n) => `http://${n}:${port}`);
  }

  app.addHook('onRequest', async (request, reply) => {
    const port = localPort(request);
    if (port === undefined) return; // injected in-process: no browser, no DNS involved
    if (!hostAllowed(request, port)) throw new ServiceError(403, 'Host not allowed');

    const origin = request.headers.origin;
    if (origin === undefined) return;
    if (corsOrigins.has(origin)) {
      addCorsHeaders(reply, origin);
      if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
        reply
          .header('access-control-allow-methods', 'GET, POST, PUT, PATCH, DELETE')
          .header('access-control-allow-headers', 'authorization, content-type')
          .header('access-control-max-age', '600');
        return reply.code(204).send();
      }
      return;
    }
    const upgrade = request.headers.upgrade?.toLowerCase() === 'websocket';
    if ((STATE_CHANGING.has(request.method) || upgrade) && !ownOrigins(request, port).includes(origin)) {
      throw new ServiceError(403, 'Origin not allowed');
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    reply.header('cross-origin-opener-policy', 'same-origin');
    reply.header('cross-origin-resource-policy', 'same-origin');
    const path = request.url.split('?', 1)[0]!;
    const isDocs = path === opts.docsPrefix || path.startsWith(opts.docsPrefix + '/');
    const isApi = !isDocs && (path === opts.apiPrefix || path.startsWith(opts.apiPrefix + '/'));
    if (isApi) reply.header('cache-control', 'no-store');
    if (!reply.hasHeader('content-security-policy')) {
      const port = localPort(request);
      const ws = port === undefined ? undefined : `ws://${parseHost(request.headers.host)?.name ?? '127.0.0.1'}:${port}`;
      reply.header('content-security-policy', isApi ? API_CSP : pageCsp(ws));
    }
    return payload;
  });
}

function addCorsHeaders(reply: FastifyReply, origin: string): void {
  reply
    .header('access-control-allow-origin', origin)
    .header('vary', 'Origin')
    .header('access-control-expose-headers', 'retry-after, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset');
}
