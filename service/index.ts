/**
 * The service assembled: database, optional in-process sandbox, engine, HTTP + WebSocket API.
 * `startService` is the one entry the CLI (`switchboard serve`) and the desktop app use.
 *
 * Start order: store → sandbox → engine → API listening → sessions started (linked connections come back after
 * a restart). In sandbox mode the sandbox runs in-process, unless `waUrl` points at one running elsewhere
 * (`switchboard sandbox`); its root key is then `waRootPublicKey` or read from its admin API.
 * `close()` drains the API first (no new requests, event streams closed with 1001, in-flight requests finish),
 * then closes the sessions, the sandbox and the database; a step that hangs is given up after 10 s (logged).
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { issueToken, type OtherModeTokens } from './auth/api-tokens.ts';
import { dataPaths } from './config/data-dir.ts';
import { repairPrivateModes } from './config/private-dir.ts';
import { ensureUsableDir, lockDataDir } from './config/data-dir-lock.ts';
import { databaseRefusal } from './config/database-url.ts';
import { installConsoleFilter, setConsoleFilterLogger } from './config/console-filter.ts';
import { createLogger } from './config/logger.ts';
import { fetchSandboxTrust, sandboxAdminUrl } from './config/remote-sandbox.ts';
import { assertFreeSpace, DiskSpaceMonitor } from './config/disk-space.ts';
import { MachineSettings } from './config/machine-settings.ts';
import { ConfigError, DEFAULT_MIN_FREE_MB, DEFAULT_WORKERS, type ConfigFlags, type ServiceConfig } from './config/service-config.ts';
import type { Keychain } from './secrets/keychain.ts';
import { VERSION } from './config/version.ts';
import { createBilling, defaultBillingConfig } from './billing/billing.ts';
import { startCheckpointer } from './db/checkpointer.ts';
import { peerTokens } from './db/peer-tokens.ts';
import { MAIN_THREAD_WRITE_WAIT_MS } from './db/store.ts';
import { openDataPlane, type DataPlane, type DataPlaneOptions } from './data-plane.ts';
import { WriteLock } from './db/write-lock.ts';
import { startSearchBackfill } from './db/search-backfill.ts';
import { createEngine } from './engine/engine.ts';
import { createThreadEngine, type SessionThreads } from './engine/thread-engine.ts';
import type { Engine, EngineOptions } from './engine/types.ts';
import { API_PREFIX, buildApp } from './http/app.ts';
import { startSandbox } from './sandbox/index.ts';
import { startRetention } from './events/retention.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';
import { OutboundPolicy, type Resolver } from './net/outbound.ts';

/** Longest wait for one shutdown step (API drain, sessions, sandbox…) before the next one runs anyway. */
const SHUTDOWN_STEP_TIMEOUT_MS = 10_000;

export interface RunningService {
  /** Base URL of the REST API, e.g. `http://127.0.0.1:7575/api`. */
  apiUrl: string;
  /** The API's public base URL that `media.url` is built from: `config.publicUrl`, else `apiUrl`. */
  publicUrl: string;
  /** HTTP URL of the in-process sandbox (sandbox mode only). */
  sandboxUrl?: string;
  /**
   * Issues an API token (`wh_…`, returned once) for the local user `userName`, created when missing; the desktop
   * shell's operator token comes from here. @throws after close()
   */
  issueLocalToken(userName: string, tokenName: string): Promise<string>;
  /** The session worker threads, when `config.workers` ≥ 1 (docs/scaling.md). */
  sessionThreads?: SessionThreads;
  /**
   * Issues an API token for the machine's owner — the first local user of the data dir, who may change the machine's
   * settings (docs/settings.md) — creating the local user `operator` when there is none yet (the desktop app).
   */
  issueOwnerToken(tokenName: string): Promise<string>;
  /** Set when the configured port was taken and the API listens on another one (StartOptions.portFallback). */
  portFallback?: PortFallback;
  /** Stops everything; safe to call more than once. */
  close(): Promise<void>;
}

