/**
 * One service process per data dir. Before the database opens, `lockDataDir` checks that the dir is usable (a
 * directory, writable) and takes an OS-level exclusive lock: SQLite's own file locking on `<dataDir>/switchboard.lock`
 * (a small database held open in `locking_mode=EXCLUSIVE` with a write done, so the lock lasts until the handle
 * closes or the process dies — the OS releases it even after SIGKILL). The holder's PID is written to
 * `<dataDir>/switchboard.pid` so a second process can name it. One-shot CLI commands (`token`, `user`) do not lock:
 * they run next to a serving process by design.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StartupError } from './config-error.ts';

export { StartupError };

/** Held lock; `release()` closes the lock file and removes the PID file (idempotent). */
export interface DataDirLock {
  release(): void;
}

const CAUSES: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOTDIR: 'a path component is a file, not a directory',
  EEXIST: 'it is a file, not a directory', // mkdir -p on an existing non-directory
  ENOSPC: 'no space left on the device',
};

/** The one-line cause of a file-system error (`permission denied`), or its message. */
function cause(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { code?: string };
  if (e.code && CAUSES[e.code]) return CAUSES[e.code]!;
  if (e.code === 'SQLITE_READONLY' || e.code === 'SQLITE_CANTOPEN') return 'cannot write there (read-only or no permission)';
  return e.message;
}

/**
 * Creates `dir` when missing (0700: private from the start, config/private-dir.ts) and checks that this process can
 * read, write and enter it; `what` names it in the message (`data dir`, `media dir`). Returns the absolute path.
 * @throws StartupError `cannot use <what> <dir>: <cause>` (a file where the dir should be, permission denied,
 *   read-only file system)
 */
export function ensureUsableDir(dirPath: string, what: string): string {
  const dir = path.resolve(dirPath);
  const unusable = (why: string) => new StartupError(`cannot use ${what} ${dir}: ${why}`);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw unusable(cause(mkdirCause(dir, err)));
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    throw unusable(cause(err));
  }
  if (!stat.isDirectory()) throw unusable('it is a file, not a directory');
  try {
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
  } catch (err) {
    throw unusable(cause(err));
  }
  return dir;
}

/**
 * The real cause of a failed `mkdir -p`: Node reports ENOENT for a folder it could not create on a read-only file
 * system, so the first missing folder is created alone once more to get its own error.
 */
function mkdirCause(dir: string, err: unknown): unknown {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return err;
  let missing = dir;
  while (path.dirname(missing) !== missing && !fs.existsSync(path.dirname(missing))) missing = path.dirname(missing);
  try {
    fs.mkdirSync(missing, { mode: 0o700 });
    fs.rmdirSync(missing);
  } catch (again) {
    return again;
  }
  return err;
}

/**
 * Checks `dataDir` (created when missing) and takes its exclusive lock.
 * @throws StartupError with one line naming the dir and the cause (a file where the dir should be, permission
 *   denied, read-only file system) or, when another process holds the lock, the PID holding it.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const dir = ensureUsableDir(dataDir, 'data dir');
  const unusable = (why: string) => new StartupError(`cannot use data dir ${dir}: ${why}`);

  const lockFile = path.join(dir, 'switchboard.lock');
  const pidFile = path.join(dir, 'switchboard.pid');
  let db: Database.Database;
  try {
    fs.closeSync(fs.openSync(lockFile, 'a', 0o600)); // SQLite gives its journal the same mode
    db = new Database(lockFile, { timeout: 0 });
  } catch (err) {
    throw unusable(cause(err));
  }
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // A write takes the EXCLUSIVE lock; in exclusive locking mode it is kept until the connection closes.
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER); BEGIN EXCLUSIVE; DELETE FROM holder; COMMIT');
  } catch (err) {
    db.close();
    const code = (err as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      const pid = readPid(pidFile);
      throw new StartupError(
        `data dir ${dir} is in use by another Switchboard process${pid ? ` (PID ${pid})` : ''}; stop it or pass another --data-dir`,
      );
    }
    throw unusable(cause(err));
  }
  try {
    fs.writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 });
  } catch (err) {
    db.close();
    throw unusable(cause(err));
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      if (readPid(pidFile) === process.pid) fs.rmSync(pidFile, { force: true });
      db.close();
    },
  };
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
