/**
 * The service assembled: database, optional in-process sandbox, engine, HTTP + WebSocket API.
 * `startService` is the one entry the CLI (`switchboard serve`) and the desktop app use.
 *
 * Start order: store → sandbox → engine → API listening → sessions started (linked connections come back after
 * a restart). In sandbox mode the sandbox runs in-process, unless `waUrl` points at one running elsewhere
 * (`switchboard sandbox`); its root key is then `waRootPublicKey` or read from its admin API.
 * `close()` drains the API first (no new requests, event streams closed with 1001, in-flight requests finish),
 * then closes the sessions, the sandbox and the database.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { dataPaths } from './config/data-dir.ts';
import { createLogger } from './config/logger.ts';
import { fetchSandboxRootKey, sandboxAdminUrl } from './config/remote-sandbox.ts';
import type { ServiceConfig } from './config/service-config.ts';
import { VERSION } from './config/version.ts';
import { openStore } from './db/store.ts';
import { createEngine } from './engine/engine.ts';
import { API_PREFIX, buildApp } from './http/app.ts';
import { startSandbox } from './sandbox/index.ts';

export interface RunningService {
  /** Base URL of the REST API, e.g. `http://127.0.0.1:7575/api`. */
  apiUrl: string;
  /** HTTP URL of the in-process sandbox (sandbox mode only). */
  sandboxUrl?: string;
  /** Stops everything; safe to call more than once. */
  close(): Promise<void>;
}

/** `http://host:port`, with brackets around IPv6 hosts. */
export function httpOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Starts the service described by `config`.
 * @throws DatabaseOpenError when the database cannot be used (the file is left untouched);
 *   listen errors such as EADDRINUSE. Whatever had started is closed again before the error is thrown.
 */
export async function startService(config: ServiceConfig, opts: { logger?: Logger } = {}): Promise<RunningService> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const { mediaDir, sandboxServerDir } = dataPaths(config.dataDir);
  const cleanups: Array<() => Promise<void> | void> = [];
  const closeStarted = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        logger.error({ err }, 'error during shutdown');
      }
    }
  };

  try {
    const store = openStore(config.dataDir);
    cleanups.push(() => store.close());

    let waUrl = config.waUrl;
    let waRootPublicKey = config.waRootPublicKey;
    let sandboxUrl: string | undefined;
    if (config.sandbox && !config.waUrl) {
      const sandbox = await startSandbox({
        dataDir: sandboxServerDir,
        host: config.host,
        port: config.sandboxPort,
        logger: logger.child({ component: 'sandbox' }),
      });
      cleanups.push(() => sandbox.close());
      await sandbox.seedDemo();
      ({ wsUrl: waUrl, rootPublicKey: waRootPublicKey, url: sandboxUrl } = sandbox);
    } else if (config.sandbox && waUrl) {
      // A sandbox running elsewhere: its admin API shares host and port with the WebSocket endpoint.
      sandboxUrl = sandboxAdminUrl(waUrl);
      waRootPublicKey ??= await fetchSandboxRootKey(waUrl);
    }

    const engine = createEngine({
      store,
      logger,
      workerId: config.workerId,
      mediaDir,
      typingDelayMs: config.typingDelayMs,
      ...(waUrl && { waUrl }),
      ...(waRootPublicKey && { waRootPublicKey }),
    });
    cleanups.push(() => engine.close());

    const app = await buildApp({
      store,
      engine,
      logger,
      workerId: config.workerId,
      version: VERSION,
      sandbox: config.sandbox,
      startedAt: Date.now(),
    });
    cleanups.push(() => app.close());
    await app.listen({ host: config.host, port: config.port });
    const { port } = app.server.address() as AddressInfo;

    engine.startAll();

    let closing: Promise<void> | undefined;
    return {
      apiUrl: httpOrigin(config.host, port) + API_PREFIX,
      ...(sandboxUrl && { sandboxUrl }),
      close: () => (closing ??= closeStarted()),
    };
  } catch (err) {
    await closeStarted();
    throw err;
  }
}
