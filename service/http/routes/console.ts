/**
 * The operator console (renderer/, built by `npm run build:console` into dist/console) served at `/` for
 * browsers and the desktop window: same origin as the API, so no CORS and `'self'` in the CSP covers it.
 * No authentication here (the page asks for a token; the API checks it). Files are registered one route each
 * (no wildcard), so unknown `/api/...` paths keep their JSON 404. When the console was not built, `/` says how.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Where the built console is: `SWITCHBOARD_CONSOLE_DIR`, or dist/console next to the source or the build. */
export function findConsoleDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = [
    env.SWITCHBOARD_CONSOLE_DIR,
    path.resolve(here, '../../../dist/console'), // service/http/routes (tsx)
    path.resolve(here, '../../../console'), // dist/service/http/routes (built)
  ].filter((p): p is string => !!p);
  return candidates.find((dir) => fs.existsSync(path.join(dir, 'index.html')));
}

const HOST_RE = /^[A-Za-z0-9.-]+(:\d+)?$|^\[[0-9A-Fa-f:.]+\](:\d+)?$/;

/**
 * The console's Content-Security-Policy: only its own origin for scripts, API calls and the event stream
 * (`ws://` of the same host, listed explicitly), inline styles for Mantine, blob: for media fetched with the
 * Authorization header, nothing framed, no plugins.
 */
export function consoleCsp(host: string | undefined): string {
  const ws = host && HOST_RE.test(host) ? ` ws://${host}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "media-src 'self' blob:",
    "font-src 'self' data:",
    `connect-src 'self'${ws}`,
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
    "worker-src 'none'",
  ].join('; ');
}

/** Runs after the hardening plugin's onSend (parent hooks first), so this policy is the one sent. */
function setConsoleHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('content-security-policy', consoleCsp(request.headers.host));
  if (reply.statusCode < 300) reply.header('cache-control', request.url.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
}

export async function consoleRoutes(app: FastifyInstance, opts: { dir?: string } = {}): Promise<void> {
  // Public pages: the route-level auth of plugins/auth.ts is off for everything registered here.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), auth: 'none' } as typeof route.config;
  });
  app.addHook('onSend', async (request, reply, payload) => {
    setConsoleHeaders(request, reply);
    return payload;
  });
  const dir = opts.dir ?? findConsoleDir();
  if (!dir) {
    app.get('/', async (_request, reply) => {
      return reply
        .code(503)
        .type('text/html; charset=utf-8')
        .send('<!doctype html><title>Switchboard</title><p>The console is not built. Run <code>npm run build:console</code> and restart, or use the API at <a href="/api/">/api/</a>.</p>');
    });
    return;
  }
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    wildcard: false,
    index: ['index.html'],
  });
}
