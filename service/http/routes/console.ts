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

/** Caching of the console's files (its CSP is the page policy of plugins/hardening.ts). */
function setConsoleHeaders(request: FastifyRequest, reply: FastifyReply): void {
  if (reply.statusCode < 300) reply.header('cache-control', request.url.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
}

export async function consoleRoutes(app: FastifyInstance, opts: { dir?: string } = {}): Promise<void> {
  // Public pages: the route-level auth of plugins/auth.ts and the rate limit (plugins/rate-limit.ts) are off for
  // everything registered here.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), auth: 'none', staticAsset: true } as typeof route.config;
  });
  app.addHook('onSend', async (request, reply, payload) => {
    setConsoleHeaders(request, reply);
    return payload;
  });
  const dir = opts.dir ?? findConsoleDir();
  if (!dir) {
    // Hidden like the built console's static routes (fastify-static hides its own): the OpenAPI document, and
    // the console types generated from it, must not depend on whether the console was built.
    app.get('/', { schema: { hide: true } }, async (_request, reply) => {
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
    // The build writes .br and .gz beside each text asset (renderer/vite.config.ts); sent when accepted.
    preCompressed: true,
  });
}
