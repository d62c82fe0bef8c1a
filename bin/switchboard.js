#!/usr/bin/env node
// Entry point of the `switchboard` command. Runs the compiled service (dist/, from `npm run build`) when it is at
// least as new as every source file under service/, and otherwise the TypeScript sources through tsx's loader, so
// a checkout works right after `npm ci` and an edited source file takes effect without a rebuild.
// SWITCHBOARD_FROM_SOURCE=1 forces the sources. The compiled code runs without tsx's loader and source maps
// (less memory, cheaper `Error` stacks in Baileys' hot paths).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const compiledMain = path.join(root, 'dist/service/cli/main.js');

/** Newest modification time (ms) of a `.ts` file under `dir`. */
function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

function compiledIsCurrent() {
  if (process.env.SWITCHBOARD_FROM_SOURCE === '1') return false;
  try {
    return fs.statSync(compiledMain).mtimeMs >= newestSource(path.join(root, 'service'));
  } catch {
    return false; // not built (or no sources next to it)
  }
}

let main;
if (compiledIsCurrent()) {
  ({ main } = await import(compiledMain));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../service/cli/main.ts'));
}
const code = await main(process.argv.slice(2));
// End the process once the command is done: libraries may leave timers behind after a clean shutdown
// (Baileys rc14's prekey-upload timeout lingers for 30 s after its socket ends). Flush stdout first.
process.stdout.write('', () => process.exit(code));
