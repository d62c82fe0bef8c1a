/**
 * One WebSocket subscriber of a user's event log (interface-spec §4.7, §6.1). Each logged event goes out as a
 * JSON text frame `{ event, connectionId, payload, timestamp, seq }`, in `seq` order, without gaps or duplicates:
 *
 * 1. subscribe to the event log first and hold live (committed) events in memory;
 * 2. replay the log after the client's `after` seq from SQLite, page by page, waiting for each full page to be
 *    flushed to the socket before reading the next (flow control for large backlogs);
 * 3. send the held events whose seq is above the last one sent, then send live events as they come.
 *
 * Without `after` the stream starts at the current end of the log (live only).
 * With `types` (the `events=` query filter) only those event types are sent; `seq` values then have gaps.
 * A ping goes out every `pingIntervalMs`; a peer that has not answered the previous one is terminated.
 *
 * Close codes: 1001 server shutting down; 1011 internal error; 4401 the stream's API token was revoked or its user
 * disabled (auth/live-credentials.ts; do not reconnect with that token); 1013 slow consumer (the socket buffered more than
 * `maxBufferedBytes`, or more than `maxPendingEvents` arrived during the replay). The close reason carries
 * `after=<seq>`: reconnect with it to resume exactly where the stream stopped.
 */
import { WebSocket } from 'ws';
import type { Logger } from 'pino';
import type { Store } from '../../db/store.ts';
import type { EventLog, LoggedEvent } from '../../events/log.ts';

export interface StreamLimits {
  /** Events read from the log per replay query. */
  pageSize: number;
  /** Live sends stop and the stream closes (1013) when the socket buffers more than this many bytes. */
  maxBufferedBytes: number;
  /** Live events held while the replay runs; more closes the stream (1013). */
  maxPendingEvents: number;
  pingIntervalMs: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  pageSize: 500,
  maxBufferedBytes: 8 * 1024 * 1024,
  maxPendingEvents: 10_000,
  pingIntervalMs: 30_000,
};

export const CLOSE_CODES = { shuttingDown: 1001, internalError: 1011, slowConsumer: 1013 } as const;

/** Time a closing peer gets to answer the close handshake before its socket is destroyed. */
const CLOSE_GRACE_MS = 3_000;

export interface EventStreamOptions {
  /** The stored log, read for the replay. */
  store: Pick<Store, 'events'>;
  /** The live log, subscribed to for committed events. */
  events: Pick<EventLog, 'subscribe'>;
  userId: string;
  /** Resume after this seq; undefined: live events only. */
  after: number | undefined;
  /** Only events of these types are sent (`events=` filter); others still advance the resume point. */
  types?: ReadonlySet<string> | undefined;
  limits: StreamLimits;
  log: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
}

/** The WebSocket frame of an event. */
export function eventFrame(e: LoggedEvent): string {
  return JSON.stringify({
    event: e.event,
    connectionId: e.connectionId,
    payload: e.payload,
    timestamp: e.timestamp,
    seq: e.seq,
  });
}

export class EventStream {
  readonly #socket: WebSocket;
  readonly #opts: EventStreamOptions;
  readonly #unsubscribe: () => void;
  readonly #heartbeat: NodeJS.Timeout;
  /** Live events held during the replay; undefined once live. */
  #pending: LoggedEvent[] | undefined = [];
  #lastSent: number;
  #answeredPing = true;
  #stopped = false;
  /** Resolves when the socket has closed. */
  readonly closed: Promise<void>;

  /** Starts streaming to an open socket. */
  constructor(socket: WebSocket, opts: EventStreamOptions) {
    this.#socket = socket;
    this.#opts = opts;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    // Subscribing and reading the log's end happen in one synchronous step, so no event falls between them.
    this.#unsubscribe = opts.events.subscribe(opts.userId, (e) => this.#onLiveEvent(e));
    this.#lastSent = opts.after ?? opts.store.events.lastSeq(opts.userId);
    socket.on('pong', () => (this.#answeredPing = true));
    socket.once('close', () => this.#stop());
    this.#heartbeat = setInterval(() => this.#ping(), opts.limits.pingIntervalMs);
    void this.#replay();
  }

  /** Seq of the last event sent. */
  get lastSent(): number {
    return this.#lastSent;
  }

  /** Closes with `code`; the peer gets CLOSE_GRACE_MS to complete the handshake. Resolves once closed. */
  close(code: number, reason: string): Promise<void> {
    if (!this.#stopped) {
      this.#stop();
      if (this.#socket.readyState === WebSocket.OPEN || this.#socket.readyState === WebSocket.CONNECTING) {
        this.#socket.close(code, reason);
      }
      setTimeout(() => this.#socket.terminate(), CLOSE_GRACE_MS).unref();
    }
    return this.closed;
  }

  #stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#pending = undefined;
    this.#unsubscribe();
    clearInterval(this.#heartbeat);
  }

  async #replay(): Promise<void> {
    const { store, userId, limits, log } = this.#opts;
    try {
      for (;;) {
        const page = store.events.after(userId, this.#lastSent, limits.pageSize);
        if (page.length < limits.pageSize) {
          for (const e of page) this.#write(e);
          break;
        }
        await this.#writeFlushed(page);
        if (this.#stopped) return;
      }
      const held = this.#pending ?? [];
      this.#pending = undefined;
      for (const e of held) if (e.seq > this.#lastSent) this.#write(e);
      log.debug({ userId, lastSent: this.#lastSent }, 'event stream live');
    } catch (err) {
      log.error({ err, userId }, 'event stream replay failed');
      void this.close(CLOSE_CODES.internalError, 'Internal error');
    }
  }

  #onLiveEvent(e: LoggedEvent): void {
    if (this.#stopped) return;
    if (this.#pending) {
      this.#pending.push(e);
      if (this.#pending.length > this.#opts.limits.maxPendingEvents) this.#closeSlow();
      return;
    }
    if (e.seq <= this.#lastSent) return;
    this.#write(e);
    if (this.#socket.bufferedAmount > this.#opts.limits.maxBufferedBytes) this.#closeSlow();
  }

  /** Sends one frame; false when the stream is no longer open. `onFlushed` runs once the OS has the frame. */
  #write(e: LoggedEvent, onFlushed?: () => void): boolean {
    if (this.#stopped || this.#socket.readyState !== WebSocket.OPEN) return false;
    if (this.#opts.types && !this.#opts.types.has(e.event)) {
      this.#lastSent = e.seq;
      if (onFlushed) queueMicrotask(onFlushed);
      return true;
    }
    this.#socket.send(eventFrame(e), onFlushed && (() => onFlushed()));
    this.#lastSent = e.seq;
    return true;
  }

  /** Sends a non-empty page; resolves once its last frame is flushed to the OS (or the stream is gone). */
  #writeFlushed(page: readonly LoggedEvent[]): Promise<void> {
    return new Promise((resolve) => {
      page.forEach((e, i) => {
        const last = i === page.length - 1;
        if (!this.#write(e, last ? resolve : undefined) && last) resolve();
      });
    });
  }

  #closeSlow(): void {
    this.#opts.log.warn({ userId: this.#opts.userId, lastSent: this.#lastSent }, 'closing slow event stream consumer');
    void this.close(CLOSE_CODES.slowConsumer, `Slow consumer; reconnect with after=${this.#lastSent}`);
  }

  #ping(): void {
    if (!this.#answeredPing) {
      this.#opts.log.info({ userId: this.#opts.userId }, 'event stream peer stopped answering pings');
      this.#stop();
      this.#socket.terminate();
      return;
    }
    this.#answeredPing = false;
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.ping();
  }
}
