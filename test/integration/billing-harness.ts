/**
 * The API with a chosen billing configuration, for the billing tests: a real store in a temp dir, the real engine
 * pointed at an unreachable server (sessions never link), the Fastify app on 127.0.0.1:0, and `Billing` built
 * from a BillingConfig exactly as the service builds it. With `fakeStripe`, the stripe provider talks to the
 * loopback fake through the real SDK (apiBase http://127.0.0.1:PORT).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { issueToken } from '../../service/auth/api-tokens.ts';
import { createBilling, type Billing, type BillingConfig } from '../../service/billing/billing.ts';
import type { ConnectionRow } from '../../service/db/connections.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { createEngine } from '../../service/engine/engine.ts';
import type { Engine } from '../../service/engine/types.ts';
import { buildApp } from '../../service/http/app.ts';
import type { ApiInstance } from '../../service/http/type-provider.ts';
import { UNREACHABLE_WA_URL, type ApiResponse, type TestUser } from './api-harness.ts';

export interface BillingTestApi {
  dataDir: string;
  store: Store;
  engine: Engine;
  billing: Billing;
  app: ApiInstance;
  baseUrl: string;
  logs(): string;
  user(name: string): TestUser;
  /** A stored connection in `status`, without a session. */
  connection(userId: string, status?: ConnectionRow['status']): ConnectionRow;
  request<T = unknown>(
    method: string,
    route: string,
    opts?: { token?: string; body?: unknown },
  ): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export async function startBillingApi(config: BillingConfig, opts: { dataDir?: string } = {}): Promise<BillingTestApi> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sb-billing-'));
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
  const store = openStore(dataDir);
  const engine = createEngine({
    store,
    logger,
    waUrl: UNREACHABLE_WA_URL,
    workerId: 'test',
    mediaDir: path.join(dataDir, 'media'),
  });
  let origin = '';
  const billing = createBilling({ store, logger, config, consoleOrigin: () => origin });
  const app = await buildApp({
    store,
    engine,
    logger,
    workerId: 'test',
    version: '0.0.0-test',
    sandbox: false,
    startedAt: Date.now(),
    billing,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const baseUrl = `${origin}/api`;
  return {
    dataDir,
    store,
    engine,
    billing,
    app,
    baseUrl,
    logs: () => logText,
    user(name) {
      const user = store.users.ensure(name);
      const { record, token } = issueToken(store.tokens, user.id, 'test');
      return { id: user.id, name, token, tokenId: record.id };
    },
    connection(userId, status = 'online') {
      const row = store.connections.insert({ id: randomUUID(), userId, name: null, workerId: 'test' });
      store.connections.setStatus(row.id, status, null);
      return store.connections.get(row.id)!;
    },
    async request<T>(method: string, route: string, o: { token?: string; body?: unknown } = {}) {
      const headers: Record<string, string> = {};
      if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
      let body: string | undefined;
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
      await engine.close();
      store.close();
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
