/**
 * A write lock shared by the threads of one process that write the same SQLite file (`serve --workers N`,
 * docs/scaling.md), taken by the store right before `BEGIN IMMEDIATE` and given back right after `COMMIT` or
 * `ROLLBACK`. SQLite's own lock stays the guard; this one only changes how a writer waits for it: a thread that
 * finds SQLite's write lock taken sleeps in its busy handler in fixed steps (1, 2, 5, 10 … 100 ms) with its event
 * loop stopped, while a thread waiting here is woken the moment the holder lets go (`Atomics.wait`/`notify`).
 *
 * The word holds 0 (free) or the holder's id (its threadId + 1). A thread that dies holding it is released by the
 * pool (`releaseHeldBy`), or by a waiter that can tell the holder is gone (`holderGone`: the main thread, which
 * cannot run the pool's exit handler while it waits); every wait is bounded (WAIT_SLICE_MS) and retried, so a lost
 * wake-up costs a slice, and a writer that waited `giveUpMs` in all fails like SQLite's busy timeout (SQLITE_BUSY;
 * the API answers it 503 with `retry-after`).
 */
import { threadId } from 'node:worker_threads';

const WAIT_SLICE_MS = 20;
/** How long a writer waits in all by default (a session thread); the main thread waits less (`giveUpMs`). */
const GIVE_UP_MS = 10_000;

export class WriteLock {
  readonly #word: Int32Array;
  readonly #me = threadId + 1;
  readonly #holderGone: ((holderThreadId: number) => boolean) | undefined;
  readonly #giveUpMs: number;

  /**
   * @param buffer a SharedArrayBuffer of at least 4 bytes, the same one in every thread.
   * @param holderGone whether the thread `holderThreadId` has stopped (then its hold is void).
   * @param opts.giveUpMs how long `acquire` waits in all (default 10 s).
   */
  constructor(buffer: SharedArrayBuffer, holderGone?: (holderThreadId: number) => boolean, opts: { giveUpMs?: number } = {}) {
    this.#word = new Int32Array(buffer, 0, 1);
    this.#holderGone = holderGone;
    this.#giveUpMs = opts.giveUpMs ?? GIVE_UP_MS;
  }

  /**
   * Blocks this thread until it holds the lock. Not reentrant (the store takes it once per outermost transaction).
   * @throws Error with code SQLITE_BUSY after `giveUpMs` (as SQLite's busy timeout would)
   */
  acquire(): void {
    const deadline = Date.now() + this.#giveUpMs;
    for (;;) {
      const holder = Atomics.compareExchange(this.#word, 0, 0, this.#me);
      if (holder === 0) return;
      if (holder === this.#me) throw new Error('write lock already held by this thread');
      if (Atomics.wait(this.#word, 0, holder, WAIT_SLICE_MS) !== 'timed-out') continue;
      if (this.#holderGone?.(holder - 1) && Atomics.compareExchange(this.#word, 0, holder, 0) === holder) continue;
      if (Date.now() >= deadline) throw Object.assign(new Error('database is locked (write lock of another thread)'), { code: 'SQLITE_BUSY' });
    }
  }

  /** Lets go of the lock if this thread holds it, waking one waiter. */
  release(): void {
    if (Atomics.compareExchange(this.#word, 0, this.#me, 0) === this.#me) Atomics.notify(this.#word, 0, 1);
  }

  /** Frees the lock if the thread `deadThreadId` held it (it exited); true when it did. */
  static releaseHeldBy(buffer: SharedArrayBuffer, deadThreadId: number): boolean {
    const word = new Int32Array(buffer, 0, 1);
    const freed = Atomics.compareExchange(word, 0, deadThreadId + 1, 0) === deadThreadId + 1;
    if (freed) Atomics.notify(word, 0, 1);
    return freed;
  }
}
