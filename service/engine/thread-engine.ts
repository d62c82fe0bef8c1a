/**
 * The engine with its sessions on worker threads (`serve --workers N`, N ≥ 1; docs/scaling.md). Implements the
 * same `Engine` as engine.ts, so the HTTP layer does not know where a session runs.
 *
 * - A pool of N session worker threads (service/session-worker.ts), each with its own engine and its own connection to the
 *   SQLite file. A connection is assigned to the thread running the fewest when it starts, and moves to the least
 *   busy thread on `restart`.
 * - Calls for an assigned connection are posted to its thread and answered from there (errors keep their status
 *   code): typed calls of SessionRpc (worker-protocol.ts, rpc.ts), each with a deadline (`callTimeoutMs`; past it
 *   the call fails with 502, outcome unknown). Calls for a connection no thread runs go to a local engine without
 *   sessions, which answers exactly as the in-process engine does for a connection that is not running (409 not
 *   online, media already on disk…).
 * - A watchdog stops a thread that holds the write lock while its heartbeat is silent (docs/architecture.md
 *   § Threads and the write lock); it then recovers as a thread that died.
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
import { RpcClient, serveRpc, type RpcHandlers, type RpcParams, type RpcResult, type SerializedError } from './rpc.ts';
import { SESSION_RPC_METHODS, type FromWorker, type MainRpc, type SessionRpc, type SessionState, type SessionWorkerData, type ToWorker } from './worker-protocol.ts';

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
  /** Enables SessionThreads.testHoldWriteLock (tests only; `serve` never sets it). */
  testHooks?: boolean;
  /**
   * How long a call to a session thread may take before it fails with 502 (outcome unknown), in ms (CALL_TIMEOUT_MS):
   * longer than the slowest call (a send whose `url` is fetched, then uploaded and acknowledged).
   */
  callTimeoutMs?: number;
  /** The watchdog's bounds (WATCHDOG_CHECK_MS, WATCHDOG_STALL_MS; see `watchdog` below). */
  watchdog?: { checkMs?: number; stallMs?: number };
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
  /**
   * Test only (ThreadEngineOptions.testHooks): the thread of slot `index` holds the write lock in a transaction for
   * `ms` with its event loop stopped; resolves once it holds it. @throws without testHooks
   */
  testHoldWriteLock(index: number, ms: number): Promise<void>;
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
/** Default deadline of a call to a session thread (ThreadEngineOptions.callTimeoutMs). */
const CALL_TIMEOUT_MS = 180_000;
/** How often the main thread's watchdog looks at the write lock and the threads' heartbeats. */
const WATCHDOG_CHECK_MS = 1_000;
/** A thread holding the write lock whose heartbeat has not moved for this long is stopped (and replaced). */
const WATCHDOG_STALL_MS = 5_000;

