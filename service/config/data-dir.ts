/**
 * Where Switchboard keeps its data by default, per platform, and the fixed layout inside a data dir.
 * Sandbox mode gets its own default folder (`<default>/sandbox`), like a payment provider's test mode,
 * so simulated accounts never mix with real ones.
 */
import os from 'node:os';
import path from 'node:path';

export interface PlatformInfo {
  platform: NodeJS.Platform;
  env: NodeJS.ProcessEnv;
  homedir: string;
}

const currentPlatform = (): PlatformInfo => ({ platform: process.platform, env: process.env, homedir: os.homedir() });

/**
 * Default data dir: `%APPDATA%/Switchboard` (Windows), `~/Library/Application Support/Switchboard` (macOS),
 * `$XDG_DATA_HOME/switchboard` or `~/.local/share/switchboard` (Linux and others); `<that>/sandbox` in sandbox mode.
 */
export function defaultDataDir(sandbox: boolean, p: PlatformInfo = currentPlatform()): string {
  const paths = p.platform === 'win32' ? path.win32 : path.posix;
  const base = liveDataDir(p, paths);
  return sandbox ? paths.join(base, 'sandbox') : base;
}

function liveDataDir({ platform, env, homedir }: PlatformInfo, paths: path.PlatformPath): string {
  if (platform === 'win32') return paths.join(env.APPDATA || paths.join(homedir, 'AppData', 'Roaming'), 'Switchboard');
  if (platform === 'darwin') return paths.join(homedir, 'Library', 'Application Support', 'Switchboard');
  // XDG says a relative XDG_DATA_HOME is invalid and must be ignored.
  const xdg = env.XDG_DATA_HOME;
  return paths.join(xdg && paths.isAbsolute(xdg) ? xdg : paths.join(homedir, '.local', 'share'), 'switchboard');
}

/**
 * Paths inside a data dir: the service database is `<dataDir>/switchboard.db` (service/data-plane.ts); `mediaDir` is
 * the default of `--media-dir`.
 */
export const dataPaths = (dataDir: string) => ({
  mediaDir: path.join(dataDir, 'media'),
  sandboxServerDir: path.join(dataDir, 'sandbox-server'),
});
