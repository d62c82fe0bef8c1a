/**
 * A session worker thread (`serve --workers N`, docs/scaling.md): runs the engine (engine/engine.ts) with its own
 * connection to the same SQLite file for the connections the main thread assigns to it, and answers the main
 * thread's engine calls (engine/thread-engine.ts, protocol in engine/worker-protocol.ts).
 *
 * The durability rules are the in-process engine's, unchanged, because they are the same code: this thread's store
 * group-commits (BEGIN IMMEDIATE on the WAL; other threads wait for the write lock), receipts leave only after the
 * commit holding their message is on disk (engine/commit-before-receipt.ts), and events get their gap-free per-user `seq`
 * from `users.last_event_seq` inside the committing transaction. What the store would publish on its in-process bus
 * (after the commit is synced) is posted to the main thread instead, which publishes it there in `seq` order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { LoggedEvent } from './db/events.ts';
import type { TransactionObserver } from './db/store.ts';
import { WriteLock } from './db/write-lock.ts';
import { installConsoleFilter, setConsoleFilterLogger } from './config/console-filter.ts';
import { pino } from 'pino';
import { openDataPlane } from './data-plane.ts';
import { OutboundPolicy } from './net/outbound.ts';
import { createEngine } from './engine/engine.ts';
import type { Engine } from './engine/types.ts';
import { RpcClient, serveRpc, serializeError, type RpcHandlers, type RpcRequest, type SerializedError } from './engine/rpc.ts';
import type { FromWorker, MainRpc, SessionRpc, SessionState, SessionWorkerData, ToWorker } from './engine/worker-protocol.ts';

const data = workerData as SessionWorkerData;
const port = parentPort!;
const post = (m: FromWorker) => port.postMessage(m);

/** How long a call to the main thread (MainRpc.resolve) may take, in ms. */
const RESOLVE_TIMEOUT_MS = 30_000;
/** How often this thread's heartbeat moves while its event loop turns (the main thread's watchdog reads it), in ms. */
const HEARTBEAT_MS = 250;
const heartbeat = new Int32Array(data.heartbeat);
const beating = setInterval(() => Atomics.add(heartbeat, 0, 1), HEARTBEAT_MS);
beating.unref();

// Log records go to the main thread's logger (one output, its format, and whatever an embedder injected).
const logger = pino({ level: data.logLevel }, { write: (line: string) => post({ type: 'log', line }) }).child({ thread: data.thread });
// libsignal prints session records (private keys) through console, here as on the main thread: never to stdout.
installConsoleFilter();
setConsoleFilterLogger(logger);
// This thread's store, event log and webhook outbox (the outbox writes the events' rows in their transactions, as on
// the main thread; cached webhooks follow the main thread's changes by the database's counter: docs/architecture.md §
// Data plane). The main thread's checkpoint worker copies the WAL; this connection does not checkpoint in its commits.
const { store, events, outbox } = openDataPlane({
  dataDir: data.dataDir,
  role: 'session-thread',
  writeLock: new WriteLock(data.writeLock),
  onSyncError: (err) => logger.error({ err }, 'fsync of the database WAL failed; synced again on the worker thread'),
});
const room = new Int32Array(data.storageRoom);
const clockOffset = data.clockOffset ? new Float64Array(data.clockOffset) : undefined;
// The main thread's calls (MainRpc): an embedder's resolver (StartOptions.resolve) runs there, when there is one.
const main = new RpcClient<MainRpc>({
  post: (request) => post({ type: 'call', request }),
  defaultTimeoutMs: RESOLVE_TIMEOUT_MS,
  timeoutError: (method, ms) => Object.assign(new Error(`${method} on the main thread did not answer within ${ms} ms`), { code: 'ETIMEOUT' }),
  errorOf: (e: SerializedError) => Object.assign(new Error(e.message), e.code ? { code: e.code } : {}),
});
const resolveOnMain = (hostname: string) => main.call('resolve', [hostname]);
const policy = new OutboundPolicy({
  ...(data.resolveOnMain && { resolve: resolveOnMain }),
  allowLan: false,
  allowLoopbackWebhooks: data.outbound.allowLoopbackWebhooks,
  allowLanSetting: () => Atomics.load(room, 1) === 1,
});
// The dispatcher runs on the main thread: rows are written `pending` (no claim at insert) and it is woken to claim them.
const wakeMain = () => post({ type: 'outbox' });
outbox.attach({ leaseMs: 0, reserve: () => false, committed: () => undefined, abandoned: () => undefined, backlog: wakeMain, wake: wakeMain, deleted: () => undefined });
const engine: Engine = createEngine({
  store,
  events,
  logger,
  workerId: data.workerId,
  mediaDir: data.mediaDir,
  outbound: policy,
  storageHasRoom: () => Atomics.load(room, 0) === 1,
  ...(clockOffset && { now: () => Date.now() + clockOffset[0]! }),
  ...(data.waUrl && { waUrl: data.waUrl }),
  ...(data.waRootPublicKey && { waRootPublicKey: Buffer.from(data.waRootPublicKey) }),
  ...(data.waCaCertPem && { waCaCertPem: data.waCaCertPem }),
  ...(data.typingDelayMs && { typingDelayMs: data.typingDelayMs }),
  ...(data.serverAckTimeoutMs !== undefined && { serverAckTimeoutMs: data.serverAckTimeoutMs }),
  ...(data.urlFetchTls && { urlFetchTls: data.urlFetchTls }),
  ...(data.urlFetchTimeoutMs !== undefined && { urlFetchTimeoutMs: data.urlFetchTimeoutMs }),
  ...(data.connectTimeoutMs !== undefined && { connectTimeoutMs: data.connectTimeoutMs }),
  ...(data.downloadStatusMedia && { downloadStatusMedia: true }),
  ...(data.onlineFallbackMs !== undefined && { onlineFallbackMs: data.onlineFallbackMs }),
});

