#!/usr/bin/env node
// Entry point of the `switchboard` command. Runs the TypeScript sources through tsx's loader,
// so a checkout works right after `npm ci` without a build step (`npm run build` emits dist/ for packaging).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../service/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
