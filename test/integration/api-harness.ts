/**
 * An in-process API for integration tests: a real SQLite store in a temp dir, the real engine pointed at an
 * unreachable WhatsApp URL (sessions stay `starting`/`reconnecting`), and the Fastify app listening on
 * 127.0.0.1:0. Logs are captured in memory so tests can check what was (not) logged.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { Billing } from '../../service/billing/billing.ts';
import { issueToken } from '../../service/auth/api-tokens.ts';
import type { ConnectionRow } from '../../service/db/connections.ts';
import type { Reader } from '../../service/db/reader.ts';
import type { Store } from '../../service/db/store.ts';
import { openDataPlane } from '../../service/data-plane.ts';
import { createEngine } from '../../service/engine/engine.ts';
import type { Engine } from '../../service/engine/types.ts';
import type { EventLog } from '../../service/events/log.ts';
import { buildApp, type AppOptions } from '../../service/http/app.ts';
import { MachineSettings, type MachineSettingsOptions } from '../../service/config/machine-settings.ts';
import type { ServiceConfig } from '../../service/config/service-config.ts';
import type { StreamLimits } from '../../service/http/stream/event-stream.ts';
import type { ApiInstance } from '../../service/http/type-provider.ts';
import type { WebhookOutbox } from '../../service/webhooks/outbox.ts';

/** Nothing listens on the discard port: sessions fail to connect and keep retrying, never reaching WhatsApp. */
export const UNREACHABLE_WA_URL = 'ws://127.0.0.1:9/ws/chat';

/**
 * The ServiceConfig of a whole test service (startService) on `dataDir`: 127.0.0.1 on a free port, live mode whose
 * sessions never reach WhatsApp (UNREACHABLE_WA_URL), log level warn, worker id `local`, no typing delay; `over`
 * replaces any of it.
 */
export function offlineServiceConfig(dataDir: string, over: Partial<ServiceConfig> = {}): ServiceConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    sandbox: false,
    sandboxPort: 0,
    waUrl: UNREACHABLE_WA_URL,
    logLevel: 'warn',
    workerId: 'local',
    typingDelayMs: { min: 0, max: 0 },
    ...over,
  };
}

export interface TestUser {
  id: string;
  name: string;
  token: string;
  tokenId: string;
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestApi {
  dataDir: string;
  store: Store;
  /** The event log (append events here as the engine would). */
  events: EventLog;
  /** The webhook outbox (a test's dispatcher drains it). */
  outbox: WebhookOutbox;
  engine: Engine;
  /** The billing service, when `opts.billing` built one. */
  billing?: Billing;
  /** The machine's settings behind `/settings` (settings.json in `dataDir`; no OS keychain unless given). */
  settings: MachineSettings;
  app: ApiInstance;
  /** `http://127.0.0.1:PORT/api` */
  baseUrl: string;
  /** Everything logged so far (JSON lines). */
  logs(): string;
  /** Creates a user with one API token. */
  user(name: string): TestUser;
  /** A stored connection of `userId` in `status`, with no session behind it. */
  connection(userId: string, status?: ConnectionRow['status']): ConnectionRow;
  /** One JSON request; `token` sets the Bearer header, a `body` is sent as JSON. */
  request<T = unknown>(
    method: string,
    route: string,
    opts?: { token?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string },
  ): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

/** App options tests may set (security settings: JWT, rate limits, allowed hosts/origins, caps and paces). */
export type TestAppOptions = Partial<
  Pick<AppOptions, 'jwt' | 'rateLimit' | 'allowedHosts' | 'allowedOrigins' | 'revocationSweepMs' | 'userCaps' | 'waQueryPace'>
>;

export interface TestApiOptions {
  streamLimits?: Partial<StreamLimits>;
  app?: TestAppOptions;
  /** Use this data dir (kept on close) instead of a fresh temp dir (removed on close). */
  dataDir?: string;
  /** Builds the billing service; `origin()` is the API's origin once it listens. */
  billing?: (deps: { store: Store; logger: Logger; origin: () => string }) => Billing;
  /** Status of connections made with `connection()` when none is given; default `scan_qr`. */
  connectionStatus?: ConnectionRow['status'];
  /** The reader of searches and exports, built on the harness's store (closed with it); absent: the app's own. */
  reader?: (store: Store) => Reader;
  /** Options of the machine settings (flags/env of "this process", a keychain, a restart hook). */
  settings?: Partial<Omit<MachineSettingsOptions, 'dataDir'>>;
}

export async function startTestApi(opts: TestApiOptions = {}): Promise<TestApi> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sb-api-'));
  let logText = '';
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        logText += chunk.toString();
        done();
      },
    }),
  );
  const { store, asyncStore, events, outbox } = openDataPlane({ dataDir, role: 'main' });
  const engine = createEngine({
    store,
    events,
    logger,
    waUrl: UNREACHABLE_WA_URL,
    workerId: 'test',
    mediaDir: path.join(dataDir, 'media'),
  });
  let origin = '';
  const billing = opts.billing?.({ store, logger, origin: () => origin });
  const reader = opts.reader?.(store);
  const settings = new MachineSettings({ dataDir, flags: {}, env: {}, allowLanWebhooks: false, openKeychain: null, ...opts.settings });
  const app = await buildApp({
    asyncStore,
    store,
    engine,
    events,
    outbox,
    logger,
    workerId: 'test',
    version: '0.0.0-test',
    sandbox: false,
    startedAt: Date.now(),
    ...(opts.streamLimits && { streamLimits: opts.streamLimits }),
    ...(billing && { billing }),
    settings,
    ...(reader && { reader }),
    ...opts.app,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const baseUrl = `${origin}/api`;
  store.mediaUrls.setBase(baseUrl); // as startService does: media URLs name the listening address

  return {
    dataDir,
    store,
    events,
    outbox,
    engine,
    ...(billing && { billing }),
    settings,
    app,
    baseUrl,
    logs: () => logText,
    user(name) {
      const user = store.users.ensure(name);
      const { record, token } = issueToken(store.tokens, user.id, 'test');
      return { id: user.id, name, token, tokenId: record.id };
    },
    connection(userId, status = opts.connectionStatus ?? 'scan_qr') {
      const row = store.connections.insert({ id: randomUUID(), userId, name: null, workerId: 'test' });
      store.connections.setStatus(row.id, status, null);
      return store.connections.get(row.id)!;
    },
    async request<T>(
      method: string,
      route: string,
      o: { token?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {},
    ) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(o.body);
      }
      const res = await fetch(baseUrl + route, { method, headers, body });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as T };
    },
    async close() {
      await app.close();
      await reader?.close();
      await engine.close();
      store.close();
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
