/**
 * Start-up failures of `switchboard serve`, through real child processes: a data dir held by another process
 * (one line naming the dir and the holder's PID; the lock goes with the holder, even after SIGKILL), a port in use
 * (one line suggesting --port), and a data dir that cannot be used (a file, a read-only file system): each one line
 * on stderr with the cause, exit code 1, nothing on stdout. The same for a `--media-dir` that cannot be used.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-startup-'));
const running: ServiceProcess[] = [];

afterAll(async () => {
  for (const s of running) await s.stop('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** `serve` that is expected to fail: its exit code, stdout and stderr. */
const failingServe = (args: string[]) => runCli(['serve', ...args], { SWITCHBOARD_LOG_LEVEL: 'warn' });

const oneLine = (stderr: string) => {
  expect(stderr.endsWith('\n')).toBe(true);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
  return stderr.trim();
};

describe('serve start-up errors are one line', { timeout: 60_000 }, () => {
  it('a second serve on the same data dir names the dir and the PID holding it', async () => {
    const dir = path.join(tmp, 'shared');
    const first = await startServe(['--port', '0', '--data-dir', dir]);
    running.push(first);
    expect(fs.readFileSync(path.join(dir, 'switchboard.pid'), 'utf8').trim()).toBe(String(first.child.pid));

    const second = await failingServe(['--port', '0', '--data-dir', dir]);
    expect(second.code).toBe(1);
    expect(second.stdout).toBe('');
    const line = oneLine(second.stderr);
    expect(line).toContain(path.resolve(dir));
    expect(line).toContain(`PID ${first.child.pid}`);
    expect(line).toContain('--data-dir');

    // One-shot commands still work next to the running service.
    expect((await runCli(['token', 'create', '--user', 'ops', '--data-dir', dir])).code).toBe(0);

    // The lock goes with its holder, however it ends.
    await first.stop('SIGKILL');
    const third = await startServe(['--port', '0', '--data-dir', dir]);
    running.push(third);
    expect(fs.readFileSync(path.join(dir, 'switchboard.pid'), 'utf8').trim()).toBe(String(third.child.pid));
    expect(await third.stop('SIGTERM')).toBe(0);
    expect(fs.existsSync(path.join(dir, 'switchboard.pid'))).toBe(false);
  });

  it('a port in use is one line suggesting --port', async () => {
    const holder = await startServe(['--port', '0', '--data-dir', path.join(tmp, 'port-a')]);
    running.push(holder);
    const port = new URL(holder.apiUrl).port;
    const res = await failingServe(['--port', port, '--data-dir', path.join(tmp, 'port-b')]);
    expect(res.code).toBe(1);
    const line = oneLine(res.stderr);
    expect(line).toContain(`127.0.0.1:${port}`);
    expect(line).toContain('in use');
    expect(line).toContain('--port');
    // The failed start released its data dir: it can be served right away.
    const again = await startServe(['--port', '0', '--data-dir', path.join(tmp, 'port-b')]);
    running.push(again);
    await holder.stop();
  });

  it('a data dir that is a file is one line with the cause', async () => {
    const file = path.join(tmp, 'a-file');
    fs.writeFileSync(file, 'not a dir');
    const res = await failingServe(['--port', '0', '--data-dir', file]);
    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe(`switchboard: cannot use data dir ${file}: it is a file, not a directory`);
    const below = await failingServe(['--port', '0', '--data-dir', path.join(file, 'sub')]);
    expect(oneLine(below.stderr)).toBe(`switchboard: cannot use data dir ${path.join(file, 'sub')}: a path component is a file, not a directory`);
    expect(fs.readFileSync(file, 'utf8')).toBe('not a dir');
  });

  it('a media dir that is a file is one line with the cause, and the data dir is released', async () => {
    const file = path.join(tmp, 'media-file');
    fs.writeFileSync(file, 'not a dir');
    const dir = path.join(tmp, 'media-file-data');
    const res = await failingServe(['--port', '0', '--data-dir', dir, '--media-dir', file]);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(oneLine(res.stderr)).toBe(`switchboard: cannot use media dir ${file}: it is a file, not a directory`);
    const env = await runCli(['serve', '--port', '0', '--data-dir', dir], { SWITCHBOARD_LOG_LEVEL: 'warn', SWITCHBOARD_MEDIA_DIR: path.join(file, 'sub') });
    expect(oneLine(env.stderr)).toBe(`switchboard: cannot use media dir ${path.join(file, 'sub')}: a path component is a file, not a directory`);
    expect(fs.readFileSync(file, 'utf8')).toBe('not a dir');
    expect(fs.existsSync(path.join(dir, 'switchboard.pid'))).toBe(false);
  });

  it.skipIf(process.platform === 'win32' || process.getuid?.() === 0)('an unwritable media dir is one line with the cause', async () => {
    const locked = path.join(tmp, 'locked-parent');
    fs.mkdirSync(locked, { mode: 0o500 });
    const res = await failingServe(['--port', '0', '--data-dir', path.join(tmp, 'locked-data'), '--media-dir', path.join(locked, 'media')]);
    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe(`switchboard: cannot use media dir ${path.join(locked, 'media')}: permission denied`);
    fs.chmodSync(locked, 0o700);
  });

  // Needs a read-only mount: root in a container that may mount tmpfs (skipped elsewhere, with the reason).
  const roDir = path.join(tmp, 'ro');
  let mounted = false;
  if (process.getuid?.() === 0) {
    try {
      fs.mkdirSync(roDir);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', roDir], { stdio: 'ignore' });
      mounted = true;
    } catch {
      console.log('[startup-errors] read-only case skipped: cannot mount a read-only tmpfs here');
    }
  }
  afterAll(() => {
    if (mounted) execFileSync('umount', [roDir]);
  });

  it.skipIf(!mounted)('a data dir on a read-only file system is one line with the cause', async () => {
    const res = await failingServe(['--port', '0', '--data-dir', roDir]);
    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe(`switchboard: cannot use data dir ${roDir}: read-only file system`);
    const media = await failingServe(['--port', '0', '--data-dir', path.join(tmp, 'ro-media-data'), '--media-dir', path.join(roDir, 'media')]);
    expect(media.code).toBe(1);
    expect(oneLine(media.stderr)).toBe(`switchboard: cannot use media dir ${path.join(roDir, 'media')}: read-only file system`);
  });
});
