/**
 * Vitest global setup: the whole run lives in a home of its own, and fails when anything touched the user's real
 * Switchboard data dir.
 *
 * Before any test starts it points every variable the service's default data dir (config/data-dir.ts: HOME,
 * XDG_DATA_HOME, APPDATA), the desktop app (XDG_CONFIG_HOME, LOCALAPPDATA, USERPROFILE) and the OS keychain (the
 * D-Bus session bus of the Secret Service, XDG_RUNTIME_DIR) would use at a temporary folder. Vitest starts its
 * workers after this, with this process's environment, and tests spawn their children with `process.env`, so the
 * redirect covers every process of the run; a test that needs a keychain starts its own (dbus-run-session with a
 * private gnome-keyring, test/desktop/secret-store.test.ts). The D-Bus address names a socket nothing listens on, so
 * neither the Secret Service of the user's session nor D-Bus autolaunch can be reached.
 *
 * After the run it fails it (the teardown throws, vitest exits 1) when
 * - the real default data dir (the live one, which holds the sandbox one) was created, removed or changed: its
 *   files, sizes and modification times are compared with the snapshot taken before (while a Switchboard of the
 *   user's own holds the dir — its PID file names a live process — only that it is still there is checked, since
 *   that process writes to it), or
 * - the default data dir of the temporary home exists: some test or a process it started used the default data
 *   dir instead of a folder of its own — what a service started by importing a module does (issue 25 item 1).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultDataDir } from '../../service/config/data-dir.ts';

/** Every file and folder under `dir` (relative path → kind, size, mtime); undefined when `dir` does not exist. */
function snapshot(dir: string): Map<string, string> | undefined {
  if (!fs.existsSync(dir)) return undefined;
  const entries = new Map<string, string>();
  const walk = (at: string) => {
    for (const d of fs.readdirSync(at, { withFileTypes: true })) {
      const file = path.join(at, d.name);
      const st = fs.lstatSync(file);
      entries.set(path.relative(dir, file), `${d.isDirectory() ? 'dir' : 'file'} ${st.size} ${st.mtimeMs}`);
      if (d.isDirectory()) walk(file);
    }
  };
  walk(dir);
  return entries;
}

/** What changed between two snapshots, one line each (empty when nothing). */
function differences(before: Map<string, string> | undefined, after: Map<string, string> | undefined): string[] {
  if (!before && !after) return [];
  if (!before) return [`created (${after!.size} entries: ${[...after!.keys()].slice(0, 5).join(', ')}…)`];
  if (!after) return ['removed'];
  const out: string[] = [];
  for (const [name, was] of before) {
    const now = after.get(name);
    if (now === undefined) out.push(`${name} removed`);
    else if (now !== was) out.push(`${name} changed`);
  }
  for (const name of after.keys()) if (!before.has(name)) out.push(`${name} created`);
  return out;
}

/** The PID in `<dir>/switchboard.pid` when that process is alive (a service the user runs on the dir). */
function liveHolder(dir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'switchboard.pid'), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** The variables this setup sets, for the temporary home `home`. */
export function isolatedEnvironment(home: string): Record<string, string> {
  const runtime = path.join(home, 'run');
  return {
    HOME: home,
    USERPROFILE: home,
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_RUNTIME_DIR: runtime,
    APPDATA: path.join(home, 'AppData', 'Roaming'),
    LOCALAPPDATA: path.join(home, 'AppData', 'Local'),
    // A socket path nothing listens on: the Secret Service is unreachable, and set means no autolaunch.
    DBUS_SESSION_BUS_ADDRESS: `unix:path=${path.join(runtime, 'no-session-bus')}`,
  };
}

export default function setup(): () => void {
  const platform = process.platform;
  // The real default data dir as the service computes it from the user's environment (os.homedir() reads HOME).
  const real = defaultDataDir(false, { platform, env: { ...process.env }, homedir: os.homedir() });
  const holder = liveHolder(real);
  const before = holder ? undefined : snapshot(real);

  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sb-test-home-')));
  const env = isolatedEnvironment(home);
  fs.mkdirSync(env.XDG_RUNTIME_DIR!, { mode: 0o700 });
  // X clients (the Electron test, under a real display) look for their cookie in HOME unless XAUTHORITY says where.
  const xauthority = path.join(os.homedir(), '.Xauthority');
  if (process.env.DISPLAY && !process.env.XAUTHORITY && fs.existsSync(xauthority)) process.env.XAUTHORITY = xauthority;
  Object.assign(process.env, env);
  const isolated = defaultDataDir(false, { platform, env: process.env, homedir: os.homedir() });
  if (isolated === real || !isolated.startsWith(home))
    throw new Error(`the test home did not move the default data dir (${isolated})`);

  return () => {
    const problems: string[] = [];
    if (holder) {
      if (!fs.existsSync(real)) problems.push(`${real}: removed`);
    } else {
      problems.push(...differences(before, snapshot(real)).map((d) => `${real}: ${d}`));
    }
    if (fs.existsSync(isolated)) {
      const found = [...(snapshot(isolated)?.keys() ?? [])].slice(0, 8).join(', ');
      problems.push(`${isolated} (the default data dir of the run's home) exists: ${found || 'empty'}`);
    }
    fs.rmSync(home, { recursive: true, force: true });
    if (problems.length > 0) {
      throw new Error(
        'Tests wrote to a default data dir; every test must use a data dir of its own (--data-dir, ' +
          `SWITCHBOARD_DATA_DIR), and no module may start a service when imported:\n  ${[...new Set(problems)].join('\n  ')}`,
      );
    }
  };
}
