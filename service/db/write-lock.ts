/**
 * A write lock shared by the threads of one process that write the same SQLite file (`serve --workers N`,
 * docs/scaling.md), taken by the store right before `BEGIN IMMEDIATE` and given back right after `COMMIT` or
 * `ROLLBACK`. SQLite's own lock stays the guard; this one only changes how a writer waits for it (docs/architecture.md
 * § Threads and the write lock):
 * - a session thread blocks in `acquire` (`Atomics.wait`, woken the moment the holder lets go) instead of sleeping in
 *   SQLite's busy handler in fixed steps (1, 2, 5, 10 … 100 ms);
 * - the main thread, which serves HTTP, the stream and webhooks, never blocks: `acquire` there only tries
 *   (`blocking: false`: SQLITE_BUSY at once when another thread holds it), and its writes wait in `runLocked`, which
 *   waits with `Atomics.waitAsync` so the event loop keeps turning, then runs the write synchronously holding the lock.
 *
 * The word holds 0 (free) or the holder's id (its threadId + 1), so the main thread's watchdog can tell which thread
 * holds it (`holderOf`). A thread that dies holding it is released by the pool (`releaseHeldBy`), or by a waiter that
 * can tell the holder is gone (`holderGone`); every wait is bounded (WAIT_SLICE_MS) and retried, so a lost wake-up
 * costs a slice, and a writer that waited `giveUpMs` in all fails like SQLite's busy timeout (SQLITE_BUSY; the API
 * answers it 503 with `retry-after`).
 */
import { threadId } from 'node:worker_threads';

const WAIT_SLICE_MS = 20;
/** How long a writer waits in all by default (a session thread); the main thread waits less (`giveUpMs`). */
const GIVE_UP_MS = 10_000;

/** The SQLITE_BUSY of a writer that could not get the lock (isBusyError in store.ts: the API's 503). */
function busy(): Error {
  return Object.assign(new Error('database is locked (write lock of another thread)'), { code: 'SQLITE_BUSY' });
}

export interface WriteLockOptions {
  /** How long `acquire` (blocking) and `runLocked` wait in all, in ms (default 10 s). */
  giveUpMs?: number;
  /** false on the main thread: `acquire` never waits (it throws SQLITE_BUSY when the lock is taken). Default true. */
  blocking?: boolean;
}

export class WriteLock {
  readonly #word: Int32Array;
  readonly #me = threadId + 1;
  readonly #holderGone: ((holderThreadId: number) => boolean) | undefined;
  readonly #giveUpMs: number;
  readonly #blocking: boolean;

  /**
   * @param buffer a SharedArrayBuffer of at least 4 bytes, the same one in every thread.
   * @param holderGone whether the thread `holderThreadId` has stopped (then its hold is void).
   */
  constructor(buffer: SharedArrayBuffer, holderGone?: (holderThreadId: number) => boolean, opts: WriteLockOptions = {}) {
    this.#word = new Int32Array(buffer, 0, 1);
    this.#holderGone = holderGone;
    this.#giveUpMs = opts.giveUpMs ?? GIVE_UP_MS;
    this.#blocking = opts.blocking ?? true;
  }

  /** Takes the lock if it is free; true when this thread holds it now. Never waits. */
  tryAcquire(): boolean {
    return Atomics.compareExchange(this.#word, 0, 0, this.#me) === 0;
  }

  /**
   * Blocks this thread until it holds the lock (a session thread). Not reentrant (the store takes it once per
   * outermost transaction). A non-blocking lock (the main thread) only tries.
   * @throws Error with code SQLITE_BUSY after `giveUpMs` (as SQLite's busy timeout would), or at once when not blocking
   */
  acquire(): void {
    if (!this.#blocking) {
      if (this.tryAcquire()) return;
      throw busy();
    }
    const deadline = Date.now() + this.#giveUpMs;
    for (;;) {
      const holder = Atomics.compareExchange(this.#word, 0, 0, this.#me);
      if (holder === 0) return;
      if (holder === this.#me) throw new Error('write lock already held by this thread');
      if (Atomics.wait(this.#word, 0, holder, WAIT_SLICE_MS) !== 'timed-out') continue;
      if (this.#holderGone?.(holder - 1) && Atomics.compareExchange(this.#word, 0, holder, 0) === holder) continue;
      if (Date.now() >= deadline) throw busy();
    }
  }

  /**
   * Waits without blocking the event loop (`Atomics.waitAsync`) until the lock is free, takes it and runs `fn`
   * synchronously holding it, then lets go: the lock is never held across an `await`. For the main thread.
   * @param deadline Date.now() value after which it gives up (default: `giveUpMs` from now)
   * @throws Error with code SQLITE_BUSY past the deadline; whatever `fn` throws
   */
  async runLocked<T>(fn: () => T, deadline = Date.now() + this.#giveUpMs): Promise<T> {
    for (;;) {
      const holder = Atomics.compareExchange(this.#word, 0, 0, this.#me);
      if (holder === 0) {
        try {
          return fn();
        } finally {
          this.release();
        }
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw busy();
      // Holder === me: another task of this thread is inside its synchronous write; it lets go before we resume.
      const wait = Atomics.waitAsync(this.#word, 0, holder, Math.min(WAIT_SLICE_MS, remaining));
      const outcome = wait.async ? await wait.value : wait.value;
      if (outcome === 'timed-out' && holder !== this.#me && this.#holderGone?.(holder - 1)) {
        Atomics.compareExchange(this.#word, 0, holder, 0);
      }
    }
  }

  /** Lets go of the lock if this thread holds it, waking every waiter (the main thread's among them). */
  release(): void {
    if (Atomics.compareExchange(this.#word, 0, this.#me, 0) === this.#me) Atomics.notify(this.#word, 0);
  }

  /** The threadId of the thread holding the lock in `buffer`, or undefined when it is free. */
  static holderOf(buffer: SharedArrayBuffer): number | undefined {
    const holder = Atomics.load(new Int32Array(buffer, 0, 1), 0);
    return holder === 0 ? undefined : holder - 1;
  }

  /** Frees the lock if the thread `deadThreadId` held it (it exited or was stopped); true when it did. */
  static releaseHeldBy(buffer: SharedArrayBuffer, deadThreadId: number): boolean {
    const word = new Int32Array(buffer, 0, 1);
    const freed = Atomics.compareExchange(word, 0, deadThreadId + 1, 0) === deadThreadId + 1;
    if (freed) Atomics.notify(word, 0);
    return freed;
  }
}
