/**
 * The real service in-process in sandbox mode (real Baileys, sandbox protocol server, SQLite, HTTP, WebSocket),
 * for end-to-end tests that need in-process hooks (an injectable clock, a test CA for URL fetches): a user with an
 * API token, a connection paired by decoding the QR PNG and "scanning" it with a sandbox phone, an event
 * collector on the WebSocket, and small JSON clients for the API and the sandbox admin API.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { issueToken } from '../../service/auth/api-tokens.ts';
import type { ServiceConfig } from '../../service/config/service-config.ts';
import { openDataPlane } from '../../service/data-plane.ts';
import { startService, type RunningService, type StartOptions } from '../../service/index.ts';
import { decodeQrDataUrl } from './qr.ts';
import { waitFor } from './wait.ts';

export interface Frame {
  event: string;
  connectionId: string;
  payload: Record<string, unknown>;
  timestamp: string;
  seq: number;
}

/** Parsed JSON bodies in tests are read loosely (the assertions check their shape). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface JsonResponse<T = Json> {
  status: number;
  headers: Headers;
  body: T;
}

export interface SandboxService {
  dataDir: string;
  service: RunningService;
  token: string;
  apiUrl: string;
  sandboxUrl: string;
  frames: Frame[];
  /** One API request with the Bearer token; JSON in and out. */
  api<T = Json>(method: string, route: string, body?: unknown, headers?: Record<string, string>): Promise<JsonResponse<T>>;
  /** A raw API GET (binary bodies, Range); `route` may also be an absolute URL such as a Message's `media.url`. */
  raw(route: string, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; bytes: Buffer }>;
  /** One sandbox admin request. */
  sandbox<T = Json>(method: string, route: string, body?: unknown): Promise<JsonResponse<T>>;
  /** Creates a connection and pairs it with `phone` by scanning its QR; resolves once it is `online`. */
  pair(phone: string): Promise<string>;
  /** The first frame matching `pred` (waiting for it). */
  frame(what: string, pred: (f: Frame) => boolean, timeoutMs?: number): Promise<Frame>;
  close(): Promise<void>;
}

export const enc = (phone: string) => encodeURIComponent(phone);

export interface SandboxServiceOptions extends StartOptions {
  typingDelayMs?: { min: number; max: number };
  /** The operator switch `allowLanWebhooks` (loopback/LAN targets for webhooks and send-* `url`). */
  allowLan?: boolean;
  /** An existing data dir (a restart); a fresh temporary one by default. */
  dataDir?: string;
  /** Config fields to override (e.g. onlineFallbackMs, downloadStatusMedia). */
  config?: Partial<ServiceConfig>;
}

export async function startSandboxService(opts: SandboxServiceOptions = {}): Promise<SandboxService> {
  const { typingDelayMs, allowLan, dataDir: existingDir, config: configOverrides, ...startOptions } = opts;
  const dataDir = existingDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sb-msg-'));
  const setup = openDataPlane({ dataDir, role: 'tool' });
  const user = setup.store.users.ensure('e2e');
  const { token } = issueToken(setup.store.tokens, user.id, 'e2e');
  setup.close();

  const config: ServiceConfig = {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    sandbox: true,
    sandboxPort: 0,
    logLevel: (process.env.SWITCHBOARD_LOG_LEVEL as ServiceConfig['logLevel']) ?? 'warn',
    workerId: 'local',
    typingDelayMs: typingDelayMs ?? { min: 0, max: 0 },
    ...(allowLan && { allowLanWebhooks: true }),
    // The tests poll group and profile routes as fast as they like; the pace of WhatsApp queries has its own test
    // (test/integration/main-thread.test.ts).
    waQueryPace: { max: 0, windowMs: 60_000 },
    // SWITCHBOARD_WORKERS=N runs these tests with the sessions on N worker threads, as `serve` does with it.
    ...(process.env.SWITCHBOARD_WORKERS && { workers: Number(process.env.SWITCHBOARD_WORKERS) }),
    ...configOverrides,
  };
  const service = await startService(config, startOptions);
  const apiUrl = service.apiUrl;
  const sandboxUrl = service.sandboxUrl!;

  const frames: Frame[] = [];
  const ws = new WebSocket(`${apiUrl.replace(/^http/, 'ws')}/ws?token=${token}`);
  ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Frame));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));

  const api = async (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body: parsed as Json };
  };
  const sandbox = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${sandboxUrl}${route}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as Json };
  };

  return {
    dataDir,
    service,
    token,
    apiUrl,
    sandboxUrl,
    frames,
    api,
    sandbox,
    async raw(route, headers = {}) {
      const url = /^https?:/.test(route) ? route : route.startsWith('/api/') ? apiUrl.replace(/\/api$/, '') + route : `${apiUrl}${route}`;
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } });
      return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
    },
    async pair(phone) {
      const created = await api('POST', '/connections', { name: 'e2e' });
      if (created.status !== 201) throw new Error(`create: ${created.status}`);
      const id = created.body.id as string;
      const qr = await waitFor('a QR code', async () => {
        const res = await api('GET', `/connections/${id}/qr?format=text`);
        return res.status === 200 ? (res.body.value as string) : undefined;
      });
      const scan = await sandbox('POST', `/accounts/${enc(phone)}/scan`, { qr });
      if (scan.status !== 200) throw new Error(`scan: ${scan.status} ${JSON.stringify(scan.body)}`);
      await waitFor('status online', async () => ((await api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), {
        timeoutMs: 30_000,
      });
      return id;
    },
    frame: (what, pred, timeoutMs = 20_000) => waitFor(what, () => frames.find(pred), { timeoutMs }),
    async close() {
      ws.close();
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export { decodeQrDataUrl };
