/**
 * Free space of the data dir (`fs.statfs`: blocks available to this user × block size), checked at start
 * (`--min-free-mb`, default 100 MiB: below it `serve` refuses to start) and every 15 s while running: below twice
 * the minimum the log warns once and `GET /api/` reports `storage: "low"`; the sessions wait for the minimum before
 * reconnecting after a failed commit (engine/session-lifecycle.ts).
 */
import fs from 'node:fs';
import type { Logger } from 'pino';

const MIB = 1024 * 1024;
/** How often the running service looks at the free space, in ms. */
export const DISK_CHECK_INTERVAL_MS = 15_000;

/** `serve` cannot start: the data dir has less free space than `--min-free-mb`. One line for the CLI. */
export class DiskSpaceError extends Error {
  override name = 'DiskSpaceError';
}

/** Bytes free for this process in the file system holding `dir`; Infinity when statfs is not available. */
export function freeBytes(dir: string): number {
  try {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return Number.POSITIVE_INFINITY; // an exotic file system: the commits themselves tell when it is full
  }
}

/** @throws DiskSpaceError when `dir` has less than `minFreeMb` MiB free. */
export function assertFreeSpace(dir: string, minFreeMb: number): void {
  const free = freeBytes(dir);
  if (free < minFreeMb * MIB) {
    throw new DiskSpaceError(
      `only ${(free / MIB).toFixed(1)} MiB free in ${dir}; Switchboard needs at least ${minFreeMb} MiB there (free some space, or lower --min-free-mb)`,
    );
  }
}

/** Watches the data dir's free space: `low` below twice the minimum, `hasRoom()` at or above the minimum. */
export class DiskSpaceMonitor {
  #timer: NodeJS.Timeout | undefined;
  #low = false;

  constructor(
    private readonly dir: string,
    private readonly minFreeMb: number,
    private readonly logger: Logger,
    private readonly intervalMs = DISK_CHECK_INTERVAL_MS,
  ) {}

  start(): this {
    this.check();
    this.#timer = setInterval(() => this.check(), this.intervalMs);
    this.#timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Whether the free space is below twice the minimum (as of the last check). */
  get low(): boolean {
    return this.#low;
  }

  /** Whether the free space is at least the minimum now (read at once). */
  hasRoom(): boolean {
    return freeBytes(this.dir) >= this.minFreeMb * MIB;
  }

  check(): void {
    const free = freeBytes(this.dir);
    const low = free < 2 * this.minFreeMb * MIB;
    if (low && !this.#low) {
      this.logger.warn(
        { freeMiB: Math.round(free / MIB), minFreeMb: this.minFreeMb, dataDir: this.dir },
        'the data directory is running out of space: below twice --min-free-mb',
      );
    } else if (!low && this.#low) this.logger.info({ freeMiB: Math.round(free / MIB) }, 'the data directory has room again');
    this.#low = low;
  }
}
