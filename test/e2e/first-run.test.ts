/**
 * The first run of a fresh clone (issue 17 item 13): the repository's files copied to a new directory without
 * dist/ (as `git clone` leaves them; the installed node_modules linked in, as `npm ci` would provide), then the
 * quick start's `serve`: it builds the console itself before it prints its `API:` line, and `/` answers the
 * console page and its script instead of the 503 "not built" page.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServiceProcess } from '../helpers/service-process.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Copies the files git knows (tracked, and untracked but not ignored) of the checkout into `dest`. */
function copyCheckout(dest: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root })
    .toString()
    .split('\0')
    .filter((f) => f !== '' && fs.existsSync(path.join(root, f)) && !fs.lstatSync(path.join(root, f)).isSymbolicLink());
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dest, file)), { recursive: true });
    fs.copyFileSync(path.join(root, file), path.join(dest, file));
  }
  fs.symlinkSync(fs.realpathSync(path.join(root, 'node_modules')), path.join(dest, 'node_modules'), 'dir');
}

describe('first run of a fresh clone', { timeout: 180_000 }, () => {
  const clone = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-clone-'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-clone-data-'));
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    fs.rmSync(clone, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('serve builds the console, then / serves it', async () => {
    copyCheckout(clone);
    expect(fs.existsSync(path.join(clone, 'dist'))).toBe(false);
    service = await startServe(['--port', '0', '--data-dir', dataDir], {}, { bin: path.join(clone, 'bin/switchboard.js'), timeoutMs: 150_000 });
    expect(service.stderr()).toContain('building the operator console');
    expect(fs.existsSync(path.join(clone, 'dist/console/index.html'))).toBe(true);

    const origin = new URL(service.apiUrl).origin;
    const page = await fetch(`${origin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const script = /<script[^>]+src="([^"]+)"/.exec(html)?.[1];
    expect(script).toMatch(/^\/assets\/.+\.js$/);
    const js = await fetch(`${origin}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
  });
});
