/**
 * Messages between the main thread's `ThreadEngine` (thread-engine.ts) and the session worker threads
 * (service/session-worker.ts). Everything here crosses `postMessage`, so it is structured-cloneable data only.
 */
import type { LoggedEvent } from '../db/events.ts';
import type { ConnectionStatus } from '../db/connections.ts';

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
}

/** A session's state as the main thread's synchronous getters report it. */
export interface SessionState {
  status: ConnectionStatus;
  reason: string | null;
  qr: string | undefined;
}

export type ToWorker =
  | { type: 'call'; id: number; method: string; args: unknown[] }
  | { type: 'start'; connectionId: string }
  /** The API's port (the outbound policy refuses it) and public base URL (Messages' `media.url`), once known. */
  | { type: 'config'; ownPort?: number; mediaBase?: string }
  | { type: 'close' }
  /** The answer to a `resolve` (the addresses, or the resolver's error). */
  | { type: 'resolved'; id: number; addresses?: Array<{ address: string; family: number }>; error?: SerializedError };

export interface SerializedError {
  statusCode?: number;
  message: string;
  name: string;
  code?: string;
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'reply'; id: number; ok: true; value: unknown; states: Record<string, SessionState | null>; storageDown: boolean }
  | { type: 'reply'; id: number; ok: false; error: SerializedError; states: Record<string, SessionState | null>; storageDown: boolean }
  /** Committed (and synced) events, in commit order, with the states of the sessions that changed. */
  | { type: 'events'; events: Array<[userId: string, event: LoggedEvent]>; states: Record<string, SessionState | null>; storageDown: boolean }
  /** A commit wrote `pending` webhook outbox rows: wake the dispatcher. */
  | { type: 'outbox' }
  /** One log record (pino's JSON line), written through the main thread's logger. */
  | { type: 'log'; line: string }
  | { type: 'startFailed'; connectionId: string; error: SerializedError }
  | { type: 'closed' }
  /** Name resolution through the main thread's resolver (only when the service was given one: `resolveOnMain`). */
  | { type: 'resolve'; id: number; hostname: string };
