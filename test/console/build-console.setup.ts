/**
 * Vitest global setup: builds the operator console (renderer/ → dist/console) once before the run when it is
 * missing or older than its sources, so `npm ci && npm test` works on a fresh clone and the e2e sees the
 * current console.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

export function consoleIsStale(): boolean {
  const index = path.join(root, 'dist/console/index.html');
  if (!fs.existsSync(index)) return true;
  const built = fs.statSync(index).mtimeMs;
  const sources = Math.max(newestMtime(path.join(root, 'renderer/src')), fs.statSync(path.join(root, 'renderer/index.html')).mtimeMs);
  return sources > built;
}

export default async function setup(): Promise<void> {
  if (process.env.SWITCHBOARD_SKIP_CONSOLE_BUILD === '1' || !consoleIsStale()) return;
  const { build } = await import('vite');
  const started = Date.now();
  await build({ configFile: path.join(root, 'renderer/vite.config.ts'), logLevel: 'warn' });
  console.log(`[console] built dist/console in ${Date.now() - started} ms`);
}
