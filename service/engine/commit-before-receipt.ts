/**
 * Commit before receipt: makes every frame a Baileys socket writes leave one event-loop turn later, so the
 * delivery receipt for an incoming message reaches the server only after the engine has committed that message.
 *
 * Why: rc14's `handleMessage` (lib/Socket/messages-recv.js) awaits `sendReceipt` and only then `upsertMessage`;
 * once the server has the receipt it drops the message, so a crash between the two lost it. The chain from the
 * socket's write callback to our `messages.upsert` handler is all microtasks (promisified `ws.send` →
 * `sendRawMessage` → `sendReceipt` → `upsertMessage` → `ev.emit` → the engine's synchronous SQLite commit), and
 * the event buffer is off (see `disableEventBuffer` in session-lifecycle.ts). So we acknowledge each write at once, and from a
 * `setImmediate`, which runs after that chain, hand the frames to `whenDurable`: they go on the wire once the store's
 * group commit holding the message has committed (at most a few milliseconds). Frames keep their order (the Noise
 * transport's nonces depend on it).
 *
 * History sync chunks need more than one turn: rc14 sends the chunk's receipts (delivery + `hist_sync`) and only then
 * inflates and decodes the chunk (zlib on the thread pool, several turns) before it emits `messaging-history.set`.
 * For those the engine calls `hold()` when the chunk's `messages.upsert` arrives (synchronously after the receipts
 * were written, like any message) and releases it once the chunk is committed: every frame stays queued meanwhile.
 *
 * While a hold is in force the session's Signal key writes wait too (`onRelease`, auth-state.ts `holdWrites`): the
 * next chunk's notification is decrypted before the held chunk is stored, and its key update written with the held
 * chunk's neighbours would, after a crash, make the redelivered notification undecryptable ("key used already",
 * acknowledged as a duplicate) and the chunk lost. A message committed without its key update is harmless: it is
 * redelivered, decrypts from the older state and is recognised as stored.
 *
 * Hooks the underlying `ws` WebSocket (`sock.ws.socket`), which rc14 creates synchronously inside `makeWASocket`
 * (lib/Socket/Client/websocket.js `connect()`): call this right after `makeWASocket` returns.
 */
import type { WASocket } from '@whiskeysockets/baileys';

type SendCallback = (err?: Error) => void;
interface RawSocket {
  send(data: unknown, cb?: SendCallback): void;
}

export interface FrameGate {
  /** Keeps every frame (queued and later ones) from the wire until the returned function is called (idempotent). */
  hold(): () => void;
  /**
   * A commit failed (the disk is full), or storing an event did: drops every queued frame and every later one, for
   * good — the receipts of what was not stored must never reach the server, which then redelivers after a reconnect
   * — and holds the session's key writes for good (`holding()`; a release no longer lets them go). Returns how many
   * frames were dropped. The caller closes the socket.
   */
  discard(): number;
  /** How many frames were written to the gate so far (a mark for `wasSent`). */
  enqueued(): number;
  /** Whether every frame up to `mark` (an `enqueued()` value) went on the wire; false once they were discarded. */
  wasSent(mark: number): boolean;
  /** Whether a `hold()` is in force (frames stay queued until its release), or the gate was discarded. */
  holding(): boolean;
}

/**
 * @param whenDurable runs its callback once every write made so far is durable (the store's group commit):
 *   the held frames go out then.
 */
export function sendFramesAfterCommit(
  sock: WASocket,
  whenDurable: (send: () => void) => void,
  opts: { onRelease?: () => void } = {},
): FrameGate {
  const raw = (sock.ws as unknown as { socket: RawSocket | null }).socket;
  if (!raw) return { hold: () => () => undefined, discard: () => 0, enqueued: () => 0, wasSent: () => true, holding: () => false };
  const send = raw.send.bind(raw);
  let queue: unknown[] = [];
  let scheduled = false;
  let holds = 0;
  let discarded = false;
  /** Frames written to the gate, and frames handed to the socket, since it was made. */
  let enqueuedCount = 0;
  let flushedCount = 0;
  const sendQueued = () => {
    if (holds > 0 || discarded) return; // the last release sends them; a discarded gate sends nothing
    const frames = queue;
    queue = [];
    for (const frame of frames) {
      flushedCount++;
      try {
        send(frame);
      } catch {
        // The socket closed meanwhile; Baileys learns of it from the close event.
      }
    }
  };
  raw.send = (data: unknown, cb?: SendCallback) => {
    if (discarded) {
      if (cb) queueMicrotask(() => cb(new Error('connection closing: storage unavailable')));
      return;
    }
    queue.push(data);
    enqueuedCount++;
    if (!scheduled) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        whenDurable(sendQueued);
      });
    }
    if (cb) queueMicrotask(() => cb());
  };
  return {
    enqueued: () => enqueuedCount,
    wasSent: (mark) => flushedCount >= mark,
    // A discarded gate holds for good: its socket is dead, and the Signal key updates its session recorded since
    // belong to frames that never left (written, they would make the redelivered messages undecryptable).
    holding: () => holds > 0 || discarded,
    discard() {
      discarded = true;
      const dropped = queue.length;
      queue = [];
      return dropped;
    },
    hold() {
      holds++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (--holds === 0 && !discarded) {
          opts.onRelease?.();
          whenDurable(sendQueued);
        }
      };
    },
  };
}
