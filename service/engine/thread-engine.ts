/**
 * The engine with its sessions on worker threads (`serve --workers N`, N ≥ 1; docs/scaling.md). Implements the
 * same `Engine` as engine.ts, so the HTTP layer does not know where a session runs.
 *
 * - A pool of N session worker threads (service/session-worker.ts), each with its own engine and its own connection to the
 *   SQLite file. A connection is assigned to the thread running the fewest when it starts, and moves to the least
 *   busy thread on `restart`.
 * - Calls for an assigned connection are posted to its thread and answered from there (errors keep their status
 *   code). Calls for a connection no thread runs go to a local engine without sessions, which answers exactly as
 *   the in-process engine does for a connection that is not running (409 not online, media already on disk…).
 * - The synchronous getters (`liveStatus`, `currentQr`, `storageUnavailable`) read the state the threads
 *   report with every batch of events, every reply, and at least every 200 ms when it changed.
 * - Committed events come from the threads after their commit is synced; they are published on the main thread's
 *   bus in per-user `seq` order (a gap — an event of another thread whose message is still on its way — is read
 *   from the log, which already holds it, since writers commit one at a time in `seq` order).
 * - A thread that dies (an uncaught error, a native crash of its isolate, `terminate`): its calls in flight fail
 *   with 502, a new thread takes its place, and its connections start again on the pool. What they had accepted
 *   is in SQLite already: receipts leave only after the commit (commit-before-receipt.ts), and whatever was not
 *   committed was not acknowledged, so the server delivers it again — the same as after `kill -9`.
 */
import { Worker } from 'node:worker_threads';
import { WriteLock } from '../db/write-lock.ts';
import type { Resolver } from '../net/outbound.ts';
import { notFound, OutcomeUnknownError, ServiceError } from '../errors.ts';
import { createEngine, startActive } from './engine.ts';
import type { Engine, EngineOptions } from './types.ts';
import type { FromWorker, SerializedError, SessionState, SessionWorkerData, ToWorker } from './worker-protocol.ts';

export interface ThreadEngineOptions extends EngineOptions {
  /** Number of session threads (≥ 1). */
  workers: number;
  /** The threads' shared write lock (db/write-lock.ts), also given to the main thread's store. */
  writeLock: SharedArrayBuffer;
  dataDir: string;
  /** The outbound policy's fixed switch, rebuilt in each thread (a custom resolver stays on the main thread). */
  outboundFlags: { allowLoopbackWebhooks: boolean };
  /** An embedder's name resolution for outbound URLs (tests); the threads ask the main thread to run it. */
  resolve?: Resolver;
  /** The operator's LAN switch (settings), read here and shared with the threads. */
  allowLanWebhooks: () => boolean;
  /** Called when a thread's commit wrote `pending` webhook outbox rows (the dispatcher's wake-up). */
  onOutbox?: () => void;
}

/** The pool as operators and tests see it. */
export interface SessionThreads {
  /** One entry per slot: its thread id and the connections it runs. */
  threads(): Array<{ index: number; threadId: number; connections: string[] }>;
  /** Whether the session thread `threadId` has stopped (or is none of the pool's): its write lock is void. */
  isGone(threadId: number): boolean;
  /** Stops the thread of slot `index` abruptly (as a crash would); resolves once it is gone. */
  kill(index: number): Promise<void>;
  /**
   * Tells the threads what the main thread learns once the API listens: its port (a send `url` must not point at
   * the service itself) and the public base URL Messages' `media.url` is built from.
   */
  configure(c: { ownPort?: number; mediaBase?: string }): void;
}

