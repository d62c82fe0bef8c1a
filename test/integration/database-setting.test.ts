/**
 * `--database URL` / SWITCHBOARD_DATABASE_URL (issue 26 item 3) through the real CLI: `serve`, `token` and `user`
 * take it; `serve` in this build refuses a postgres:// URL with one line (exit 1, no stack trace) naming the URL with
 * its password masked, and `token`/`user` say the same way that a database they cannot reach cannot be used; the
 * password appears nowhere in stdout or stderr — with the log level at debug — nor in `--help`. A value that is not a
 * postgres:// URL is a usage error (exit 2) that does not repeat it. (`token`/`user` on a real PostgreSQL:
 * cli-postgres.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/service-process.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-database-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const PASSWORD = 'Tr0ub4dor-and-3-horses';
const URL_WITH_PASSWORD = `postgres://switchboard:${PASSWORD}@db.internal.example:5432/sb`;
const MASKED = 'postgres://switchboard:***@db.internal.example:5432/sb';
const REFUSAL = `switchboard: cannot use database ${MASKED}: PostgreSQL is not available in this build yet\n`;
/** A server that refuses connections (nothing listens on port 1). */
const UNREACHABLE = `postgres://switchboard:${PASSWORD}@127.0.0.1:1/sb`;
const UNREACHABLE_MASKED = 'postgres://switchboard:***@127.0.0.1:1/sb';

/** Pieces of the password as it could show up: as is, percent-encoded, base64, hex. */
const pieces = [PASSWORD, encodeURIComponent(PASSWORD), Buffer.from(PASSWORD).toString('base64').slice(0, 16), Buffer.from(PASSWORD).toString('hex')];
const expectNoPassword = (...outputs: string[]) => {
  for (const out of outputs) for (const piece of pieces) expect(out).not.toContain(piece);
};

describe('--database', { timeout: 60_000 }, () => {
  it('serve with a postgres URL (flag or variable) stops with one masked line, the password nowhere at debug', async () => {
    for (const [args, env] of [
      [['--database', URL_WITH_PASSWORD], {}],
      [[], { SWITCHBOARD_DATABASE_URL: URL_WITH_PASSWORD }],
    ] as const) {
      const res = await runCli(['serve', '--port', '0', '--data-dir', path.join(tmp, 'serve'), ...args], {
        ...env,
        SWITCHBOARD_LOG_LEVEL: 'debug',
        SWITCHBOARD_LOG_FORMAT: 'json',
      });
      expect(res.code).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toBe(REFUSAL);
      expectNoPassword(res.stdout, res.stderr);
    }
    // The refused start released its data dir.
    expect(fs.existsSync(path.join(tmp, 'serve', 'switchboard.pid'))).toBe(false);
  });

  it('token and user take --database and SWITCHBOARD_DATABASE_URL the same way: an unreachable one is one masked line', async () => {
    const dir = path.join(tmp, 'cli');
    for (const [args, env] of [
      [['token', 'create', '--user', 'ops', '--database', UNREACHABLE], {}],
      [['token', 'list', '--user', 'ops'], { SWITCHBOARD_DATABASE_URL: UNREACHABLE }],
      [['token', 'revoke', 'tok_1', '--database', UNREACHABLE], {}],
      [['user', 'list', '--database', UNREACHABLE], {}],
      [['user', 'create', 'ann'], { SWITCHBOARD_DATABASE_URL: UNREACHABLE }],
      [['user', 'disable', 'ann', '--database', UNREACHABLE], {}],
    ] as const) {
      const res = await runCli([...args, '--data-dir', dir], env);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(new RegExp(`^switchboard: cannot use database ${UNREACHABLE_MASKED.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*ECONNREFUSED.*\n$`));
      expectNoPassword(res.stdout, res.stderr);
    }
    // Nothing was written to the data dir's SQLite file instead.
    expect(fs.existsSync(path.join(dir, 'switchboard.db'))).toBe(false);
    // Without the URL the same data dir works as before.
    expect((await runCli(['user', 'create', 'ann', '--data-dir', dir])).code).toBe(0);
  });

  it('a value that is not a postgres URL is a usage error that does not repeat it', async () => {
    const res = await runCli(['serve', '--port', '0', '--data-dir', path.join(tmp, 'bad'), '--database', `mysql://u:${PASSWORD}@h/db`]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^switchboard: invalid --database value: expected a postgres:\/\/ URL/);
    expectNoPassword(res.stdout, res.stderr);
    const token = await runCli(['token', 'list', '--user', 'x', '--data-dir', path.join(tmp, 'bad')], { SWITCHBOARD_DATABASE_URL: PASSWORD });
    expect(token.code).toBe(2);
    expect(token.stderr).toMatch(/^switchboard: invalid SWITCHBOARD_DATABASE_URL value/);
    expectNoPassword(token.stdout, token.stderr);
  });

  it('serve --help and token/user --help describe it honestly', async () => {
    const serve = await runCli(['serve', '--help']);
    expect(serve.stdout).toContain('--database URL');
    expect(serve.stdout).toContain('SWITCHBOARD_DATABASE_URL');
    expect(serve.stdout).toContain('this build accepts only the default SQLite');
    expect(serve.stdout).toContain('--media-dir DIR');
    for (const command of ['token', 'user']) {
      const help = await runCli([command, '--help']);
      expect(help.stdout).toContain('--database URL');
      expect(help.stdout).toContain('its schema is created when missing');
    }
  });
});
