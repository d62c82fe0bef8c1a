/**
 * Messages between the main thread's `ThreadEngine` (thread-engine.ts) and the session worker threads
 * (service/session-worker.ts). Everything here crosses `postMessage`, so it is structured-cloneable data only.
 * Calls (request and answer) are typed by `SessionRpc` and `MainRpc` through rpc.ts; the other messages are
 * notifications (a start, the configuration, committed events, log lines).
 */
import type { LoggedEvent } from '../db/events.ts';
import type { ConnectionStatus } from '../db/connections.ts';
import type { RpcReply, RpcRequest, SerializedError } from './rpc.ts';
import type { Engine } from './types.ts';

/** Engine calls the pool answers on the main thread (thread-engine.ts), or the in-process engine's own hook. */
type PoolOwn = 'start' | 'startAll' | 'restart' | 'liveStatus' | 'storageUnavailable' | 'currentQr' | 'close' | 'onContactsUpdate';

/**
 * The calls the main thread makes to a session thread (rpc.ts): each Engine call about one connection, the
 * connection id first, with the Engine's parameters and result (types.ts documents each).
 */
export type SessionRpc = Omit<Engine, PoolOwn>;

/** Every call of SessionRpc, each once (tsc refuses a missing or an unknown one). */
const SESSION_RPC_NAMES: Record<keyof SessionRpc, true> = {
  stop: true,
  remove: true,
  requestPairingCode: true,
  sendText: true,
  send: true,
  react: true,
  editMessage: true,
  markRead: true,
  setTyping: true,
  messageMedia: true,
  mediaFile: true,
  checkNumbers: true,
  listGroups: true,
  group: true,
  createGroup: true,
  updateGroup: true,
  updateParticipants: true,
  leaveGroup: true,
  groupInviteCode: true,
  revokeMessage: true,
  forward: true,
  sendSticker: true,
  postStatus: true,
  setBlocked: true,
  blocklist: true,
  rejectCall: true,
  contactProfile: true,
  ownProfile: true,
  updateOwnProfile: true,
  setOwnPicture: true,
};

/** The names of SessionRpc's calls: the pool routes each to the thread that runs the connection. */
export const SESSION_RPC_METHODS = Object.keys(SESSION_RPC_NAMES) as Array<keyof SessionRpc>;

/** The calls a session thread makes to the main thread (rpc.ts). */
export interface MainRpc {
  /** Resolves `hostname` with the embedder's resolver (SessionWorkerData.resolveOnMain). */
  resolve(hostname: string): Promise<Array<{ address: string; family: number }>>;
}

/** What a worker needs to build its own store and engine (EngineOptions without the functions). */
export interface SessionWorkerData {
  /** The module to load in the thread (service/session-worker.ts or .js). */
  entry: string;
  /** The thread's slot in the pool (0-based; shown as `thread` in its log lines). */
  thread: number;
  dataDir: string;
  mediaDir: string;
  workerId: string;
  logLevel: string;
  waUrl?: string;
  waRootPublicKey?: Uint8Array;
  waCaCertPem?: string;
  typingDelayMs?: { min: number; max: number };
  serverAckTimeoutMs?: number;
  urlFetchTls?: Record<string, unknown>;
  urlFetchTimeoutMs?: number;
  connectTimeoutMs?: number;
  downloadStatusMedia?: boolean;
  onlineFallbackMs?: number;
  outbound: { allowLoopbackWebhooks: boolean };
  /**
   * Int32Array over it, set by the main thread: [0] = 1 while the data dir has room; [1] = 1 while the operator's
   * LAN switch for outbound URLs (settings) is on.
   */
  storageRoom: SharedArrayBuffer;
  /** Resolve names for outbound URLs through the main thread (an embedder's resolver); otherwise `dns.lookup` here. */
  resolveOnMain?: boolean;
  /** The write lock all threads' stores share (db/write-lock.ts). */
  writeLock: SharedArrayBuffer;
  /**
   * Float64Array over it: [0] = the main thread's clock (EngineOptions.now) minus Date.now(), in ms, written before
   * each call; present only when the engine was given a clock.
   */
  clockOffset?: SharedArrayBuffer;
  /**
   * Honour the test-only messages (`testHoldWriteLock`): set only by an embedder's ThreadEngineOptions.testHooks
   * (the tests), never by `serve`; without it the thread ignores them.
   */
  testHooks?: boolean;
  /**
   * Int32Array over it: [0] is bumped by the thread every HEARTBEAT_MS while its event loop turns; the main thread's
   * watchdog stops a thread that holds the write lock and stopped beating (thread-engine.ts).
   */
  heartbeat: SharedArrayBuffer;
}

/** A session's state as the main thread's synchronous getters report it. */
export interface SessionState {
  status: ConnectionStatus;
  reason: string | null;
  qr: string | undefined;
}

export type ToWorker =
  /** A call of SessionRpc. */
  | { type: 'call'; request: RpcRequest<SessionRpc> }
  | { type: 'start'; connectionId: string }
  /** The API's port (the outbound policy refuses it) and public base URL (Messages' `media.url`), once known. */
  | { type: 'config'; ownPort?: number; mediaBase?: string }
  | { type: 'close' }
  /** Test only (SessionWorkerData.testHooks): hold the write lock in a transaction for `ms`, the event loop stopped. */
  | { type: 'testHoldWriteLock'; ms: number }
  /** The answer to a call of MainRpc. */
  | { type: 'answer'; reply: RpcReply };

export type FromWorker =
  | { type: 'ready' }
  /** The answer to a call of SessionRpc, with the states of its connection. */
  | { type: 'reply'; reply: RpcReply; states: Record<string, SessionState | null>; storageDown: boolean }
  /** Committed (and synced) events, in commit order, with the states of the sessions that changed. */
  | { type: 'events'; events: Array<[userId: string, event: LoggedEvent]>; states: Record<string, SessionState | null>; storageDown: boolean }
  /** A commit wrote `pending` webhook outbox rows: wake the dispatcher. */
  | { type: 'outbox' }
  /** One log record (pino's JSON line), written through the main thread's logger. */
  | { type: 'log'; line: string }
  | { type: 'startFailed'; connectionId: string; error: SerializedError }
  | { type: 'closed' }
  /** Test only: the thread holds the write lock now (answer to `testHoldWriteLock`). */
  | { type: 'testHolding' }
  /** A call of MainRpc. */
  | { type: 'call'; request: RpcRequest<MainRpc> };