/** In-process options beyond the config (embedding and tests). */
export interface StartOptions {
  logger?: Logger;
  /** The engine's clock in ms (the message edit window is checked against it); `Date.now` by default. */
  now?: () => number;
  /** TLS options for fetching `url` media of send requests (e.g. trusting a test CA). */
  urlFetchTls?: EngineOptions['urlFetchTls'];
  /** Total time for fetching a send request's `url`, in ms (60 000; tests shorten it). */
  urlFetchTimeoutMs?: number;
  /** Name resolution of the outbound URL policy (tests inject a stub); `dns.lookup` by default. */
  resolve?: Resolver;
  /** How long a connection attempt may take, in ms (20 000; tests shorten it). */
  connectTimeoutMs?: number;
  /**
   * The flags and environment `config` was resolved from (`serve`, the desktop's service process): the settings API
   * reports what they set and checks changes the way the next start will. Absent (embedding, tests): none.
   */
  settingsSources?: { flags: ConfigFlags; env: NodeJS.ProcessEnv };
  /** When the configured port is taken, listen on a free one instead and say so (the desktop app); default off. */
  portFallback?: boolean;
  /**
   * Listen on this port instead of the configured one, without fallback: the desktop supervisor keeps a restarted
   * service on the port its window uses. The settings API then counts a different saved port as waiting for a restart.
   */
  pinnedPort?: number;
  /** Restarts this service so saved settings apply (the desktop supervisor); `POST /api/settings/restart` calls it. */
  restart?: () => void;
  /** Opens the OS keychain for the Stripe key the settings store; null: none. Default: the OS keychain. */
  openKeychain?: (() => Promise<Keychain>) | null;
  /** Enables the session threads' test-only hooks (SessionThreads.testHoldWriteLock); tests only. */
  testHooks?: boolean;
}

/** The configured port was taken: where the API listens instead, and the sentence shown to the operator. */
export interface PortFallback {
  requested: number;
  port: number;
  message: string;
}

/** `http://host:port`, with brackets around IPv6 hosts. */
export function httpOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * The Host and Origin values the API accepts besides the loopback ones: `--allowed-hosts`/`--allowed-origins`, plus
 * the host and origin of `--public-url` (the address the operator declared for clients, a LAN name or a proxy).
 */
function publicAccess(config: ServiceConfig): { allowedHosts?: string[]; allowedOrigins?: string[] } {
  const url = config.publicUrl ? new URL(config.publicUrl) : undefined;
  const hosts = [...(config.allowedHosts ?? []), ...(url ? [url.host] : [])];
  const origins = [...(config.allowedOrigins ?? []), ...(url ? [url.origin] : [])];
  return { ...(hosts.length > 0 && { allowedHosts: hosts }), ...(origins.length > 0 && { allowedOrigins: origins }) };
}

/**
 * The data plane of `config`: `config.database` when set (its refusal in this build is one StartupError line naming
 * the URL without its password), else the data dir's SQLite file.
 */
function openConfiguredPlane(config: ServiceConfig, options: DataPlaneOptions): DataPlane {
  if (!config.database) return openDataPlane(options);
  try {
    return openDataPlane({ ...options, database: config.database.reveal() });
  } catch (err) {
    throw databaseRefusal(err, config.database);
  }
}

/**
 * Starts the service described by `config`.
 * @throws StartupError when the data dir or the media dir is unusable, another process holds the data dir's lock
 *   (config/data-dir-lock.ts), or `config.database` cannot be used (every URL in this build);
 *   DatabaseOpenError when the database cannot be used (the file is left untouched);
 *   listen errors such as EADDRINUSE. Whatever had started is closed again before the error is thrown.
 */