/** Runs in each new thread: loads the worker module (through tsx when running from the TypeScript sources). */
const BOOT = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.entry.endsWith('.ts')) (await import('tsx/esm/api')).register();
  await import(workerData.entry);
})().catch((err) => setImmediate(() => { throw err; }));
`;

/** pino's level numbers. */
const LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** How often the main thread tells the threads whether the data dir has room (storageHasRoom). */
const ROOM_POLL_MS = 500;
/** Engine methods the pool handles itself; every other method is routed by its first argument, the connection id. */
const OWN = new Set(['start', 'startAll', 'restart', 'stop', 'liveStatus', 'storageUnavailable', 'currentQr', 'close', 'session']);

interface Slot {
  index: number;
  worker: Worker;
  /** The worker's threadId (`worker.threadId` reads -1 once it stopped). */
  threadId: number;
  connections: Set<string>;
  calls: Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;
  storageDown: boolean;
  /** Whether its module loaded (a thread that dies before is not a crash to recover from at once). */
  ready: boolean;
}

function serializeError(err: unknown): SerializedError {
  const e = err as { message?: unknown; name?: unknown; code?: unknown } | null;
  return {
    message: typeof e?.message === 'string' ? e.message : String(err),
    name: typeof e?.name === 'string' ? e.name : 'Error',
    ...(typeof e?.code === 'string' && { code: e.code }),
  };
}

function errorOf(e: SerializedError): Error {
  if (e.statusCode !== undefined) return new ServiceError(e.statusCode, e.message);
  const err = new Error(e.message) as Error & { code?: string };
  err.name = e.name;
  if (e.code) err.code = e.code;
  return err;
}

export function createThreadEngine(opts: ThreadEngineOptions): Engine & { threads: SessionThreads } {
  const { store, logger } = opts;
  const log = logger.child({ component: 'engine' });
  /** Answers for connections no thread runs (see above); it never starts a session. */
  const local = createEngine(opts);
  const room = new SharedArrayBuffer(8);
  const roomFlag = new Int32Array(room);
  const updateRoom = () => {
    Atomics.store(roomFlag, 0, opts.storageHasRoom?.() === false ? 0 : 1);
    Atomics.store(roomFlag, 1, opts.allowLanWebhooks() ? 1 : 0);
  };
  updateRoom();
  const roomTimer = setInterval(updateRoom, ROOM_POLL_MS);
  roomTimer.unref();
  // An injected clock (tests, embedders) reaches the threads as an offset from Date.now(), refreshed before each call.
  const clock = opts.now ? new SharedArrayBuffer(8) : undefined;
  const clockOffset = clock ? new Float64Array(clock) : undefined;
  const syncClock = () => {
    if (clockOffset && opts.now) clockOffset[0] = opts.now() - Date.now();
  };
  syncClock();
  // The thread's composition root sits beside service/index.ts (it wires the store, the event log and the outbox).
  const entry = new URL(`../session-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;
  const baseData: Omit<SessionWorkerData, 'thread'> = {
    entry,
    dataDir: opts.dataDir,
    mediaDir: opts.mediaDir,
    workerId: opts.workerId,
    logLevel: logger.level,
    ...(opts.waUrl && { waUrl: opts.waUrl }),
    ...(opts.waRootPublicKey && { waRootPublicKey: new Uint8Array(opts.waRootPublicKey) }),
    ...(opts.waCaCertPem && { waCaCertPem: opts.waCaCertPem }),
    ...(opts.typingDelayMs && { typingDelayMs: opts.typingDelayMs }),
    ...(opts.serverAckTimeoutMs !== undefined && { serverAckTimeoutMs: opts.serverAckTimeoutMs }),
    ...(opts.urlFetchTls && { urlFetchTls: opts.urlFetchTls as Record<string, unknown> }),
    ...(opts.urlFetchTimeoutMs !== undefined && { urlFetchTimeoutMs: opts.urlFetchTimeoutMs }),
    ...(opts.connectTimeoutMs !== undefined && { connectTimeoutMs: opts.connectTimeoutMs }),
    ...(opts.downloadStatusMedia && { downloadStatusMedia: true }),
    ...(opts.onlineFallbackMs !== undefined && { onlineFallbackMs: opts.onlineFallbackMs }),
    outbound: opts.outboundFlags,
    storageRoom: room,
    writeLock: opts.writeLock,
    ...(opts.resolve && { resolveOnMain: true }),
    ...(clock && { clockOffset: clock }),
  };

  // ---- events in seq order (events/log.ts orderAcrossWriters) --------------------------------------------
  const lastSeqs = new Map<string, number>();
  for (const user of store.users.list()) lastSeqs.set(user.id, store.events.lastSeq(user.id));
  opts.events.orderAcrossWriters(lastSeqs);

  /** Writes a thread's log record through the main logger, at its level. */
  function relayLog(line: string): void {
    try {
      const fields = JSON.parse(line) as Record<string, unknown>;
      const { level, msg } = fields;
      // The main logger adds its own time, pid and hostname.
      for (const k of ['level', 'msg', 'time', 'pid', 'hostname']) delete fields[k];
      const name = LEVELS[level as number] ?? 'info';
      logger[name](fields, typeof msg === 'string' ? msg : '');
    } catch {
      // not JSON: cannot happen with pino; dropped rather than breaking the pool
    }
  }

  // ---- the pool -------------------------------------------------------------------------------------------
  const slots: Slot[] = [];
  const assigned = new Map<string, Slot>();
  const states = new Map<string, SessionState>();
  let nextCall = 1;
  let closing = false;
  /** What `configure` was told, sent again to threads that replace a dead one. */
  const shared: { ownPort?: number; mediaBase?: string } = { mediaBase: store.mediaUrls.base };

  /** States reported by `slot`, for the connections it still runs (a late report of a moved one is ignored). */
  const applyStates = (slot: Slot, s: Record<string, SessionState | null>) => {
    for (const [id, state] of Object.entries(s)) {
      if (assigned.get(id) !== slot) continue;
      if (state) states.set(id, state);
      else states.delete(id);
    }
  };

  function spawn(index: number): Slot {
    const worker = new Worker(BOOT, { eval: true, workerData: { ...baseData, thread: index }, name: `session-worker-${index}` });
    const slot: Slot = { index, worker, threadId: worker.threadId, connections: new Set(), calls: new Map(), storageDown: false, ready: false };
    worker.postMessage({ type: 'config', ...shared } satisfies ToWorker);
    worker.on('message', (m: FromWorker) => {
      switch (m.type) {
        case 'ready':
          slot.ready = true;
          return;
        case 'reply': {
          applyStates(slot, m.states);
          slot.storageDown = m.storageDown;
          const call = slot.calls.get(m.id);
          slot.calls.delete(m.id);
          if (m.ok) call?.resolve(m.value);
          else call?.reject(errorOf(m.error));
          return;
        }
        case 'events':
          applyStates(slot, m.states);
          slot.storageDown = m.storageDown;
          for (const [userId, event] of m.events) opts.events.publishCommitted(userId, event);
          return;
        case 'outbox':
          opts.onOutbox?.();
          return;
        case 'log':
          relayLog(m.line);
          return;
        case 'resolve':
          opts.resolve!(m.hostname).then(
            (addresses) => worker.postMessage({ type: 'resolved', id: m.id, addresses: addresses.map((a) => ({ address: a.address, family: a.family })) } satisfies ToWorker),
            (err: unknown) => worker.postMessage({ type: 'resolved', id: m.id, error: serializeError(err) } satisfies ToWorker),
          );
          return;
        case 'startFailed':
          log.error({ connectionId: m.connectionId, err: errorOf(m.error), thread: index }, 'failed to start session');
          if (assigned.get(m.connectionId) === slot) assigned.delete(m.connectionId);
          slot.connections.delete(m.connectionId);
          return;
        default:
          return;
      }
    });
    worker.on('error', (err) => log.error({ err, thread: index }, 'session worker thread failed'));
    worker.on('exit', (code) => onExit(slot, code));
    return slot;
  }

  function onExit(slot: Slot, code: number): void {
    // A thread that died inside a transaction: SQLite rolled it back when the thread's connection closed.
    if (WriteLock.releaseHeldBy(opts.writeLock, slot.threadId)) log.warn({ thread: slot.index }, 'released the write lock of an exited session thread');
    for (const call of slot.calls.values()) {
      call.reject(new OutcomeUnknownError("The connection's session thread stopped during the request; its outcome is unknown"));
    }
    slot.calls.clear();
    if (closing || slots[slot.index] !== slot) return;
    const moved = [...slot.connections];
    log.error({ thread: slot.index, code, connections: moved.length }, 'session worker thread exited; restarting its connections on the pool');
    for (const id of moved) {
      assigned.delete(id);
      states.delete(id);
    }
    if (!slot.ready) {
      // It could not even load (a broken install): retry later instead of in a tight loop; the pool keeps working.
      log.error({ thread: slot.index }, 'session worker thread failed to load; retrying in 5 s');
      const retry = setTimeout(() => {
        if (!closing && slots[slot.index] === slot) slots[slot.index] = spawn(slot.index);
      }, 5_000);
      retry.unref();
      const others = slots.filter((s) => s !== slot);
      if (others.length === 0) return;
      for (const id of moved) {
        const to = others.reduce((a, b) => (b.connections.size < a.connections.size ? b : a));
        assigned.set(id, to);
        to.connections.add(id);
        send(to, { type: 'start', connectionId: id });
      }
      slot.connections.clear();
      return;
    }
    slots[slot.index] = spawn(slot.index);
    for (const id of moved) {
      try {
        start(id);
      } catch (err) {
        log.error({ err, connectionId: id }, 'failed to restart session after its thread exited');
      }
    }
  }

  const send = (slot: Slot, m: ToWorker) => slot.worker.postMessage(m);

  function call<T>(slot: Slot, method: string, args: unknown[]): Promise<T> {
    const id = nextCall++;
    return new Promise<T>((resolve, reject) => {
      slot.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      syncClock();
      updateRoom();
      send(slot, { type: 'call', id, method, args });
    });
  }

  const leastBusy = () => slots.reduce((a, b) => (b.connections.size < a.connections.size ? b : a));

  function start(connectionId: string): void {
    const conn = store.connections.get(connectionId);
    if (!conn || conn.status === 'stopped') throw notFound('Connection not found');
    if (assigned.has(connectionId)) return;
    const slot = leastBusy();
    assigned.set(connectionId, slot);
    slot.connections.add(connectionId);
    // As the in-process engine, which is `starting` as soon as start() returns; the thread reports the rest.
    states.set(connectionId, { status: 'starting', reason: null, qr: undefined });
    send(slot, { type: 'start', connectionId });
  }

  async function stop(connectionId: string, o: { logout?: boolean } = {}): Promise<void> {
    const slot = assigned.get(connectionId);
    if (!slot) return local.stop(connectionId, o);
    assigned.delete(connectionId);
    try {
      await call(slot, 'stop', [connectionId, o]);
    } finally {
      slot.connections.delete(connectionId);
      states.delete(connectionId);
    }
  }

  for (let i = 0; i < Math.max(1, opts.workers); i++) slots.push(spawn(i));

  const routed: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(local)) {
    if (OWN.has(name) || typeof fn !== 'function') continue;
    routed[name] = (connectionId: string, ...rest: unknown[]) => {
      const slot = assigned.get(connectionId);
      return slot ? call(slot, name, [connectionId, ...rest]) : (fn as (...a: unknown[]) => unknown)(connectionId, ...rest);
    };
  }

  const engine: Engine = {
    ...(routed as unknown as Engine),
    start,
    startAll() {
      startActive(store, start, log);
    },
    async restart(connectionId) {
      // Stopped where it ran, started on the least busy thread.
      await stop(connectionId);
      start(connectionId);
    },
    stop,
    liveStatus(connectionId) {
      const s = assigned.has(connectionId) ? states.get(connectionId) : undefined;
      return s ? { status: s.status, reason: s.reason } : undefined;
    },
    storageUnavailable: () => local.storageUnavailable() || slots.some((s) => s.storageDown),
    currentQr: (connectionId) => (assigned.has(connectionId) ? states.get(connectionId)?.qr : undefined),
    async close() {
      closing = true;
      clearInterval(roomTimer);
      await Promise.all(
        slots.map(
          (slot) =>
            new Promise<void>((resolve) => {
              slot.worker.once('exit', () => resolve());
              slot.worker.on('message', (m: FromWorker) => {
                if (m.type === 'closed') void slot.worker.terminate();
              });
              send(slot, { type: 'close' });
            }),
        ),
      );
      assigned.clear();
      states.clear();
      await local.close();
    },
  };
  const threads: SessionThreads = {
    threads: () => slots.map((s) => ({ index: s.index, threadId: s.threadId, connections: [...s.connections] })),
    isGone: (threadId) => !slots.some((s) => s.threadId === threadId && s.worker.threadId !== -1),
    async kill(index) {
      const slot = slots[index];
      if (!slot) throw new Error(`no session thread ${index}`);
      await slot.worker.terminate();
    },
    configure(c) {
      Object.assign(shared, c);
      for (const slot of slots) send(slot, { type: 'config', ...c });
    },
  };
  return Object.assign(engine, { threads });
}
