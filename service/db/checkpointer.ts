/**
 * WAL checkpoints on a worker thread. SQLite's automatic checkpoint runs inside the commit that crosses
 * `wal_autocheckpoint` pages (1000 by default): it copies the WAL into the database file and fsyncs both, on the
 * committing thread — here the event loop, every ~50 group commits under load. The service instead turns the
 * automatic checkpoint off on its connection and lets a second connection on a worker thread run
 * `wal_checkpoint(PASSIVE)` every CHECK_MS: PASSIVE never blocks the writer (https://www.sqlite.org/c3ref/wal_checkpoint_v2.html),
 * and pages written many times between two checkpoints are copied once.
 *
 * The WAL restarts from its beginning only when a checkpoint has copied all of it before the next commit, which a
 * steady stream of group commits (one every few ms) never allows: measured, the WAL then grew by 16 MB/s at
 * 500 msg/s. So past RESTART_FRAMES the worker follows its PASSIVE pass with `wal_checkpoint(RESTART)`: with
 * almost every frame already copied, it holds new writers back only for the last few frames and one fsync of
 * the database file (a few ms, about once a second at 500 msg/s), and the next commit starts the WAL over.
 * Writers faster than the worker can copy are held back by the store (`StoreOptions.walLimitBytes`).
 * If the worker fails, the connection goes back to automatic checkpoints.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './database.ts';

const CHECK_MS = 100;
/** WAL frames (pages) after which the worker forces a restart of the WAL: 4096 × 4 KiB = 16 MiB (about 1 s of a 500 msg/s stream). */
const RESTART_FRAMES = 4_096;

// Plain JavaScript evaluated in the worker, so it runs the same from the TypeScript sources and from dist/.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
let stopping = false;
parentPort.on('message', (m) => {
  if (m === 'stop') {
    stopping = true;
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});
const timer = setInterval(() => {
  if (stopping) return;
  try {
    const r = passive.get();
    if (r.log >= workerData.restartFrames) restart.get();
  } catch (err) {
    if (err && err.code === 'SQLITE_BUSY') return; // a writer held on; next round
    // Disk full or failing: the WAL keeps every frame (nothing lost); try again next round rather than giving up.
    if (err && /^SQLITE_(FULL|IOERR)/.test(String(err.code))) return;
    throw err;
  }
}, workerData.checkMs);
`;

export interface Checkpointer {
  /** Stops the worker; the connection checkpoints automatically again. */
  stop(): Promise<void>;
}

/**
 * Moves `db`'s checkpoints to a worker thread (see the module comment). `onError` hears a worker failure, after
 * which automatic checkpoints are back on. File databases only. `opts.restartFrames` lowers the restart threshold
 * for tests.
 */
export function startCheckpointer(db: Db, onError: (err: Error) => void, opts: { restartFrames?: number } = {}): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { driver, file: db.name, checkMs: CHECK_MS, restartFrames: opts.restartFrames ?? RESTART_FRAMES },
  });
  worker.unref();
  db.pragma('wal_autocheckpoint = 0');
  let stopped = false;
  const fallBack = () => {
    if (db.open) db.pragma('wal_autocheckpoint = 1000');
  };
  worker.on('error', (err) => {
    fallBack();
    if (!stopped) onError(err);
  });
  worker.on('exit', () => {
    if (!stopped) {
      fallBack();
      onError(new Error('the checkpoint worker exited'));
    }
  });
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      fallBack();
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.postMessage('stop');
      const timer = setTimeout(() => void worker.terminate(), 2_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
