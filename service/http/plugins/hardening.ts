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
 * 4. **Security headers on every response**, set by `@fastify/helmet`: `X-Content-Type-Options: nosniff`,
 *    `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY`, `Cross-Origin-Opener-Policy`/`-Resource-Policy:
 *    same-origin` (no HSTS: plain HTTP on loopback), and ONE page Content-Security-Policy for the console (`/`)
 *    and the docs (`PAGE_CSP_DIRECTIVES`); JSON API responses get `default-src 'none'` instead (`API_CSP`), and
 *    `Cache-Control: no-store`; a route of the API that serves a document sets its own policy from this module
 *    (`TRANSCRIPT_CSP`), which onSend keeps. Every policy is written by helmet's one CSP builder. @fastify/helmet builds its middleware anew for every request; the API's routes
 *    (everything under the API prefix but the docs) skip it and get the same headers from `API_HELMET_HEADERS`,
 *    computed once (test/integration/hardening.test.ts compares the two).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { fastifyHelmet } from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors.ts';
import { parseHost } from '../../net/host.ts';

export { parseHost };

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

type CspDirectives = Record<string, readonly string[]>;

/** A fixed policy as helmet's CSP builder writes it (the builder @fastify/helmet applies to the pages). */
function fixedCsp(directives: CspDirectives): string {
  let value: string | undefined;
  const res = { setHeader: (_name: string, v: string) => void (value = v) } as unknown as ServerResponse;
  fastifyHelmet.contentSecurityPolicy({ useDefaults: false, directives })({} as IncomingMessage, res, (err?: unknown) => {
    if (err) throw err;
  });
  if (value === undefined) throw new Error('helmet wrote no Content-Security-Policy');
  return value;
}

/** JSON API responses: nothing may load, frame them or be submitted from them. */
const API_CSP_DIRECTIVES = {
  defaultSrc: ["'none'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'none'"],
} satisfies CspDirectives;
const API_CSP = fixedCsp(API_CSP_DIRECTIVES);

/**
 * A chat's HTML transcript (`GET …/chats/:chatId/export?format=html`). Stricter than the page policy on purpose:
 * it is a document of other people's words, not the console, so it gets none of `'self'` (no script, no API call,
 * no event stream from the service's origin), only what a self-contained file needs: its inline style sheet and
 * `data:` images. Everything else is the API policy.
 */
export const TRANSCRIPT_CSP = fixedCsp({ ...API_CSP_DIRECTIVES, styleSrc: ["'unsafe-inline'"], imgSrc: ['data:'] });

/**
 * What @fastify/helmet sets with the options below on every response but the Content-Security-Policy (which
 * API responses get as API_CSP, in onSend). Set by hand on the API's routes, which skip helmet.
 */
export const API_HELMET_HEADERS: Readonly<Record<string, string>> = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route of the JSON API (not the docs): API_HELMET_HEADERS instead of @fastify/helmet. */
    apiHeaders?: boolean;
  }
}

const HOST_RE = /^[A-Za-z0-9.-]+(:\d+)?$|^\[[0-9A-Fa-f:.]+\](:\d+)?$/;

/** `ws://HOST` of the page's own origin, for the event stream (connect-src `'self'` does not cover ws: everywhere). */
function ownWebSocketOrigin(req: IncomingMessage): string {
  const host = req.headers.host;
  return host && HOST_RE.test(host) ? `ws://${host}` : "'self'";
}

/**
 * The one page policy (console and docs): scripts, API calls and the event stream from the page's own origin
 * only; inline styles (Mantine, Swagger UI); blob: for media fetched with the Authorization header; nothing
 * framed, no plugins, no workers.
 */
export const PAGE_CSP_DIRECTIVES = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'", "'unsafe-inline'"],
  imgSrc: ["'self'", 'data:', 'blob:'],
  mediaSrc: ["'self'", 'blob:'],
  fontSrc: ["'self'", 'data:'],
  connectSrc: ["'self'", (req: IncomingMessage) => ownWebSocketOrigin(req)],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  frameAncestors: ["'none'"],
  formAction: ["'self'"],
  workerSrc: ["'none'"],
};

export async function registerHardening(app: FastifyInstance, opts: HardeningOptions): Promise<void> {
  // First, so that even a request refused by the checks below gets the headers.
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: { useDefaults: false, directives: PAGE_CSP_DIRECTIVES },
    crossOriginEmbedderPolicy: false,
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: false,
  });

  const isDocsPath = (path: string) => path === opts.docsPrefix || path.startsWith(opts.docsPrefix + '/');
  const isApiPath = (path: string) =>
    !isDocsPath(path) && (path === opts.apiPrefix || path.startsWith(opts.apiPrefix + '/'));
  // After helmet's own onRoute hook (it turns a route's `helmet` option into config): the API's routes skip it.
  app.addHook('onRoute', (route) => {
    if (!isApiPath(route.url)) return;
    route.config = { ...route.config, apiHeaders: true, helmet: { skipRoute: true } } as typeof route.config;
  });

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
    if (request.routeOptions.config.apiHeaders) reply.headers(API_HELMET_HEADERS); // before any check can refuse
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

  app.addHook('onSend', (request, reply, payload, done) => {
    const apiRoute = request.routeOptions.config.apiHeaders === true;
    if (apiRoute || isApiPath(request.url.split('?', 1)[0]!)) {
      reply.header('cache-control', 'no-store');
      // An API route skips helmet, so a policy it carries is its own: a document's (the HTML transcript's) from
      // this module. Anything else under the prefix (an unknown route) carries helmet's page policy: replaced.
      if (!apiRoute || !reply.hasHeader('content-security-policy')) reply.header('content-security-policy', API_CSP);
    }
    done(null, payload);
  });
}

function addCorsHeaders(reply: FastifyReply, origin: string): void {
  reply
    .header('access-control-allow-origin', origin)
    .header('vary', 'Origin')
    .header('access-control-expose-headers', 'retry-after, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset');
}
