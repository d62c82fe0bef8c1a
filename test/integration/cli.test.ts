/**
 * The `switchboard` CLI as other programs use it, run as child processes: `serve`'s exact stdout lines and
 * clean SIGTERM exit (live and sandbox mode), token create/list/revoke against a running service, usage
 * errors (exit 2), and a foreign database refused without being touched (exit 1).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../service/config/version.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'bin/switchboard.js');
const tmpDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'sb-cli-'));

/** Runs `serve`, waits for `lines` stdout lines, sends SIGTERM, and returns stdout, stderr and the exit code. */
async function serveAndStop(
  args: string[],
  lines: number,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const child = spawn(process.execPath, [bin, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.split('\n').length > lines) resolve();
    });
    void exited.then((code) => reject(new Error(`serve exited early (${code}): ${stderr}`)));
  });
  const health = await fetch(`${/^API: (\S+)$/m.exec(stdout)![1]}/`);
  expect(health.status).toBe(200);
  child.kill('SIGTERM');
  return { stdout, stderr, code: await exited };
}

describe('switchboard serve', () => {
  it('prints exactly the API line, picks a free port with --port 0, and exits 0 on SIGTERM', async () => {
    const dir = tmpDir();
    const { stdout, stderr, code } = await serveAndStop(
      ['--port', '0', '--data-dir', dir],
      1,
    );
    expect(stdout).toMatch(/^API: http:\/\/127\.0\.0\.1:\d+\/api\n$/);
    expect(stdout).not.toContain(':7575');
    expect(code).toBe(0);
    for (const line of stderr.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow(); // logs: JSON on stderr
    expect(fs.existsSync(path.join(dir, 'switchboard.db'))).toBe(true);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('in sandbox mode prints the API and Sandbox lines and exits 0 on SIGTERM', async () => {
    const dir = tmpDir();
    const { stdout, code } = await serveAndStop(['--sandbox', '--port', '0', '--data-dir', dir], 2);
    expect(stdout).toMatch(/^API: http:\/\/127\.0\.0\.1:\d+\/api\nSandbox: http:\/\/127\.0\.0\.1:\d+\n$/);
    expect(code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'sandbox-server'))).toBe(true);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('in sandbox mode keeps the Sandbox URL across restarts of one data dir, and says so when its port was taken', { timeout: 120_000 }, async () => {
    const dir = tmpDir();
    const sandboxLine = (stdout: string) => /^Sandbox: (\S+)$/m.exec(stdout)![1]!;
    try {
      const first = sandboxLine((await serveAndStop(['--sandbox', '--port', '0', '--data-dir', dir], 2)).stdout);
      const again = sandboxLine((await serveAndStop(['--sandbox', '--port', '0', '--data-dir', dir], 2)).stdout);
      expect(again).toBe(first); // a reader's SANDBOX=… still works after a restart

      const port = Number(new URL(first).port);
      const squatter = createServer();
      await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
      try {
        const moved = await serveAndStop(['--sandbox', '--port', '0', '--data-dir', dir, '--log-format', 'json'], 2);
        expect(sandboxLine(moved.stdout)).not.toBe(first);
        const warning = moved.stderr
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { level: number; msg: string })
          .find((l) => l.msg.startsWith("The sandbox's port"));
        expect(warning?.level).toBe(40);
        expect(warning?.msg).toBe(
          `The sandbox's port ${port} (from its last start) is in use by another program, so it listens on ` +
            `${sandboxLine(moved.stdout)} now and keeps that port from here on: update SANDBOX to the new Sandbox: line`,
        );
      } finally {
        await new Promise((resolve) => squatter.close(resolve));
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a file that is not its database with one line on stderr and exit 1, leaving it untouched', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'switchboard.db');
    fs.writeFileSync(file, 'this is not a database '.repeat(100));
    const before = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
    const res = await runCli(['serve', '--port', '0', '--data-dir', dir]);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^switchboard: Cannot use .*switchboard\.db as the Switchboard database: .+\n$/);
    expect(createHash('sha256').update(fs.readFileSync(file)).digest('hex')).toBe(before);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    [['serve', '--bogus'], /^switchboard: unknown option --bogus\nRun 'switchboard serve --help' for usage\.\n$/],
    // A bad value of a command's setting points at that command's help, which lists the setting (issue 25 item 8).
    [['serve', '--port', 'abc'], /^switchboard: invalid --port value "abc": expected a port number 0-65535\nRun 'switchboard serve --help' for usage\.\n$/],
    [['sandbox', '--port', 'abc'], /^switchboard: invalid --port value "abc": expected a port number 0-65535\nRun 'switchboard sandbox --help' for usage\.\n$/],
    [['serve', '--log-level', 'loud'], /invalid --log-level value "loud"/],
    [['serve', '--wa-url', 'http://x'], /invalid --wa-url value "http:\/\/x": expected a ws:\/\/ or wss:\/\/ URL/],
    [['serve', '--wa-url', 'ws://127.0.0.1:9/ws/chat'], /^switchboard: --wa-url is for sandbox mode only/],
    [['serve', '--public-url', 'localhost:7575/api'], /^switchboard: invalid --public-url value "localhost:7575\/api": expected the API's public base URL: http:\/\/ or https:\/\/, no query, fragment or credentials \(e\.g\. https:\/\/wa\.example\.com\/api\)\nRun 'switchboard serve --help' for usage\.\n$/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['token', 'create'], /--user NAME \(or --user-id ID\) is required/],
    [['token', 'revoke'], /expected exactly one token ID/],
    [['token', 'rotate'], /unknown subcommand "rotate"/],
  ])('usage error %j → exit 2 with a message on stderr', async (args, message) => {
    const res = await runCli(args);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(message);
  });

  it('runs from a checkout the way the README says: npm run cli -- <command>, and every npm run it names exists', async () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const scripts = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const named = [...readme.matchAll(/npm run (?:--silent )?([\w:-]+)/g)].map((m) => m[1]!);
    expect(named).toContain('cli');
    for (const name of named) expect(scripts, `npm run ${name}`).toHaveProperty(name);
    expect(scripts.serve).toBe(`${scripts.cli} serve`); // `npm run serve -- …` is `npm run cli -- serve …`
    const res = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn('npm', ['run', '--silent', 'cli', '--', '--version'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.once('exit', (code) => resolve({ code, stdout }));
    });
    expect(res).toEqual({ code: 0, stdout: `${VERSION}\n` });
  });

  it('prints help on stdout with exit 0', async () => {
    for (const args of [['--help'], ['serve', '--help'], ['token', '--help'], ['sandbox', '--help'], ['migrate', '--help']]) {
      const res = await runCli(args);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/^Usage/);
    }
  });
});

describe('switchboard token', () => {
  let dir: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    dir = tmpDir();
    service = await startServe(['--port', '0', '--data-dir', dir]); // live mode, no connection: nothing dials out
  });
  afterAll(async () => {
    await service.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const connections = (token: string) =>
    fetch(`${service.apiUrl}/connections`, { headers: { authorization: `Bearer ${token}` } });

  it('create prints exactly one token line, which authenticates against the running service', async () => {
    const res = await runCli(['token', 'create', '--user', 'alice', '--name', 'ci', '--data-dir', dir]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^wh_[0-9A-Za-z]{49}\n$/);
    expect((await connections(res.stdout.trim())).status).toBe(200);
  });

  it('list shows the tokens without the secret; revoke makes a token fail with 401', async () => {
    const token = (await runCli(['token', 'create', '--user', 'bob', '--data-dir', dir])).stdout.trim();
    const list = await runCli(['token', 'list', '--user', 'bob', '--data-dir', dir]);
    expect(list.code).toBe(0);
    const [header, row, ...rest] = list.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+PREFIX\s+CREATED\s+LAST USED$/);
    expect(rest).toEqual([]);
    const [id, name, prefix, , lastUsed] = row!.split(/\s{2,}/);
    expect({ name, prefix, lastUsed }).toEqual({ name: 'cli', prefix: token.slice(0, 10), lastUsed: '-' });
    expect(list.stdout).not.toContain(token);

    expect((await connections(token)).status).toBe(200);
    const revoked = await runCli(['token', 'revoke', id!, '--data-dir', dir]);
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked ${id}\n` });
    const res = await connections(token);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ message: 'Invalid or revoked API token' });

    expect(await runCli(['token', 'revoke', id!, '--data-dir', dir])).toMatchObject({
      code: 0,
      stderr: `token ${id} was already revoked\n`,
    });
    expect(
      (await runCli(['token', 'list', '--user', 'bob', '--data-dir', dir])).stdout.trim().split('\n'),
    ).toHaveLength(1);
  });

  it('fails with exit 1 for an unknown token or user', async () => {
    expect(await runCli(['token', 'revoke', 'nope', '--data-dir', dir])).toMatchObject({
      code: 1,
      stderr: 'switchboard: no token with id nope\n',
    });
    expect(await runCli(['token', 'list', '--user', 'nobody', '--data-dir', dir])).toMatchObject({
      code: 1,
      stderr: 'switchboard: no local user named "nobody"\n',
    });
  });

  it('--sandbox selects the sandbox data dir under the default one', async () => {
    const xdg = tmpDir();
    const res = await runCli(['token', 'create', '--user', 'alice', '--sandbox'], {
      XDG_DATA_HOME: xdg,
      SWITCHBOARD_DATA_DIR: '',
    });
    expect(res.code).toBe(0);
    expect(fs.existsSync(path.join(xdg, 'switchboard', 'sandbox', 'switchboard.db'))).toBe(true);
    expect(fs.existsSync(path.join(xdg, 'switchboard', 'switchboard.db'))).toBe(false);
    fs.rmSync(xdg, { recursive: true, force: true });
  });
});