interface Slot {
  index: number;
  worker: Worker;
  /** The worker's threadId (`worker.threadId` reads -1 once it stopped). */
  threadId: number;
  connections: Set<string>;
  /** Its calls (SessionRpc), each with a deadline. */
  rpc: RpcClient<SessionRpc>;
  /** Int32Array: [0] is bumped by the thread every HEARTBEAT_MS (session-worker.ts) while its event loop turns. */
  heartbeat: Int32Array;
  /** The heartbeat's value when the watchdog last saw it move, and when (performance.now()). */
  lastBeat: number;
  lastBeatAt: number;
  /** Set once the watchdog stopped it. */
  stopped: boolean;
  storageDown: boolean;
  /** Whether its module loaded (a thread that dies before is not a crash to recover from at once). */
  ready: boolean;
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
  /** The same calls on the local engine (tsc checks that it answers each of SessionRpc). */
  const localCalls: RpcHandlers<SessionRpc> = local;
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
  const baseData: Omit<SessionWorkerData, 'thread' | 'heartbeat'> = {
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
    ...(opts.testHooks && { testHooks: true }),
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
  let closing = false;
  const callTimeoutMs = opts.callTimeoutMs ?? CALL_TIMEOUT_MS;
  /** What the main thread answers to the threads' calls (MainRpc). */
  const mainHandlers: RpcHandlers<MainRpc> = {
    async resolve(hostname) {
      if (!opts.resolve) throw new Error('no resolver on the main thread');
      const addresses = await opts.resolve(hostname);
      return addresses.map((a) => ({ address: a.address, family: a.family }));
    },
  };
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
    const heartbeat = new SharedArrayBuffer(4);
    const data: SessionWorkerData = { ...baseData, thread: index, heartbeat };
    const worker = new Worker(BOOT, { eval: true, workerData: data, name: `session-worker-${index}` });
    const rpc = new RpcClient<SessionRpc>({
      post: (request) => worker.postMessage({ type: 'call', request } satisfies ToWorker),
      defaultTimeoutMs: callTimeoutMs,
      timeoutError: (method, ms) =>
        new OutcomeUnknownError(`The connection's session thread did not answer ${method} within ${Math.round(ms / 1000)} s; its outcome is unknown`),
      errorOf,
    });
    const slot: Slot = {
      index,
      worker,
      threadId: worker.threadId,
      connections: new Set(),
      rpc,
      heartbeat: new Int32Array(heartbeat),
      lastBeat: 0,
      lastBeatAt: performance.now(),
      stopped: false,
      storageDown: false,
      ready: false,
    };
    worker.postMessage({ type: 'config', ...shared } satisfies ToWorker);
    worker.on('message', (m: FromWorker) => {
      switch (m.type) {
        case 'ready':
          slot.ready = true;
          return;
        case 'reply': {
          applyStates(slot, m.states);
          slot.storageDown = m.storageDown;
          slot.rpc.settle(m.reply);
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
        case 'call':
          void serveRpc(mainHandlers, m.request).then((reply) => worker.postMessage({ type: 'answer', reply } satisfies ToWorker));
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
    slot.rpc.failAll(() => new OutcomeUnknownError("The connection's session thread stopped during the request; its outcome is unknown"));
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

  /** Calls `method` of SessionRpc on `slot`'s thread, with the call's deadline (callTimeoutMs). */
  function call<K extends keyof SessionRpc>(slot: Slot, method: K, params: RpcParams<SessionRpc, K>): Promise<RpcResult<SessionRpc, K>> {
    syncClock();
    updateRoom();
    return slot.rpc.call(method, params);
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

  // ---- the watchdog --------------------------------------------------------------------------------------
  // The lock word names its holder (write-lock.ts); a session thread whose heartbeat stopped while it holds the lock
  // would keep every writer waiting (the main thread's writes answer 503 meanwhile). It is stopped, which frees the
  // lock (onExit), and its connections start again on a new thread, as after a crash: what it had not committed was
  // not acknowledged (docs/architecture.md § Threads and the write lock).
  const stallMs = opts.watchdog?.stallMs ?? WATCHDOG_STALL_MS;
  const watchdog = setInterval(() => {
    if (closing) return;
    const now = performance.now();
    const holder = WriteLock.holderOf(opts.writeLock);
    for (const slot of slots) {
      const beat = Atomics.load(slot.heartbeat, 0);
      if (beat !== slot.lastBeat) {
        slot.lastBeat = beat;
        slot.lastBeatAt = now;
        continue;
      }
      const silentMs = now - slot.lastBeatAt;
      if (holder !== slot.threadId || slot.stopped || silentMs < stallMs) continue;
      slot.stopped = true;
      log.error(
        { thread: slot.index, threadId: slot.threadId, silentMs: Math.round(silentMs), connections: [...slot.connections] },
        'session thread stopped answering while holding the write lock; stopping it (its connections start again on the pool)',
      );
      void slot.worker.terminate();
    }
  }, opts.watchdog?.checkMs ?? WATCHDOG_CHECK_MS);
  watchdog.unref();

  /**
   * Engine method `name` of SessionRpc: posted to the thread that runs the connection (its first parameter), or
   * answered by the local engine when none does.
   */
  function routed<K extends keyof SessionRpc>(name: K): (...params: RpcParams<SessionRpc, K>) => Promise<RpcResult<SessionRpc, K>> {
    return (...params) => {
      const slot = assigned.get(params[0] as string);
      return slot ? call(slot, name, params) : Promise.resolve(localCalls[name](...params));
    };
  }
  const routedCalls = Object.fromEntries(SESSION_RPC_METHODS.map((name) => [name, routed(name)])) as unknown as SessionRpc;

  const engine: Engine = {
    ...routedCalls,
    onContactsUpdate: local.onContactsUpdate,
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
      clearInterval(watchdog);
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
    testHoldWriteLock(index, ms) {
      const slot = slots[index];
      if (!opts.testHooks || !slot) return Promise.reject(new Error('testHoldWriteLock needs ThreadEngineOptions.testHooks and a slot'));
      return new Promise<void>((resolve) => {
        const holding = (m: FromWorker) => {
          if (m.type !== 'testHolding') return;
          slot.worker.off('message', holding);
          resolve();
        };
        slot.worker.on('message', holding);
        send(slot, { type: 'testHoldWriteLock', ms });
      });
    },
  };
  return Object.assign(engine, { threads });
}
