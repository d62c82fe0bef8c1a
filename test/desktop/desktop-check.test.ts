/**
 * `npm run desktop`'s first step (bin/desktop-check.js): without the Electron binary, one line saying what to do
 * and exit 1; with it, silence and exit 0. The electron package dir is a temporary copy of its layout
 * (SWITCHBOARD_ELECTRON_DIR), so both cases run on any machine.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-electron-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const check = () => spawnSync(process.execPath, ['bin/desktop-check.js'], { env: { ...process.env, SWITCHBOARD_ELECTRON_DIR: dir }, encoding: 'utf8' });

describe('npm run desktop without the Electron binary', () => {
  it('says what to do in one line', () => {
    const res = check();
    expect(res.status).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(res.stderr).toContain('node node_modules/electron/install.js');
  });

  it('passes when the binary is there', () => {
    fs.writeFileSync(path.join(dir, 'path.txt'), 'electron');
    expect(check().status).toBe(1); // path.txt alone, no binary
    fs.mkdirSync(path.join(dir, 'dist'));
    fs.writeFileSync(path.join(dir, 'dist/electron'), '');
    const res = check();
    expect(res.status).toBe(0);
    expect(res.stderr).toBe('');
  });
});
