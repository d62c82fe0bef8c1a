/**
 * The live event stream (`/api/ws`): one WebSocket, reconnected with backoff, resuming with `after=<last seq>`
 * so no event is missed or seen twice (README "WebSocket"). Frames are handed to one callback.
 */
import type { EventFrame } from './types.ts';

export type SocketState = 'connecting' | 'open' | 'closed';

/** Close code of a stream whose token was revoked or whose user was disabled (service/http/stream/event-stream.ts). */
export const UNAUTHORIZED_CLOSE_CODE = 4401;

export interface EventSocketOptions {
  url: (after: number | undefined) => string;
  onFrame: (frame: EventFrame) => void;
  onState: (state: SocketState) => void;
  /** Called after a reconnect that could not resume (no seq seen yet): lists should be reloaded. */
  onResync?: () => void;
  /** The server closed the stream with 4401 (token revoked, user disabled): no reconnect. */
  onUnauthorized?: () => void;
  WebSocketImpl?: typeof WebSocket;
}

export class EventSocket {
  private ws: WebSocket | undefined;
  private lastSeq: number | undefined;
  private attempts = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private everOpened = false;

  constructor(private readonly opts: EventSocketOptions) {}

  get seq(): number | undefined {
    return this.lastSeq;
  }

  start(after?: number): void {
    if (after !== undefined) this.lastSeq = after;
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close(1000);
    this.ws = undefined;
  }

  private connect(): void {
    const Impl = this.opts.WebSocketImpl ?? WebSocket;
    this.opts.onState('connecting');
    const ws = new Impl(this.opts.url(this.lastSeq));
    this.ws = ws;
    ws.onopen = () => {
      this.attempts = 0;
      if (this.everOpened && this.lastSeq === undefined) this.opts.onResync?.();
      this.everOpened = true;
      this.opts.onState('open');
    };
    ws.onmessage = (ev) => {
      let frame: EventFrame;
      try {
        frame = JSON.parse(String(ev.data)) as EventFrame;
      } catch {
        return;
      }
      if (typeof frame.seq === 'number') {
        if (this.lastSeq !== undefined && frame.seq <= this.lastSeq) return; // replay overlap
        this.lastSeq = frame.seq;
      }
      this.opts.onFrame(frame);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.opts.onState('closed');
      if (this.stopped) return;
      if (ev.code === UNAUTHORIZED_CLOSE_CODE) {
        this.stopped = true;
        this.opts.onUnauthorized?.();
        return;
      }
      const delay = Math.min(30_000, 500 * 2 ** this.attempts++);
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }
}
