/**
 * Public entry of the sandbox: a WhatsApp-web-protocol server on loopback with simulated phone accounts,
 * which an unmodified Baileys rc14 client pairs with, logs into and exchanges Signal messages with, 1:1 and in
 * groups (sender keys, `w:g2` queries, `w:gp2` notifications; see `groups.ts`).
 *
 * One HTTP server serves the admin API (JSON, see `admin-api.ts`) and the WebSocket upgrade at
 * `/ws/chat` (point Baileys' `waWebSocketUrl` there and set `WA_CERT_DETAILS.PUBLIC_KEY = rootPublicKey`).
 * A second, HTTPS server is the media host (`media.ts`), with the sandbox's own CA (`tls.ts`): only
 * sandbox-mode requests trust `caCertPem` (see `service/engine/sandbox-trust.ts`).
 * All state lives in `<dataDir>/sandbox.db`; a restarted sandbox keeps accounts, linked devices, Signal
 * sessions, undelivered messages, media blobs and its CA.
 */
import { installConsoleFilter } from '../config/console-filter.ts';
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { pino, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { Accounts } from './accounts.ts';
import { AppStateKeys } from './app-state.ts';
import { HISTORY_MESSAGES_PER_CHAT, HISTORY_MESSAGES_PER_CHUNK } from './history.ts';
import { MediaHost } from './media.ts';
import { Signals } from './signals.ts';
import { loadTlsIdentity } from './tls.ts';
import { createAdminHandler, hostAllowed } from './admin-api.ts';
import { loadServerIdentity } from './certs.ts';
import type { SandboxContext } from './context.ts';
import { Delivery } from './delivery.ts';
import { Blocklist } from './blocklist.ts';
import { Calls } from './calls.ts';
import { Groups } from './groups.ts';
import { LinkCodes } from './link-code.ts';
import { Messaging } from './messaging.ts';
import { Statuses } from './statuses.ts';
import { Pairing } from './pairing.ts';
import { Profiles } from './profiles.ts';
import { seedDemo } from './seed.ts';
import { ClientConnection } from './session.ts';
import { Phones } from './signal-device.ts';
import { Store } from './store.ts';

export interface SandboxOptions {
  /** Directory for `sandbox.db` (created if missing). */
  dataDir: string;
  /** Listen address; default `127.0.0.1`. */
  host?: string;
  /** Listen port; `0` (default) picks a free port. */
  port?: number;
  /**
   * With `port` 0: listen on the port this data dir's sandbox listened on last time (kept in its database), so its
   * URL survives a restart; when another program holds that port, on a free one (`portTaken` says so), which is
   * kept from then on. Default false.
   */
  reusePort?: boolean;
  /** Parent logger; protocol chatter is logged at debug/trace. Default: pino at `warn`. */
  logger?: Logger;
  /** Port of the HTTPS media host (same listen address); `0` (default) picks a free port. */
  mediaPort?: number;
  /** Most recent messages per chat in a new companion's history sync; default 100 000; 0 sends chats as metadata only. */
  historyMessagesPerChat?: number;
  /** Messages per history-sync message (chunk); default 5 000. */
  historyMessagesPerChunk?: number;
}

export interface Sandbox {
  /** Admin API base, e.g. `http://127.0.0.1:PORT`. */
  url: string;
  /** `ws://127.0.0.1:PORT/ws/chat` — what Baileys' `waWebSocketUrl` is set to. */
  wsUrl: string;
  /**
   * 32-byte Curve25519 root key the Noise cert chain is signed with; assignable as-is to Baileys'
   * `WA_CERT_DETAILS.PUBLIC_KEY` (hence `Buffer<ArrayBuffer>`).
   */
  rootPublicKey: Buffer<ArrayBuffer>;
  /** PEM of the sandbox CA that signs the media host's certificate; trust it for sandbox requests only. */
  caCertPem: string;
  /** `host:port` of the HTTPS media host (as advertised in `media_conn`). */
  mediaHost: string;
  /** With `reusePort`: the port of the last start, when it was taken and the sandbox listens on another one. */
  portTaken?: number;
  /** Create the demo accounts and chats, only when no accounts exist (idempotent). */
  seedDemo(): Promise<void>;
  /** Close client WebSockets, the HTTP server and the database. */
  close(): Promise<void>;
}

const WS_PATH = '/ws/chat';
/** Generous upper bound for one client frame (Noise frames are at most 16 MiB). */
const MAX_WS_MESSAGE = 32 * 1024 * 1024;

/** `meta` key of the port the admin API and WebSocket listened on last (as decimal text; `reusePort`). */
const PORT_KEY = 'listen.port';

/**
 * Listens on `remembered` when it is set and free, else on a free port; `taken` is `remembered` when another
 * program held it. (A server whose listen failed may listen again: node:net.)
 */
async function listenReusing(
  server: Server,
  remembered: number | undefined,
  host: string,
): Promise<{ port: number; taken?: number }> {
  if (remembered === undefined) return { port: await listen(server, 0, host) };
  try {
    return { port: await listen(server, remembered, host) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
    return { port: await listen(server, 0, host), taken: remembered };
  }
}

function rememberedPort(store: Store): number | undefined {
  const text = store.getMeta(PORT_KEY)?.toString('utf8');
  const port = text && /^\d{1,5}$/.test(text) ? Number(text) : 0;
  return port > 0 && port <= 65535 ? port : undefined;
}

/** Keeps `port` for the next start; a failed write (a full disk) only costs the next start its old URL. */
function rememberPort(store: Store, port: number, logger: Logger): void {
  try {
    store.setMeta(PORT_KEY, Buffer.from(String(port)));
  } catch (err) {
    logger.warn({ err, port }, 'could not remember the sandbox port for the next start');
  }
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : port);
    });
  });
}

