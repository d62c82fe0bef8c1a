/**
 * Fault: the sandbox's database (`<dataDir>/sandbox-server/sandbox.db`) is corrupt when `switchboard sandbox` starts.
 * It must refuse with a clear error naming the file and a non-zero exit, leaving the file byte-for-byte intact.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/switchboard.js');

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-fault-sbdb-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const sha = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** Runs `switchboard sandbox …`; killed after 20 s, so a sandbox that starts anyway fails the test instead of hanging it. */
const runSandbox = (args: string[]) =>
  new Promise<{ code: number | null; stdout: string; stderr: string; killed: boolean }>((resolve) => {
    const child = execFile(process.execPath, [bin, 'sandbox', ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: child.exitCode, stdout, stderr, killed: !!err?.killed });
    });
  });

describe('switchboard sandbox with a corrupt database', () => {
  it('refuses to start with a clear error and leaves the file untouched', { timeout: 30_000 }, async () => {
    const serverDir = path.join(dir, 'sandbox-server');
    fs.mkdirSync(serverDir, { recursive: true });
    const file = path.join(serverDir, 'sandbox.db');
    fs.writeFileSync(file, Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 0xff)]));
    const before = sha(file);
    const res = await runSandbox(['--port', '0', '--data-dir', dir]);
    expect(res.killed).toBe(false);
    expect(res.code).toBe(1);
    expect(res.stdout).not.toMatch(/^Sandbox: /m);
    expect(res.stderr).toMatch(/sandbox\.db/);
    expect(res.stderr.trim().split('\n').length).toBeLessThanOrEqual(3); // an error line, not a stack dump
    expect(sha(file)).toBe(before);
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
  });
});
