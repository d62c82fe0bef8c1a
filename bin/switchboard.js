#!/usr/bin/env node
// Entry point of the `switchboard` command. Runs the TypeScript sources through tsx's loader,
// so a checkout works right after `npm ci` without a build step (`npm run build` emits dist/ for packaging).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../service/cli/main.ts');
const code = await main(process.argv.slice(2));
// End the process once the command is done: libraries may leave timers behind after a clean shutdown
// (Baileys rc14's prekey-upload timeout lingers for 30 s after its socket ends). Flush stdout first.
process.stdout.write('', () => process.exit(code));
