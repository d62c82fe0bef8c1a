/**
 * The `mediaDir` and `database` settings (issue 26 item 3): where each comes from (flag > env > settings.json for
 * the media dir; flag > env only for the database), their checks, and the database URL's password never shown —
 * not by String(), JSON, util.inspect, a logger, a ConfigError or the one-line refusal of this build.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseRefusal, DatabaseUrl, parseDatabaseUrl, redactDatabaseUrl } from '../../service/config/database-url.ts';
import { StartupError } from '../../service/config/data-dir-lock.ts';
import { MachineSettings } from '../../service/config/machine-settings.ts';
import { writeSettingsFile } from '../../service/config/settings-file.ts';
import { ConfigError, resolveDatabase, resolveServiceConfig } from '../../service/config/service-config.ts';
import { openDataPlane, POSTGRES_UNAVAILABLE } from '../../service/data-plane.ts';

const PASSWORD = 'pa55-w0rd_Secret';
const URL_WITH_PASSWORD = `postgres://app:${PASSWORD}@db.example.com:5432/switchboard`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-db-settings-'));
const linux = { platform: 'linux' as const, env: {}, homedir: tmp };
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('mediaDir', () => {
  it('defaults to none (the service uses <dataDir>/media) and comes from settings.json, env or flag, made absolute', () => {
    const dir = path.join(tmp, 'data');
    expect(resolveServiceConfig({ dataDir: dir }, {}, linux).mediaDir).toBeUndefined();
    writeSettingsFile(dir, { mediaDir: '/srv/from-file' });
    expect(resolveServiceConfig({ dataDir: dir }, {}, linux).mediaDir).toBe('/srv/from-file');
    const env = { SWITCHBOARD_MEDIA_DIR: '/srv/from-env' };
    expect(resolveServiceConfig({ dataDir: dir }, env, linux).mediaDir).toBe('/srv/from-env');
    expect(resolveServiceConfig({ dataDir: dir, mediaDir: 'rel/media' }, env, linux).mediaDir).toBe(path.resolve('rel/media'));
  });

  it('refuses an empty flag value', () => {
    expect(() => resolveServiceConfig({ dataDir: tmp, mediaDir: ' ' }, {}, linux)).toThrow(/invalid --media-dir value/);
  });
});

describe('database', () => {
  it('comes from --database or SWITCHBOARD_DATABASE_URL, the flag first; absent: the SQLite file', () => {
    expect(resolveServiceConfig({ dataDir: tmp }, {}, linux).database).toBeUndefined();
    const env = { SWITCHBOARD_DATABASE_URL: 'postgres://env@h/db' };
    expect(resolveServiceConfig({ dataDir: tmp }, env, linux).database?.reveal()).toBe('postgres://env@h/db');
    expect(resolveDatabase({ database: 'postgresql://flag@h/db' }, env)?.reveal()).toBe('postgresql://flag@h/db');
  });

  it('is not accepted in settings.json (the file would hold the password)', () => {
    const dir = path.join(tmp, 'file-db');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ database: URL_WITH_PASSWORD }));
    let err: unknown;
    try {
      resolveServiceConfig({ dataDir: dir }, {}, linux);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('database cannot be set in the settings file');
    expect((err as Error).message).not.toContain(PASSWORD);
  });

  it.each([
    `mysql://app:${PASSWORD}@h/db`,
    `${PASSWORD}`,
    `postgres://app:${PASSWORD}@/db`,
  ])('refuses %s without repeating it', (value) => {
    let err: unknown;
    try {
      resolveDatabase({}, { SWITCHBOARD_DATABASE_URL: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^invalid SWITCHBOARD_DATABASE_URL value: expected a postgres:\/\/ URL/);
    expect((err as Error).message).not.toContain(PASSWORD);
  });

  it('masks the password wherever the URL is shown', () => {
    const db = parseDatabaseUrl(URL_WITH_PASSWORD, '--database');
    const masked = 'postgres://app:***@db.example.com:5432/switchboard';
    expect(db.display).toBe(masked);
    expect(String(db)).toBe(masked);
    expect(`${db}`).toBe(masked);
    expect(JSON.stringify({ db })).toBe(JSON.stringify({ db: masked }));
    expect(inspect({ db })).toContain(masked);
    expect(inspect({ db })).not.toContain(PASSWORD);
    expect(db.reveal()).toBe(URL_WITH_PASSWORD);
    // A password given as a parameter (libpq's ?password=) and a percent-encoded one.
    expect(redactDatabaseUrl(`postgres://app@h/db?sslmode=require&password=${PASSWORD}`)).toBe('postgres://app@h/db?sslmode=require&password=***');
    expect(redactDatabaseUrl('postgres://app:p%40ss@h/db')).toBe('postgres://app:***@h/db');
    expect(redactDatabaseUrl('postgres://h/db')).toBe('postgres://h/db');
    expect(redactDatabaseUrl('not a url')).toBe('[redacted]');
  });

  it('never reaches a log line: a logged config shows the masked URL', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (l: string) => lines.push(l) });
    const config = resolveServiceConfig({ dataDir: tmp, database: URL_WITH_PASSWORD }, {}, linux);
    logger.debug({ config, database: config.database }, 'config');
    logger.error({ err: new Error(`boom ${config.database}`) }, 'failed');
    expect(lines.join('')).toContain('postgres://app:***@db.example.com');
    expect(lines.join('')).not.toContain(PASSWORD);
  });

  it("this build's refusal is one StartupError line naming the masked URL, the password scrubbed from any cause", () => {
    const db = new DatabaseUrl(URL_WITH_PASSWORD);
    let thrown: unknown;
    try {
      openDataPlane({ dataDir: tmp, role: 'tool', database: db.reveal() });
    } catch (e) {
      thrown = e;
    }
    const refusal = databaseRefusal(thrown, db);
    expect(refusal).toBeInstanceOf(StartupError);
    expect(refusal.message).toBe(`cannot use database postgres://app:***@db.example.com:5432/switchboard: ${POSTGRES_UNAVAILABLE}`);
    const leaky = databaseRefusal(new Error('auth failed for p@ss (p%40ss)\n    at connect'), new DatabaseUrl('postgres://a:p%40ss@h/d'));
    expect(leaky.message).toBe('cannot use database postgres://a:***@h/d: auth failed for *** (***)');
  });

  it('the settings API (GET and PATCH /api/settings) never carries it, set or bad', async () => {
    for (const url of [URL_WITH_PASSWORD, `mysql://x:${PASSWORD}@h/db`]) {
      const dir = fs.mkdtempSync(path.join(tmp, 'machine-'));
      const env = { SWITCHBOARD_DATABASE_URL: url };
      const settings = new MachineSettings({ dataDir: dir, flags: { database: url }, env, allowLanWebhooks: false, openKeychain: null });
      const answers = [JSON.stringify(await settings.view())];
      answers.push(JSON.stringify(await settings.update({ workerId: 'desk-1' }).catch((e: unknown) => ({ error: String(e) }))));
      for (const answer of answers) expect(answer).not.toContain(PASSWORD);
    }
  });
});
