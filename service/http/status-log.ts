/**
 * Test instrumentation: which statuses the API answered on which route, so that a test run fails when one of them
 * is not declared for that route in the OpenAPI document (test/helpers/status-coverage.ts reads what was recorded).
 *
 * Off unless the environment variable {@link STATUS_LOG_ENV} names a directory (the test run's global setup sets it
 * for every process it starts, in-process services and spawned `switchboard serve` alike): without it buildApp adds
 * no hook, so requests pay nothing.
 *
 * Each distinct `(method, route, status)` a process sees is appended once, synchronously (a process killed later
 * loses nothing), to `<dir>/<pid>.jsonl` as `{ method, route, status, declared }`: `route` is the route's URL pattern
 * (`/api/connections/:id`), HEAD is recorded as its GET twin, and `declared` is looked up in the very document this app
 * serves (`app.swagger()`, built once, at the first response). Requests that matched no route (404 of an unknown
 * path) and routes hidden from the document (the docs' assets, the console) are not recorded.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

/** The environment variable naming the directory to record into. */
export const STATUS_LOG_ENV = 'SWITCHBOARD_TEST_STATUS_LOG';

/** One recorded answer. */
export interface StatusRecord {
  method: string;
  /** The route's URL pattern as registered, e.g. `/api/connections/:id`. */
  route: string;
  status: number;
  /** Whether the served OpenAPI document declares `status` for this route (false also when the route is missing). */
  declared: boolean;
}

interface OpenApiLike {
  servers?: Array<{ url: string }>;
  paths?: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
}

const DOCUMENTED_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Whether `doc` declares `status` for the route `method url` (a route URL as registered, with the `servers` base
 * still in it): its exact code, its range (`4XX`) or `default`. False when the document lacks the route.
 */
export function declaresStatus(doc: OpenApiLike, method: string, url: string, status: number): boolean {
  const base = doc.servers?.[0]?.url ?? '';
  const relative = base && base !== '/' && url.startsWith(base) ? url.slice(base.length) : url;
  const docPath = (relative || '/').replace(/:(\w+)/g, '{$1}');
  const responses = doc.paths?.[docPath]?.[(method === 'HEAD' ? 'GET' : method).toLowerCase()]?.responses;
  if (!responses) return false;
  return String(status) in responses || `${Math.floor(status / 100)}XX` in responses || 'default' in responses;
}

/**
 * Adds the recording onResponse hook (before the routes are registered: hooks apply to routes registered after
 * them). `apiPrefix`: only routes under it are recorded (the console's are not part of the API).
 */
export function registerStatusLog(app: FastifyInstance, dir: string, apiPrefix: string): void {
  const file = path.join(dir, `${process.pid}.jsonl`);
  const seen = new Set<string>();
  let doc: OpenApiLike | undefined;
  app.addHook('onResponse', (request, reply, done) => {
    try {
      const route = request.routeOptions.url;
      const method = request.method === 'HEAD' ? 'GET' : request.method;
      const schema = request.routeOptions.schema as { hide?: boolean } | undefined;
      if (route && route.startsWith(apiPrefix) && DOCUMENTED_METHODS.has(method) && !schema?.hide) {
        const status = reply.statusCode;
        const key = `${method} ${route} ${status}`;
        if (!seen.has(key)) {
          seen.add(key);
          doc ??= (app as unknown as { swagger(): OpenApiLike }).swagger();
          const record: StatusRecord = { method, route, status, declared: declaresStatus(doc, method, route, status) };
          fs.appendFileSync(file, JSON.stringify(record) + '\n');
        }
      }
    } catch (err) {
      request.log.warn({ err }, 'status log: could not record the response');
    }
    done();
  });
}
