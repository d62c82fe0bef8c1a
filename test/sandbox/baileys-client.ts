/**
 * Test harness around a real, unmodified Baileys rc14 socket pointed at a sandbox: an in-memory auth
 * state persisted as one JSON file (like an engine's database row, so a "client restart" can reload it),
 * an event recorder with `waitFor`, and a log capture so tests can assert that no IQ ever timed out.
 */
import makeWASocket, {
  Browsers,
  BufferJSON,
  WA_CERT_DETAILS,
  initAuthCreds,
  makeCacheableSignalKeyStore,
  proto,
  type AuthenticationCreds,
  type AuthenticationState,
  type BaileysEventMap,
  type SignalDataSet,
  type SignalDataTypeMap,
  type SignalKeyStore,
  type WASocket,
} from '@whiskeysockets/baileys';
import { pino } from 'pino';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { vi } from 'vitest';

type KeyMap = Record<string, Record<string, unknown>>;

/** A Baileys SignalKeyStore over a plain in-memory map (`keys[type][id]`), app-state keys re-hydrated on read. */
export function memoryKeyStore(keys: KeyMap): SignalKeyStore {
  return {
    async get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
      const out: { [id: string]: SignalDataTypeMap[T] } = {};
      for (const id of ids) {
        let value = keys[type]?.[id];
        if (value === undefined) continue;
        if (type === 'app-state-sync-key') value = proto.Message.AppStateSyncKeyData.fromObject(value as object);
        out[id] = value as SignalDataTypeMap[T];
      }
      return out;
    },
    async set(data: SignalDataSet) {
      for (const [type, entries] of Object.entries(data)) {
        const bucket = (keys[type] ??= {});
        for (const [id, value] of Object.entries(entries ?? {})) {
          if (value === null || value === undefined) delete bucket[id];
          else bucket[id] = value;
        }
      }
    },
  };
}

/** Auth state kept in memory and written to `file` (BufferJSON) by `save()`. */
function jsonFileAuthState(file: string): { state: AuthenticationState; save: () => Promise<void> } {
  const loaded = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8'), BufferJSON.reviver) as { creds: AuthenticationCreds; keys: KeyMap })
    : { creds: initAuthCreds(), keys: {} as KeyMap };
  const { creds, keys } = loaded;
  const state: AuthenticationState = {
    creds,
    keys: memoryKeyStore(keys),
  };
  return {
    state,
    save: async () => writeFileSync(file, JSON.stringify({ creds, keys }, BufferJSON.replacer)),
  };
}

type EventName = keyof BaileysEventMap;

export interface RecordedEvent<E extends EventName = EventName> {
  name: E;
  data: BaileysEventMap[E];
  at: number;
}

const RECORDED: EventName[] = [
  'connection.update',
  'creds.update',
  'messaging-history.set',
  'messages.upsert',
  'messages.update',
  'contacts.update',
  'messages.reaction',
  'presence.update',
  'groups.update',
  'groups.upsert',
  'group-participants.update',
  'chats.upsert',
  'message-receipt.update',
];

export interface TestClient {
  sock: WASocket;
  events: RecordedEvent[];
  /** Warn/error log lines Baileys wrote. */
  logs: string[];
  /** Resolve with the first recorded (past or future) event `name` whose data matches. */
  waitFor<E extends EventName>(
    name: E,
    match: (data: BaileysEventMap[E]) => boolean,
    timeoutMs?: number,
  ): Promise<BaileysEventMap[E]>;
  /** Resolve with the status code of the connection's close. */
  closed: Promise<number | undefined>;
  saveCreds(): Promise<void>;
  end(): Promise<void>;
}

/** Connect a Baileys client to `wsUrl` with auth stored in `authFile` (created/reused). */
export async function connectClient(
  wsUrl: string,
  rootPublicKey: Buffer<ArrayBuffer>,
  authFile: string,
  extra: Partial<Parameters<typeof makeWASocket>[0]> = {},
): Promise<TestClient> {
  WA_CERT_DETAILS.PUBLIC_KEY = rootPublicKey;
  const { state, save: saveCreds } = jsonFileAuthState(authFile);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const logger = pino({ level: 'warn' }, sink);
  const sock = makeWASocket({
    waWebSocketUrl: wsUrl,
    auth: { creds: state.creds, keys: makeCacheableSignalKeyStore(state.keys, logger) },
    logger,
    browser: Browsers.macOS('Chrome'),
    connectTimeoutMs: 5_000,
    defaultQueryTimeoutMs: 10_000,
    ...extra,
  });
  sock.ev.on('creds.update', () => void saveCreds());

  const events: RecordedEvent[] = [];
  const waiters = new Set<() => void>();
  for (const name of RECORDED) {
    sock.ev.on(name, (data: BaileysEventMap[typeof name]) => {
      events.push({ name, data, at: Date.now() } as RecordedEvent);
      for (const w of waiters) w();
    });
  }

  const waitFor = <E extends EventName>(name: E, match: (data: BaileysEventMap[E]) => boolean, timeoutMs = 10_000) =>
    new Promise<BaileysEventMap[E]>((resolve, reject) => {
      const check = (): boolean => {
        const hit = events.find((e) => e.name === name && match(e.data as BaileysEventMap[E]));
        if (!hit) return false;
        cleanup();
        resolve(hit.data as BaileysEventMap[E]);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${name}; logs:\n${logs.join('')}`));
      }, timeoutMs).unref();
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      if (!check()) waiters.add(check);
    });

  const closed = new Promise<number | undefined>((resolve) => {
    sock.ev.on('connection.update', (u) => {
      if (u.connection === 'close') {
        resolve((u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode);
      }
    });
  });

  return {
    sock,
    events,
    logs,
    waitFor,
    closed,
    saveCreds,
    async end() {
      sock.end(undefined);
      await closed;
      await saveCreds();
    },
  };
}

/**
 * libsignal (used by both Baileys and the sandbox phones) dumps whole sessions to the console when it closes one —
 * cosmetic (brief D16). Call at the top of a test file to keep its output readable.
 */
export function muteLibsignalNoise(): void {
  const noise = /^(Closing session|Closing open session in favor of incoming prekey bundle|Decrypted message with closed session)/;
  for (const level of ['info', 'warn'] as const) {
    const original = console[level].bind(console);
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      if (typeof args[0] === 'string' && noise.test(args[0])) return;
      original(...args);
    });
  }
}

/** Polls `get` every 50 ms until it returns something other than undefined; errors propagate at once. */
export async function poll<T>(get: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
