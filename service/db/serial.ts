/**
 * One at a time, first come first served: the order in which a Store runs its writing transactions
 * (sqlite-store.ts, pg/store.ts). Taking a free turn is synchronous, so work that finds the store idle starts in the
 * same tick.
 */
export class Serial {
  #busy = false;
  readonly #waiting: Array<() => void> = [];

  /** True while a turn is taken. */
  get busy(): boolean {
    return this.#busy;
  }

  /** Takes the turn: undefined when it was free (taken now), else a Promise resolved when it is this caller's. */
  acquire(): Promise<void> | undefined {
    if (!this.#busy) {
      this.#busy = true;
      return undefined;
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  /** Gives the turn to the next waiter (or frees it). */
  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
  }

  /** Runs `fn` in a turn of its own (at once when free); resolves with its result. */
  run<T>(fn: () => T | Promise<T>): Promise<T> {
    const go = async () => {
      try {
        return await fn();
      } finally {
        this.release();
      }
    };
    const wait = this.acquire();
    return wait ? wait.then(go) : go();
  }
}