/**
 * Start a sandbox: open/migrate the database, load (or create) the server keys, and listen.
 * @throws if the data dir cannot be used or the port is taken.
 */
export async function startSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const host = opts.host ?? '127.0.0.1';
  const logger = (opts.logger ?? pino({ level: 'warn' })).child({ module: 'sandbox' });
  installConsoleFilter(); // the simulated phones run libsignal, which prints session records through console
  const store = new Store(opts.dataDir);
  const identity = loadServerIdentity(store);
  const accounts = new Accounts(store);
  let hostPort = '';
  let wsUrl = '';
  let tls;
  try {
    tls = loadTlsIdentity(store, host);
  } catch (err) {
    store.close();
    throw err;
  }
  const media = new MediaHost(store, logger.child({ part: 'media' }), tls);
  const history = {
    messagesPerChat: opts.historyMessagesPerChat ?? HISTORY_MESSAGES_PER_CHAT,
    messagesPerChunk: opts.historyMessagesPerChunk ?? HISTORY_MESSAGES_PER_CHUNK,
  };

  // the parts reference each other through the context; it is complete before any traffic arrives
  const ctx = { store, logger, identity, accounts, media, history } as SandboxContext;
  ctx.signals = new Signals(ctx);
  ctx.delivery = new Delivery(ctx);
  ctx.phones = new Phones(store, accounts, (pn, deviceId, remaining) =>
    ctx.delivery.onDevicePreKeyTaken(pn, deviceId, remaining),
  );
  ctx.pairing = new Pairing(ctx);
  ctx.linkCodes = new LinkCodes(ctx);
  ctx.messaging = new Messaging(ctx);
  ctx.statuses = new Statuses(ctx);
  ctx.groups = new Groups(ctx);
  ctx.blocklist = new Blocklist(store.db);
  ctx.calls = new Calls(ctx);
  ctx.profiles = new Profiles(ctx);
  ctx.appState = new AppStateKeys(store.db);

  const connections = new Set<ClientConnection>();
  const server = createServer(createAdminHandler(ctx, () => ({ wsUrl, caCertPem: tls.caCertPem })));
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_MESSAGE, perMessageDeflate: false });
  server.on('upgrade', (req, socket: Duplex, head) => {
    const path = new URL(req.url ?? '/', 'http://sandbox').pathname;
    if (path !== WS_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      return;
    }
    if (!hostAllowed(req)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new ClientConnection(ctx, ws);
      connections.add(conn);
      ws.on('close', () => connections.delete(conn));
      conn.log.debug({ remote: req.socket.remoteAddress }, 'client connected');
    });
  });
  server.on('clientError', (err, socket) => {
    logger.debug({ err }, 'http client error');
    socket.destroy();
  });

  let port: number;
  let portTaken: number | undefined;
  const reuse = opts.reusePort === true && (opts.port ?? 0) === 0;
  try {
    await media.listen(host, opts.mediaPort ?? 0);
    if (reuse) {
      const remembered = rememberedPort(store);
      ({ port, taken: portTaken } = await listenReusing(server, remembered, host));
      if (port !== remembered) rememberPort(store, port, logger);
    } else {
      port = await listen(server, opts.port ?? 0, host);
    }
  } catch (err) {
    server.close();
    await media.close();
    store.close();
    throw err;
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;
  hostPort = `${urlHost}:${port}`;
  wsUrl = `ws://${hostPort}${WS_PATH}`;
  const url = `http://${hostPort}`;
  logger.info({ url, wsUrl, mediaHost: media.host, ...(portTaken && { portTaken }) }, 'sandbox listening');

  let closed = false;
  return {
    url,
    wsUrl,
    rootPublicKey: Buffer.from(identity.rootKey.public),
    caCertPem: tls.caCertPem,
    mediaHost: media.host,
    ...(portTaken !== undefined && { portTaken }),
    async seedDemo() {
      if (seedDemo(store, accounts)) logger.info('seeded demo accounts');
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const c of connections) c.terminate();
      connections.clear();
      // ws's close() waits for every tracked client, including one still in its handshake (not in `connections`).
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await media.close();
      await store.commit().catch((err) => logger.error({ err }, 'final commit failed'));
      store.close();
    },
  };
}