/** Connections this thread runs, with the state last reported for each. */
const mine = new Map<string, string>();

function stateOf(connectionId: string): SessionState | null {
  const live = engine.liveStatus(connectionId);
  if (!live) return null;
  return { status: live.status, reason: live.reason, qr: engine.currentQr(connectionId) };
}

/** The states of `ids` that changed since last reported (all of them when `force`). */
function statesOf(ids: Iterable<string>, force = false): Record<string, SessionState | null> {
  const out: Record<string, SessionState | null> = {};
  for (const id of ids) {
    const state = stateOf(id);
    const key = JSON.stringify(state);
    if (!force && mine.get(id) === key) continue;
    if (state) mine.set(id, key);
    else mine.delete(id);
    out[id] = state;
  }
  return out;
}

// Committed events go to the main thread (in commit order, once on disk), which publishes them (EventLog.publishCommitted).
let appended: Array<[string, LoggedEvent]> = [];
events.onAppend((userId, event) => void appended.push([userId, event]));
const forwarding: TransactionObserver<number> = {
  mark: () => appended.length,
  rolledBack: (mark) => {
    appended.length = mark;
  },
  committed: () => {
    if (appended.length === 0) return undefined;
    const batch = appended;
    appended = [];
    return () => {
      const ids = new Set<string>();
      // Status changes ride with their events, so a client that saw `session.status` reads the same status.
      for (const [, e] of batch) if (e.connectionId && mine.has(e.connectionId)) ids.add(e.connectionId);
      post({ type: 'events', events: batch, states: statesOf(ids), storageDown: engine.storageUnavailable() });
    };
  },
};
store.observeTransactions(forwarding);

// States that change without an event (a QR ref rotating, a pairing socket) are reported within STATE_POLL_MS.
const STATE_POLL_MS = 200;
let lastStorageDown = false;
const poll = setInterval(() => {
  const states = statesOf(mine.keys());
  const storageDown = engine.storageUnavailable();
  if (Object.keys(states).length > 0 || storageDown !== lastStorageDown) post({ type: 'events', events: [], states, storageDown });
  lastStorageDown = storageDown;
}, STATE_POLL_MS);

port.on('message', (m: ToWorker) => {
  switch (m.type) {
    case 'start':
      try {
        mine.set(m.connectionId, '');
        engine.start(m.connectionId);
      } catch (err) {
        mine.delete(m.connectionId);
        post({ type: 'startFailed', connectionId: m.connectionId, error: serializeError(err) });
      }
      post({ type: 'events', events: [], states: statesOf([m.connectionId], true), storageDown: engine.storageUnavailable() });
      return;
    case 'config':
      if (m.ownPort !== undefined) policy.ownPort = m.ownPort;
      if (m.mediaBase !== undefined) store.mediaUrls.setBase(m.mediaBase);
      return;
    case 'call':
      void call(m.request);
      return;
    case 'close':
      void close();
      return;
    case 'testHoldWriteLock':
      if (data.testHooks === true) testHoldWriteLock(m.ms);
      return;
    case 'answer':
      main.settle(m.reply);
      return;
  }
});

/** The calls this thread answers (SessionRpc): the engine's own (tsc checks that it answers each). */
const handlers: RpcHandlers<SessionRpc> = engine;

/** Answers one call of the main thread, with the state of its connection. */
async function call(request: RpcRequest<SessionRpc>): Promise<void> {
  const connectionId = request.params[0];
  const reply = await serveRpc(handlers, request);
  if (reply.ok) {
    // Whatever the call wrote is on disk before the main thread answers the request (as store.durable() there).
    await store.durable();
    if (request.method === 'stop') mine.delete(connectionId);
  }
  post({ type: 'reply', reply, states: statesOf([connectionId], true), storageDown: engine.storageUnavailable() });
}

/**
 * Test only (SessionWorkerData.testHooks): a transaction that holds the threads' write lock and SQLite's for `ms`
 * with this thread's event loop stopped, as a long history chunk or a hung thread would.
 */
function testHoldWriteLock(ms: number): void {
  store.tx(() => {
    post({ type: 'testHolding' });
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  });
}

async function close(): Promise<void> {
  clearInterval(poll);
  try {
    await engine.close();
  } catch (err) {
    logger.error({ err }, 'closing the sessions of a worker thread failed');
  }
  store.close();
  clearInterval(beating);
  post({ type: 'closed' });
  port.close();
}

post({ type: 'ready' });