export async function startService(config: ServiceConfig, opts: StartOptions = {}): Promise<RunningService> {
  // Baileys' trust anchor is process-wide: only a sandbox may replace it (live mode is sealed: docs/architecture.md §
  // Sandbox trust).
  if (config.waRootPublicKey && !config.sandbox) throw new ConfigError('a WhatsApp root key can only be set in sandbox mode');
  const logger = opts.logger ?? createLogger(config.logLevel, config.logFormat);
  // libsignal prints session records (private keys) through console: drop them, log the message at debug.
  installConsoleFilter();
  setConsoleFilterLogger(logger);
  const { sandboxServerDir } = dataPaths(config.dataDir);
  // --media-dir, else <dataDir>/media; a media dir outside the data dir's own layout is repaired like the data dir.
  const mediaDir = config.mediaDir ?? dataPaths(config.dataDir).mediaDir;
  const ownDirs = mediaDir === dataPaths(config.dataDir).mediaDir ? [] : [mediaDir];
  const cleanups: Array<{ step: string; cleanup: () => Promise<unknown> | void }> = [];
  const closeStarted = async () => {
    for (const { step, cleanup } of cleanups.splice(0).reverse()) {
      let timer: NodeJS.Timeout | undefined;
      try {
        // A step that hangs (a peer that never closes its socket) must not keep the process from exiting.
        const outcome = await Promise.race([
          Promise.resolve(cleanup()).then(() => 'done' as const),
          new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), SHUTDOWN_STEP_TIMEOUT_MS))),
        ]);
        if (outcome === 'timeout') logger.error({ step, ms: SHUTDOWN_STEP_TIMEOUT_MS }, 'shutdown step did not finish in time; going on');
      } catch (err) {
        logger.error({ err, step }, 'error during shutdown');
      } finally {
        clearTimeout(timer);
      }
    }
  };

  try {
    // One process per data dir, and a clear line when the dir cannot be used (before anything is opened in it).
    const lock = lockDataDir(config.dataDir);
    cleanups.push({ step: 'data dir lock', cleanup: () => lock.release() });
    // The media dir: created private, one line when it cannot be used (a file, no permission), before any session runs.
    if (config.mediaDir) ensureUsableDir(config.mediaDir, 'media dir');
    // Refuse to start on a (nearly) full disk, before anything is written (--min-free-mb).
    const minFreeMb = config.minFreeMb ?? DEFAULT_MIN_FREE_MB;
    assertFreeSpace(config.dataDir, minFreeMb);
    const disk = new DiskSpaceMonitor(config.dataDir, minFreeMb, logger.child({ component: 'storage' })).start();
    cleanups.push({ step: 'disk monitor', cleanup: () => disk.stop() });
    // With session threads, every thread's store hands SQLite's write lock over through one shared lock (write-lock.ts).
    const workers = config.workers ?? DEFAULT_WORKERS;
    const writeLock = workers > 0 ? new SharedArrayBuffer(4) : undefined;
    // Whether a session thread holding that lock has stopped (known once the pool exists; main's thread id is 0).
    let threadGone = (_threadId: number): boolean => false;
    // This thread serves HTTP, the stream and webhooks: with session threads it never sleeps for a lock (busy
    // timeout 0, a lock that only tries); its writes wait in `txAsync` at most MAIN_THREAD_WRITE_WAIT_MS, and an API
    // write that cannot get the lock answers 503 (docs/architecture.md § Threads and the write lock). Without threads
    // the sessions run here and wait in SQLite's busy handler, as they must.
    // The store, the event log (seq, publication after commit) and the webhook outbox that writes a row per
    // subscribed webhook in each event's transaction (docs/architecture.md § Data plane).
    const { store, asyncStore, events, outbox } = openConfiguredPlane(config, {
      dataDir: config.dataDir,
      role: 'main',
      onSyncError: (err) => logger.error({ err }, 'fsync of the database WAL failed; synced again on the main thread'),
      busyTimeoutMs: writeLock ? 0 : MAIN_THREAD_WRITE_WAIT_MS,
      ...(writeLock && {
        writeLock: new WriteLock(writeLock, (t) => t !== 0 && threadGone(t), { giveUpMs: MAIN_THREAD_WRITE_WAIT_MS, blocking: false }),
      }),
    });
    cleanups.push({ step: 'database', cleanup: () => store.close() });
    if (config.publicUrl) store.mediaUrls.setBase(config.publicUrl);
    // A private data dir: 0700 folders, 0600 files; anything looser (an older version, a copy, a umask) is repaired
    // once the database proved to be Switchboard's (a foreign file is refused above and left untouched).
    const loose = repairPrivateModes(config.dataDir, ownDirs);
    if (loose.repaired) {
      logger.warn(
        { dataDir: config.dataDir, ...(ownDirs.length > 0 && { mediaDir }), repaired: loose.repaired, examples: loose.examples },
        'data dir was readable by other local accounts: folders set to 0700 and files to 0600',
      );
    }
    const checkpointer = startCheckpointer(store.db, (err) =>
      logger.error({ err }, 'the WAL checkpoint worker failed; checkpoints run on the main thread again'),
    );
    cleanups.push({ step: 'checkpoint worker', cleanup: () => checkpointer.stop() });

    let waUrl = config.waUrl;
    let waRootPublicKey = config.waRootPublicKey;
    let waCaCertPem: string | undefined;
    let sandboxUrl: string | undefined;
    if (config.sandbox && !config.waUrl) {
      const sandbox = await startSandbox({
        dataDir: sandboxServerDir,
        host: config.host,
        port: config.sandboxPort,
        // Without --sandbox-port the sandbox keeps the port of its last start (its URL survives a restart).
        reusePort: config.sandboxPort === 0,
        logger: logger.child({ component: 'sandbox' }),
      });
      cleanups.push({ step: 'sandbox', cleanup: () => sandbox.close() });
      if (sandbox.portTaken !== undefined) {
        logger.warn(
          { portTaken: sandbox.portTaken, sandboxUrl: sandbox.url },
          `The sandbox's port ${sandbox.portTaken} (from its last start) is in use by another program, so it listens on ` +
            `${sandbox.url} now and keeps that port from here on: update SANDBOX to the new Sandbox: line`,
        );
      }
      await sandbox.seedDemo();
      ({ wsUrl: waUrl, rootPublicKey: waRootPublicKey, url: sandboxUrl, caCertPem: waCaCertPem } = sandbox);
    } else if (config.sandbox && waUrl) {
      // A sandbox running elsewhere: its admin API shares host and port with the WebSocket endpoint.
      sandboxUrl = sandboxAdminUrl(waUrl);
      const trust = await fetchSandboxTrust(waUrl);
      waRootPublicKey ??= trust.rootPublicKey;
      waCaCertPem = trust.caCertPem;
    }

    // The machine's settings as the console edits them (settings.json, the keychain); the LAN switch applies live.
    const sources = opts.settingsSources ?? { flags: {}, env: {} };
    const settings = new MachineSettings({
      dataDir: config.dataDir,
      flags: sources.flags,
      env: sources.env,
      allowLanWebhooks: config.allowLanWebhooks === true,
      ...(opts.pinnedPort !== undefined && { runningPort: opts.pinnedPort }),
      ...(opts.openKeychain !== undefined && { openKeychain: opts.openKeychain }),
      ...(opts.restart && { restart: opts.restart }),
    });

    // One outbound URL policy for webhooks and send-* `url` fetches (net/outbound.ts).
    const policy = new OutboundPolicy({
      allowLan: false,
      // Sandbox mode is a test mode: webhook receivers on this machine need no switch (send-* url stays strict).
      allowLoopbackWebhooks: config.sandbox,
      allowLanSetting: () => settings.allowLanWebhooks(),
      ...(opts.resolve && { resolve: opts.resolve }),
    });
    const engineOptions: EngineOptions = {
      store,
      events,
      logger,
      workerId: config.workerId,
      mediaDir,
      typingDelayMs: config.typingDelayMs,
      ...(waUrl && { waUrl }),
      ...(waRootPublicKey && { waRootPublicKey }),
      ...(waCaCertPem && { waCaCertPem }),
      ...(opts.now && { now: opts.now }),
      outbound: policy,
      ...(opts.urlFetchTls && { urlFetchTls: opts.urlFetchTls }),
      ...(opts.urlFetchTimeoutMs !== undefined && { urlFetchTimeoutMs: opts.urlFetchTimeoutMs }),
      ...(opts.connectTimeoutMs !== undefined && { connectTimeoutMs: opts.connectTimeoutMs }),
      storageHasRoom: () => disk.hasRoom(),
      ...(config.downloadStatusMedia && { downloadStatusMedia: true }),
      ...(config.onlineFallbackMs !== undefined && { onlineFallbackMs: config.onlineFallbackMs }),
    };
    const threaded =
      writeLock
        ? createThreadEngine({
            ...engineOptions,
            workers,
            writeLock,
            dataDir: config.dataDir,
            outboundFlags: { allowLoopbackWebhooks: config.sandbox },
            allowLanWebhooks: () => settings.allowLanWebhooks(),
            onOutbox: () => outbox.wake(),
            ...(opts.testHooks && { testHooks: true }),
            ...(opts.resolve && { resolve: opts.resolve }),
          })
        : undefined;
    const engine: Engine = threaded ?? createEngine(engineOptions);
    if (threaded) threadGone = (t) => threaded.threads.isGone(t);
    if (threaded) logger.info({ workers }, 'sessions run on worker threads');
    cleanups.push({ step: 'sessions', cleanup: () => engine.close() });

    const dispatcher = new WebhookDispatcher({
      store,
      outbox,
      logger: logger.child({ component: 'webhooks' }),
      policy,
      userAgent: `Switchboard-Webhooks/${VERSION}`,
      ...(config.webhookRetryDelaysMs && { retryDelaysMs: config.webhookRetryDelaysMs }),
    });

    // A token of the other mode's data dir (live ↔ sandbox) gets a 401 that says so: a read-only look-up, on that
    // path only, of a database this service never creates or writes (db/peer-tokens.ts).
    let otherModeTokens: OtherModeTokens | undefined;
    if (config.otherModeDataDir) {
      const tokens = peerTokens(config.otherModeDataDir);
      cleanups.push({ step: 'other data dir tokens', cleanup: () => tokens.close() });
      otherModeTokens = { mode: config.sandbox ? 'live' : 'sandbox', tokens };
    }

    // Slots and billing; the Stripe key (if any) is read when first needed. The console's origin is known once listening.
    let consoleOrigin = '';
    const billing = createBilling({
      store,
      logger,
      config: config.billing ?? defaultBillingConfig(),
      consoleOrigin: () => consoleOrigin,
    });
    logger.info({ provider: billing.provider, maxSlots: billing.maxSlots }, 'billing provider');

    const app = await buildApp({
      store,
      asyncStore,
      engine,
      events,
      outbox,
      logger,
      workerId: config.workerId,
      version: VERSION,
      sandbox: config.sandbox,
      startedAt: Date.now(),
      storage: () => (engine.storageUnavailable() ? 'unavailable' : disk.low ? 'low' : 'ok'),
      billing,
      webhookPolicy: policy,
      settings,
      portFallback: () => portFallback,
      ...(otherModeTokens && { otherModeTokens }),
      ...(config.jwt && { jwt: config.jwt }),
      ...(config.rateLimit && { rateLimit: config.rateLimit }),
      ...publicAccess(config),
      userCaps: {
        ...(config.maxStreamsPerUser !== undefined && { maxStreams: config.maxStreamsPerUser }),
        ...(config.maxLargeUploadsPerUser !== undefined && { maxLargeUploads: config.maxLargeUploadsPerUser }),
        ...(config.maxExportsPerUser !== undefined && { maxExports: config.maxExportsPerUser }),
      },
      ...(config.waQueryPace && { waQueryPace: config.waQueryPace }),
    });
    cleanups.push({ step: 'api', cleanup: () => app.close() });
    let portFallback: PortFallback | undefined;
    try {
      await app.listen({ host: config.host, port: opts.pinnedPort ?? config.port });
    } catch (err) {
      const fallback = opts.portFallback && opts.pinnedPort === undefined && config.port !== 0;
      if (!fallback || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      await app.listen({ host: config.host, port: 0 });
      const actual = (app.server.address() as AddressInfo).port;
      portFallback = {
        requested: config.port,
        port: actual,
        message:
          `Port ${config.port} is in use by another program, so the API listens on port ${actual} for now. ` +
          `Free port ${config.port}, or choose another port in Settings, then restart.`,
      };
      logger.warn({ requestedPort: config.port, port: actual }, portFallback.message);
    }
    const { port } = app.server.address() as AddressInfo;
    consoleOrigin = httpOrigin(config.host, port);
    const apiUrl = consoleOrigin + API_PREFIX;
    // Media URLs name the address clients use: --public-url, else the one printed on the API: line.
    if (!config.publicUrl) store.mediaUrls.setBase(apiUrl);
    policy.ownPort = port;
    threaded?.threads.configure({ ownPort: port, mediaBase: store.mediaUrls.base });

    // Webhook deliveries (including those left by a previous run) and the event log's retention.
    void dispatcher.start();
    cleanups.push({ step: 'webhook dispatcher', cleanup: () => dispatcher.close() });
    const retention = startRetention({ store, logger, ...(config.eventRetentionDays && { days: config.eventRetentionDays }) });
    cleanups.push({ step: 'event retention', cleanup: () => retention.stop() });
    const searchBackfill = startSearchBackfill({ store, logger });
    cleanups.push({ step: 'search index backfill', cleanup: () => searchBackfill.stop() });

    engine.startAll();
    // Files made during start-up by parts that do not set modes themselves (the sandbox's database): no warning.
    repairPrivateModes(config.dataDir, ownDirs);

    let closing: Promise<void> | undefined;
    return {
      apiUrl,
      publicUrl: store.mediaUrls.base,
      ...(sandboxUrl && { sandboxUrl }),
      ...(threaded && { sessionThreads: threaded.threads }),
      issueLocalToken: (userName, tokenName) =>
        store.txAsync(() => issueToken(store.tokens, store.users.ensure(userName).id, tokenName).token),
      issueOwnerToken: (tokenName) =>
        store.txAsync(() => issueToken(store.tokens, (store.users.owner() ?? store.users.ensure('operator')).id, tokenName).token),
      ...(portFallback && { portFallback }),
      close: () => (closing ??= closeStarted()),
    };
  } catch (err) {
    await closeStarted();
    throw err;
  }
}
