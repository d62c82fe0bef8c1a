/**
 * The baseline for the benchmarks: a bare, unmodified Baileys rc14 socket with in-memory auth (no storage, no
 * event log, no webhooks), paired with a sandbox phone through the admin `scan` call, counting incoming
 * `messages.upsert` (notify) messages.
 */
import makeWASocket, {
  Browsers,
  WA_CERT_DETAILS,
  initAuthCreds,
  makeCacheableSignalKeyStore,
  type AuthenticationState,
  type WASocket,
} from '@whiskeysockets/baileys';
import { pino } from 'pino';
import { memoryKeyStore } from '../test/sandbox/baileys-client.ts';
import { awaitableCount, enc, type JsonClient } from './lib.ts';

function memoryAuthState(): AuthenticationState {
  return { creds: initAuthCreds(), keys: memoryKeyStore({}) };
}

export interface BareClient {
  sock: WASocket;
  received: () => number;
  /** Resolves with performance.now() once `n` incoming messages were seen in total. */
  reach(n: number, timeoutMs: number): Promise<number>;
  end(): void;
}

const silent = pino({ level: 'silent' });

function open(wsUrl: string, state: AuthenticationState): WASocket {
  return makeWASocket({
    waWebSocketUrl: wsUrl,
    auth: { creds: state.creds, keys: makeCacheableSignalKeyStore(state.keys, silent) },
    logger: silent,
    browser: Browsers.macOS('Chrome'),
    connectTimeoutMs: 10_000,
    defaultQueryTimeoutMs: 20_000,
  });
}

/** Pairs a bare socket with `phone` (QR → admin scan → 515 → reconnect) and resolves once it is open. */
export async function pairBareClient(wsUrl: string, rootPublicKeyHex: string, admin: JsonClient, phone: string): Promise<BareClient> {
  WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(rootPublicKeyHex, 'hex');
  const state = memoryAuthState();
  const first = open(wsUrl, state);
  first.ev.on('creds.update', (u) => Object.assign(state.creds, u));
  const qr = await new Promise<string>((resolve) => first.ev.on('connection.update', (u) => u.qr && resolve(u.qr)));
  const closed = new Promise<void>((resolve) => first.ev.on('connection.update', (u) => u.connection === 'close' && resolve()));
  const scan = await admin('POST', `/accounts/${enc(phone)}/scan`, { qr });
  if (scan.status !== 200) throw new Error(`bare scan: ${scan.status} ${JSON.stringify(scan.body)}`);
  await closed; // 515 restart required
  const sock = open(wsUrl, state);
  sock.ev.on('creds.update', (u) => Object.assign(state.creds, u));
  const count = awaitableCount('messages at the bare client');
  sock.ev.on('messages.upsert', ({ messages, type }) => {
    if (type !== 'notify') return;
    count.add(messages.filter((m) => !m.key.fromMe && m.message).length);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bare client did not open')), 30_000);
    sock.ev.on('connection.update', (u) => {
      if (u.connection === 'open') {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return {
    sock,
    received: count.value,
    reach: count.reach,
    end: () => sock.end(undefined),
  };
}

/**
 * The bare client in its own process (like the service), so it does not share the bench process's event loop
 * with the admin-send loop: `node --import tsx bench/bare-client.ts <wsUrl> <rootKeyHex> <adminUrl> <phone>`.
 * It reports `{ ready: true }` once open and `{ count }` after each `messages.upsert` over IPC.
 */
if (process.argv[1] && import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href) {
  // tsx's loader turned source maps on; an application built on plain Baileys runs without them, and so does the
  // compiled service this is compared with (they make every `new Error().stack` in Baileys' hot paths costlier).
  process.setSourceMapsEnabled(false);
  const [wsUrl, rootKey, adminUrl, phone] = process.argv.slice(2) as [string, string, string, string];
  const { jsonClient } = await import('./lib.ts');
  const client = await pairBareClient(wsUrl, rootKey, jsonClient(adminUrl), phone);
  client.sock.ev.on('messages.upsert', () => process.send!({ count: client.received() }));
  process.send!({ ready: true });
  process.on('disconnect', () => {
    client.end();
    process.exit(0);
  });
}
