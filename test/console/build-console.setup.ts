/**
 * Vitest global setup: builds the operator console (renderer/ → dist/console) once before the run when it is
 * missing or older than its sources, so `npm ci && npm test` works on a fresh clone and the e2e sees the
 * current console. The logic is the one `switchboard serve` uses on first run (service/cli/console-build.ts).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildConsole, consoleIsStale as staleAt } from '../../service/cli/console-build.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function consoleIsStale(): boolean {
  return staleAt(root);
}

export default async function setup(): Promise<void> {
  if (process.env.SWITCHBOARD_SKIP_CONSOLE_BUILD === '1' || !consoleIsStale()) return;
  const started = Date.now();
  await buildConsole(root);
  console.log(`[console] built dist/console in ${Date.now() - started} ms`);
}
