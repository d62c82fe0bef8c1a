/**
 * Durable commits without blocking the event loop. A commit with `synchronous=FULL` in WAL mode is a write of the
 * new WAL frames plus one fsync of the WAL file, all on the calling thread (0.2–1.5 ms here, longer under load).
 * The store's group commit instead commits with `synchronous=NORMAL` — the frames reach the OS, so a process crash
 * loses nothing — and then fsyncs the WAL file on libuv's thread pool; what waited for the commit (receipts, event
 * publication, webhook hand-over) runs only once that fsync has returned. That is the same sync FULL would make,
 * taken off the main thread: nothing leaves the process before its data is on disk.
 *
 * SQLite facts relied on (https://www.sqlite.org/pragma.html#pragma_synchronous, wal.html): with NORMAL the WAL is
 * still synced before every checkpoint and its header when the file is reused, and the WAL file is only deleted
 * when the last connection closes — so one descriptor stays valid for the connection's life. If it was unlinked
 * anyway (nlink 0), it is reopened.
 */
import fs from 'node:fs';

export class WalSync {
  readonly #walFile: string;
  #fd: number | undefined;
  /** Commits registered so far / known durable (counters, in commit order). */
  #committed = 0;
  #durable = 0;
  #inFlight = false;
  #walBytes = 0;
  /** Per registered commit, in order: what runs once it is on disk. */
  #waiting: Array<{ gen: number; callbacks: Array<() => void> }> = [];
  readonly #onError: (err: Error) => void;
  readonly #onUnsynced: (err: Error) => void;

  /**
   * @param dbFile the database file; its WAL is `<dbFile>-wal`
   * @param onError told about a failed fsync (the commit is then synced again, synchronously) or a throwing callback
   * @param onUnsynced told when the synchronous retry failed too, right before the waiting callbacks run: the
   *   commits are in SQLite but not known to be on disk, so whatever must not leave before that (held receipts) has
   *   to be dropped by then
   */
  constructor(dbFile: string, onError: (err: Error) => void, onUnsynced: (err: Error) => void = () => undefined) {
    this.#walFile = `${dbFile}-wal`;
    this.#onError = onError;
    this.#onUnsynced = onUnsynced;
  }

  /** Size of the WAL file when it was last synced, in bytes (the file only shrinks on a TRUNCATE checkpoint). */
  get walBytes(): number {
    return this.#walBytes;
  }

  /** True while some commit is not yet known to be on disk. */
  get pending(): boolean {
    return this.#durable < this.#committed;
  }

  /**
   * Registers a commit just made with `synchronous=NORMAL` and starts syncing it; `run` is called (in commit
   * order, never synchronously from here) once it is on disk.
   */
  committed(run: () => void): void {
    this.#waiting.push({ gen: ++this.#committed, callbacks: [run] });
    this.#start();
  }

  /** Runs `cb` once every commit registered so far is on disk: now if there is none. */
  whenDurable(cb: () => void): void {
    const last = this.#waiting.at(-1);
    if (!last) return cb();
    last.callbacks.push(cb);
  }

  /**
   * Everything committed so far is on disk: after a `synchronous=FULL` commit (which syncs the whole WAL) or after
   * `syncNow`. Runs the waiting callbacks now.
   */
  markAllDurable(): void {
    this.#release(this.#committed);
  }

  /** Syncs the WAL on this thread and runs every waiting callback (shutdown, or a caller that cannot wait). */
  syncNow(): void {
    if (!this.pending) return;
    const target = this.#committed;
    const err = this.#fsyncSync();
    if (err) this.#onUnsynced(err);
    this.#release(target);
  }

  /** Closes the descriptor (call after the last commit was synced). */
  close(): void {
    if (this.#fd !== undefined) fs.closeSync(this.#fd);
    this.#fd = undefined;
  }

  #start(): void {
    if (this.#inFlight) return; // its completion starts the next round
    const target = this.#committed;
    let fd: number;
    try {
      fd = this.#descriptor();
    } catch (err) {
      this.#onError(err as Error);
      this.#onUnsynced(err as Error);
      queueMicrotask(() => this.#release(target)); // nothing to sync against; keep callbacks asynchronous
      return;
    }
    this.#inFlight = true;
    fs.fsync(fd, (err) => {
      this.#inFlight = false;
      if (err) {
        this.#onError(err);
        const again = this.#fsyncSync();
        if (again) this.#onUnsynced(again);
      }
      this.#release(target);
      if (this.pending) this.#start();
    });
  }

  /** Syncs on this thread; returns the error when that failed too (already reported to onError). */
  #fsyncSync(): Error | undefined {
    try {
      fs.fsyncSync(this.#descriptor());
      return undefined;
    } catch (err) {
      this.#onError(err as Error);
      return err as Error;
    }
  }

  #descriptor(): number {
    if (this.#fd !== undefined) {
      const st = fs.fstatSync(this.#fd);
      this.#walBytes = st.size;
      if (st.nlink === 0) this.close();
    }
    this.#fd ??= fs.openSync(this.#walFile, 'r+');
    return this.#fd;
  }

  #release(gen: number): void {
    if (gen > this.#durable) this.#durable = gen;
    while (this.#waiting.length > 0 && this.#waiting[0]!.gen <= this.#durable) {
      for (const cb of this.#waiting.shift()!.callbacks) {
        try {
          cb();
        } catch (err) {
          this.#onError(err as Error); // one failing callback must not hold back the others
        }
      }
    }
  }
}
