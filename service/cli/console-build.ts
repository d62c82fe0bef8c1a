/**
 * Builds the operator console (renderer/ → dist/console, with Vite) in a checkout when it is missing or older than
 * its sources, so the two quick-start commands give a working console at `/`. Used by `switchboard serve` (before
 * the service starts, one line on stderr while it builds) and by the test run's global setup. Does nothing outside
 * a checkout (no renderer/ sources next to the code, e.g. an installed package), when SWITCHBOARD_CONSOLE_DIR points
 * elsewhere, or with SWITCHBOARD_SKIP_CONSOLE_BUILD=1.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The checkout holding renderer/ (service/cli under tsx, dist/service/cli when built), if any. */
export function checkoutRoot(): string | undefined {
  return [path.resolve(here, '../..'), path.resolve(here, '../../..')].find((dir) =>
    fs.existsSync(path.join(dir, 'renderer/index.html')),
  );
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Whether `<root>/dist/console` is missing or older than renderer/src and renderer/index.html. */
export function consoleIsStale(root: string): boolean {
  const index = path.join(root, 'dist/console/index.html');
  if (!fs.existsSync(index)) return true;
  const built = fs.statSync(index).mtimeMs;
  const sources = Math.max(newestMtime(path.join(root, 'renderer/src')), fs.statSync(path.join(root, 'renderer/index.html')).mtimeMs);
  return sources > built;
}

/** Runs Vite's production build of the console in this process. @throws when Vite is not installed or fails. */
export async function buildConsole(root: string): Promise<void> {
  const { build } = await import('vite');
  await build({ configFile: path.join(root, 'renderer/vite.config.ts'), logLevel: 'warn' });
}

/**
 * Builds the console first when needed (see the module comment), writing `announce` lines on stderr.
 * A failed build is reported in one line; the service then answers `/` with how to build it.
 */
export async function ensureConsoleBuilt(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (env.SWITCHBOARD_SKIP_CONSOLE_BUILD === '1' || env.SWITCHBOARD_CONSOLE_DIR) return;
  const root = checkoutRoot();
  if (!root || !consoleIsStale(root)) return;
  process.stderr.write('switchboard: building the operator console (first run or renderer/ changed)…\n');
  try {
    await buildConsole(root);
  } catch (err) {
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    process.stderr.write(`switchboard: could not build the console (${message}); run 'npm run build:console'\n`);
  }
}
