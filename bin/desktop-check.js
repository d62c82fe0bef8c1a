#!/usr/bin/env node
// `npm run desktop` runs this first: when the Electron binary is missing (npm ci installs the electron package
// without it; see docs/desktop.md), it says what to do in one line and exits 1, instead of Electron's own
// "failed to install correctly, please delete node_modules/electron" error. Reads the same files as the electron
// package's index.js (path.txt and dist/), without loading it; SWITCHBOARD_ELECTRON_DIR overrides the package dir
// (tests).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = process.env.SWITCHBOARD_ELECTRON_DIR ?? path.join(root, 'node_modules/electron');
const pathFile = path.join(dir, 'path.txt');
const binary = fs.existsSync(pathFile) ? path.join(process.env.ELECTRON_OVERRIDE_DIST_PATH ?? path.join(dir, 'dist'), fs.readFileSync(pathFile, 'utf8').trim()) : undefined;
if (!binary || !fs.existsSync(binary)) {
  process.stderr.write(
    'switchboard: the Electron binary is not installed; run `node node_modules/electron/install.js` once (needs internet), then `npx electron-builder@26.17.0 install-app-deps` (see docs/desktop.md)\n',
  );
  process.exit(1);
}
