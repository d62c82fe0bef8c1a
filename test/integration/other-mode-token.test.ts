/**
 * A token of the other mode's data dir (issue 25 item 8): the live and sandbox data dirs are separate databases, so
 * a token made for one is unknown to a service running on the other. Its 401 keeps the spec's message and adds
 * which data dir the token belongs to and what to do, and nothing more: an unknown, revoked or disabled user's
 * token gets the plain message. The other database is only read (never created: a service whose other data dir
 * has no database leaves it so). The real service in-process, with the platform's default data dirs under a
 * temporary XDG_DATA_HOME (never the user's real one).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { generateToken, issueToken } from '../../service/auth/api-tokens.ts';
import { defaultDataDir, type PlatformInfo } from '../../service/config/data-dir.ts';
import { resolveServiceConfig, type ConfigFlags } from '../../service/config/service-config.ts';
import { openDataPlane } from '../../service/data-plane.ts';
import { startService, type RunningService } from '../../service/index.ts';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-other-mode-'));
const platform: PlatformInfo = { platform: 'linux', env: { XDG_DATA_HOME: path.join(home, 'data') }, homedir: home };
const liveDir = defaultDataDir(false, platform);
const sandboxDir = defaultDataDir(true, platform);
const PLAIN = 'Invalid or revoked API token';
const LIVE_HINT =
  'Invalid or revoked API token: this token belongs to the live data dir and this service runs in sandbox mode; ' +
  'start it without --sandbox, or create a sandbox token (token create --sandbox)';
const SANDBOX_HINT =
  'Invalid or revoked API token: this token belongs to the sandbox data dir and this service runs in live mode; ' +
  'start it with --sandbox, or create a live token (token create without --sandbox)';

/** `serve` with these flags and no environment, on the default data dirs under `home`. */
async function serve(flags: ConfigFlags): Promise<RunningService> {
  const config = resolveServiceConfig({ port: '0', workers: '0', logLevel: 'silent', ...flags }, {}, platform);
  return startService(config, { logger: pino({ level: 'silent' }) });
}

/** Issues a token in the database of `dataDir` (as `switchboard token create` does, next to a running service). */
function tokenIn(dataDir: string, user: string, opts: { revoke?: boolean; disable?: boolean } = {}): string {
  const plane = openDataPlane({ dataDir, role: 'tool' });
  const { store } = plane;
  try {
    const u = store.users.ensure(user);
    const { token, record } = issueToken(store.tokens, u.id, 'cli');
    if (opts.revoke) store.tokens.revoke(record.id);
    if (opts.disable) store.users.setDisabled(u.id, true);
    return token;
  } finally {
    plane.close();
  }
}

async function status(service: RunningService, token: string): Promise<{ status: number; message: string }> {
  const res = await fetch(`${service.apiUrl}/connections`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, message: ((await res.json()) as { message: string }).message };
}

describe('a token of the other data dir', { timeout: 60_000 }, () => {
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

  it('the config names the other mode\'s data dir only for the default data dirs', () => {
    expect(resolveServiceConfig({ sandbox: true }, {}, platform)).toMatchObject({ dataDir: sandboxDir, otherModeDataDir: liveDir });
    expect(resolveServiceConfig({}, {}, platform)).toMatchObject({ dataDir: liveDir, otherModeDataDir: sandboxDir });
    const explicit = resolveServiceConfig({ sandbox: true, dataDir: path.join(home, 'mine') }, {}, platform);
    expect(explicit.otherModeDataDir).toBeUndefined();
    expect(resolveServiceConfig({}, { SWITCHBOARD_DATA_DIR: path.join(home, 'env') }, platform).otherModeDataDir).toBeUndefined();
  });

  it('sandbox mode: a live token gets a 401 that says so; the live database is read, never created', async () => {
    const service = await serve({ sandbox: true });
    try {
      // No live database yet: the plain 401, and still no live database.
      expect(await status(service, generateToken())).toEqual({ status: 401, message: PLAIN });
      expect(fs.existsSync(path.join(liveDir, 'switchboard.db'))).toBe(false);

      const live = tokenIn(liveDir, 'me');
      const revoked = tokenIn(liveDir, 'me', { revoke: true });
      const disabled = tokenIn(liveDir, 'off', { disable: true });
      const sandboxToken = tokenIn(sandboxDir, 'me');
      expect(await status(service, live)).toEqual({ status: 401, message: LIVE_HINT });
      // Nothing about tokens that would not work over there either, nor about unknown ones.
      expect(await status(service, revoked)).toEqual({ status: 401, message: PLAIN });
      expect(await status(service, disabled)).toEqual({ status: 401, message: PLAIN });
      expect(await status(service, generateToken())).toEqual({ status: 401, message: PLAIN });
      expect(await status(service, 'wh_not-a-token')).toEqual({ status: 401, message: PLAIN });
      expect((await status(service, sandboxToken)).status).toBe(200);
      // A token made after the first look-up opened the live database is found too (no stale answer).
      expect(await status(service, tokenIn(liveDir, 'later'))).toEqual({ status: 401, message: LIVE_HINT });
    } finally {
      await service.close();
    }
  });

  it('live mode: a sandbox token gets a 401 that says so', async () => {
    const sandboxToken = tokenIn(sandboxDir, 'me');
    const service = await serve({}); // live mode without connections: nothing dials WhatsApp
    try {
      expect(await status(service, sandboxToken)).toEqual({ status: 401, message: SANDBOX_HINT });
      expect((await status(service, tokenIn(liveDir, 'me'))).status).toBe(200);
    } finally {
      await service.close();
    }
  });

  it('with an explicit data dir there is no other data dir to name', async () => {
    const mine = path.join(home, 'explicit');
    const config = resolveServiceConfig({ sandbox: true, dataDir: mine, port: '0', workers: '0' }, {}, platform);
    const service = await startService(config, { logger: pino({ level: 'silent' }) });
    try {
      expect(await status(service, tokenIn(liveDir, 'me'))).toEqual({ status: 401, message: PLAIN });
    } finally {
      await service.close();
    }
  });
});
