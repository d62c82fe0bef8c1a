/**
 * A private data dir (issue 20 item 3): the database holds the Signal private keys of every linked account and the
 * webhook signing secrets, so nothing in the data dir may be readable by other local accounts. Folders are 0700
 * and files 0600: set at creation (`PRIVATE_DIR_MODE` / `PRIVATE_FILE_MODE` for writers, `ensurePrivateFile`) and repaired at start
 * (`repairPrivateModes`, the caller logs one warning when it tightened anything).
 *
 * POSIX only: on Windows modes are not ACLs and these functions do nothing (the default ACL of the per-user
 * `%APPDATA%` folder already keeps other accounts out; see docs/durability.md).
 */
import fs from 'node:fs';
import path from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

const posix = process.platform !== 'win32';

/** Creates an empty file with mode 0600 when `file` does not exist yet (before SQLite opens it: WAL and SHM copy its mode). */
export function ensurePrivateFile(file: string): void {
  fs.closeSync(fs.openSync(file, 'a', PRIVATE_FILE_MODE));
}

export interface ModeRepair {
  /** How many folders and files were tightened. */
  repaired: number;
  /** Up to five of them, relative to the data dir, with their former mode (e.g. `media 755`). */
  examples: string[];
}

/** Folders of the data dir that are entirely Switchboard's (walked to the bottom); other folders are left alone. */
const OWN_FOLDERS = new Set(['media', 'sandbox-server']);

/**
 * Creates `dataDir` (0700) if needed, then takes the group and other bits off the data dir itself, every file
 * directly in it (database, WAL, SHM, secrets, lock and log files) and everything under its own folders (`media/`,
 * `sandbox-server/`): 0755 becomes 0700, 0644 becomes 0600. Other folders (a data dir pointed at a folder that
 * holds more than Switchboard's data) and symbolic links are not touched; entries it cannot change (owned by
 * someone else) are left as they are. `ownDirs` are more folders that are entirely Switchboard's wherever they are
 * (a `--media-dir` outside the data dir): each is created (0700) when missing and walked the same way; its entries
 * are named by absolute path in `examples`.
 */
export function repairPrivateModes(dataDir: string, ownDirs: readonly string[] = []): ModeRepair {
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const result: ModeRepair = { repaired: 0, examples: [] };
  if (!posix) return result;
  const tighten = (p: string, st: fs.Stats) => {
    if (!(st.mode & 0o077)) return;
    try {
      fs.chmodSync(p, st.mode & 0o700);
      result.repaired++;
      const name = path.relative(dataDir, p);
      const shown = name === '' ? '.' : name.startsWith('..') || path.isAbsolute(name) ? p : name;
      if (result.examples.length < 5) result.examples.push(`${shown} ${(st.mode & 0o777).toString(8)}`);
    } catch {
      /* not ours to change */
    }
  };
  const children = (dir: string): Array<[string, fs.Stats]> => {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return [];
    }
    const out: Array<[string, fs.Stats]> = [];
    for (const name of names) {
      try {
        out.push([name, fs.lstatSync(path.join(dir, name))]);
      } catch {
        /* removed meanwhile */
      }
    }
    return out;
  };
  const walk = (dir: string) => {
    for (const [name, st] of children(dir)) {
      const p = path.join(dir, name);
      if (st.isSymbolicLink()) continue;
      tighten(p, st);
      if (st.isDirectory()) walk(p);
    }
  };
  tighten(dataDir, fs.lstatSync(dataDir));
  for (const [name, st] of children(dataDir)) {
    const p = path.join(dataDir, name);
    if (st.isFile()) tighten(p, st);
    else if (st.isDirectory() && OWN_FOLDERS.has(name)) {
      tighten(p, st);
      walk(p);
    }
  }
  for (const dir of ownDirs) {
    fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    tighten(dir, fs.lstatSync(dir));
    walk(dir);
  }
  return result;
}
