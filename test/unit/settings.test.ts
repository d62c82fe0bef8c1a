/**
 * The one settings table (service/config/settings-table.ts) and the settings file: settings.json written and read
 * back (0600, atomic, only what the table allows), precedence flags > env > settings file > default for every kind
 * of value, errors that name the file key, `serve --help` and serve's flags generated from the table (the real CLI's
 * output compared), and docs/settings.md in step with the table.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../../service/config/load-config.ts';
import { ConfigError, resolveServiceConfig } from '../../service/config/service-config.ts';
import { formatServeHelp, withReference } from '../../service/config/settings-docs.ts';
import { readSettingsFile, settingsFilePath, writeSettingsFile } from '../../service/config/settings-file.ts';
import { SETTINGS, serveParseOptions, type SettingSpec } from '../../service/config/settings-table.ts';
import { runCli } from '../helpers/service-process.ts';

const dirs: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-settings-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

const rows = SETTINGS as readonly SettingSpec[];

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('settings.json', () => {
  it('round-trips through an atomic 0600 write, leaving no temporary file', () => {
    const dir = tmp();
    expect(readSettingsFile(dir)).toEqual({});
    const values = { port: 7600, workerId: 'desk-1', allowLanWebhooks: true, allowedHosts: ['a.local', 'b.local'] };
    writeSettingsFile(dir, values);
    expect(readSettingsFile(dir)).toEqual(values);
    writeSettingsFile(dir, { port: 7601 });
    expect(readSettingsFile(dir)).toEqual({ port: 7601 });
    expect(fs.readdirSync(dir)).toEqual(['settings.json']);
    if (process.platform !== 'win32') expect(fs.statSync(settingsFilePath(dir)).mode & 0o777).toBe(0o600);
  });

  it('a data dir that does not exist yet has no settings', () => {
    expect(readSettingsFile(path.join(tmp(), 'missing'))).toEqual({});
  });

  it('refuses what the table does not allow in the file, naming the key, and writes nothing', () => {
    const dir = tmp();
    writeSettingsFile(dir, { workerId: 'kept' });
    const before = fs.readFileSync(settingsFilePath(dir), 'utf8');
    expect(configError(() => writeSettingsFile(dir, { prot: 7600 }))).toMatch(/unknown setting "prot"/);
    expect(configError(() => writeSettingsFile(dir, { stripeSecretKey: 'sk_test_x' }))).toMatch(/OS keychain or the environment/);
    expect(configError(() => writeSettingsFile(dir, { dataDir: '/elsewhere' }))).toMatch(/--data-dir or SWITCHBOARD_DATA_DIR/);
    expect(configError(() => writeSettingsFile(dir, { waUrl: 'ws://evil.example/ws' }))).toMatch(/waUrl cannot be set/);
    expect(configError(() => writeSettingsFile(dir, { port: '7600' }))).toMatch(/"port" value "7600": expected a whole number/);
    expect(configError(() => writeSettingsFile(dir, { allowLanWebhooks: 'yes' }))).toMatch(/expected true or false/);
    expect(fs.readFileSync(settingsFilePath(dir), 'utf8')).toBe(before);

    fs.writeFileSync(settingsFilePath(dir), '{"port": 7600,');
    expect(configError(() => readSettingsFile(dir))).toMatch(/settings\.json is not valid JSON/);
    fs.writeFileSync(settingsFilePath(dir), '[1]');
    expect(configError(() => readSettingsFile(dir))).toMatch(/must hold one JSON object/);
  });
});

describe('precedence: flags > env > settings.json > default', () => {
  const linux = (home: string) => ({ platform: 'linux' as const, env: {}, homedir: home });

  it('takes each kind of value from the file over the default, env over the file, flags over env', () => {
    const dir = tmp();
    writeSettingsFile(dir, {
      port: 7600,
      workerId: 'from-file',
      allowLanWebhooks: true,
      typingDelayMs: '100-200',
      webhookRetryDelays: [0, 10, 20, 30, 40],
      allowedHosts: 'file.local',
      eventRetentionDays: 2.5,
    });
    const flags = { dataDir: dir };
    expect(resolveServiceConfig(flags, {}, linux(dir))).toMatchObject({
      port: 7600,
      workerId: 'from-file',
      allowLanWebhooks: true,
      typingDelayMs: { min: 100, max: 200 },
      webhookRetryDelaysMs: [0, 10, 20, 30, 40],
      allowedHosts: ['file.local'],
      eventRetentionDays: 2.5,
    });
    const env = { SWITCHBOARD_PORT: '7700', SWITCHBOARD_WORKER_ID: 'from-env', SWITCHBOARD_ALLOW_LAN_WEBHOOKS: '0' };
    const fromEnv = resolveServiceConfig(flags, env, linux(dir));
    expect(fromEnv).toMatchObject({ port: 7700, workerId: 'from-env', typingDelayMs: { min: 100, max: 200 } });
    expect(fromEnv.allowLanWebhooks).toBeUndefined(); // SWITCHBOARD_ALLOW_LAN_WEBHOOKS=0 wins over the file's true
    expect(resolveServiceConfig({ ...flags, port: '7800', workerId: 'from-flag' }, env, linux(dir))).toMatchObject({
      port: 7800,
      workerId: 'from-flag',
    });
    // Without a file: the defaults.
    expect(resolveServiceConfig({ dataDir: tmp() }, {}, linux(dir))).toMatchObject({ port: 7575, workerId: 'local' });
  });

  it('never takes the data dir, the sandbox switch or the sandbox-only server from the file (hand-written)', () => {
    const dir = tmp();
    fs.writeFileSync(settingsFilePath(dir), JSON.stringify({ sandbox: true }));
    expect(configError(() => resolveServiceConfig({ dataDir: dir }, {}))).toMatch(/sandbox cannot be set in the settings file/);
    fs.writeFileSync(settingsFilePath(dir), JSON.stringify({ waRootKey: 'AAAA' }));
    expect(configError(() => resolveServiceConfig({ dataDir: dir }, {}))).toMatch(/waRootKey cannot be set/);
  });

  it('names the file key of an unusable value', () => {
    const dir = tmp();
    writeSettingsFile(dir, { port: 70000 });
    expect(configError(() => resolveServiceConfig({ dataDir: dir }, {}))).toBe(
      'invalid settings.json "port" value "70000": expected a port number 0-65535',
    );
    // A flag over the bad file value: the file is not consulted for it.
    expect(resolveServiceConfig({ dataDir: dir, port: '0' }, {}).port).toBe(0);
    writeSettingsFile(dir, { billingProvider: 'stripe', stripePriceId: 'price_1' });
    expect(configError(() => resolveServiceConfig({ dataDir: dir }, {}))).toMatch(
      /needs SWITCHBOARD_STRIPE_SECRET_KEY \(or a key stored in the OS keychain/,
    );
  });

  it('loadServiceConfig takes the Stripe key from the keychain only when the provider asks for stripe', async () => {
    const dir = tmp();
    const reads: string[] = [];
    const readStripeKey = async (d: string) => (reads.push(d), 'sk_test_fromKeychain');
    writeSettingsFile(dir, { stripePriceId: 'price_1' });
    expect((await loadServiceConfig({ dataDir: dir }, {}, { readStripeKey })).billing?.provider).toBe('local');
    expect(reads).toEqual([]);
    writeSettingsFile(dir, { stripePriceId: 'price_1', billingProvider: 'stripe' });
    const config = await loadServiceConfig({ dataDir: dir }, {}, { readStripeKey });
    expect(reads).toEqual([dir]);
    expect(config.billing?.provider).toBe('stripe');
    expect(JSON.stringify(config.billing)).not.toContain('fromKeychain');
    // The environment's key wins and the keychain is not read.
    await loadServiceConfig({ dataDir: dir }, { SWITCHBOARD_STRIPE_SECRET_KEY: 'sk_test_env' }, { readStripeKey });
    expect(reads).toHaveLength(1);
    // No keychain: one line saying both ways.
    const failing = async () => {
      throw new Error('no Secret Service');
    };
    await expect(loadServiceConfig({ dataDir: dir }, {}, { readStripeKey: failing })).rejects.toThrow(
      /needs SWITCHBOARD_STRIPE_SECRET_KEY .*; the OS keychain could not be read \(no Secret Service\)/,
    );
  });
});

describe('the table drives serve', () => {
  it('every row has a unique name, flag and variable; flags and kinds match the option parser', () => {
    for (const key of ['name', 'flag', 'env'] as const) {
      const values = rows.map((r) => r[key]).filter((v) => v !== undefined);
      expect(new Set(values).size, key).toBe(values.length);
    }
    for (const r of rows) expect(r.env).toMatch(/^SWITCHBOARD_[A-Z_]+$/);
    const options = serveParseOptions();
    expect(Object.keys(options).sort()).toEqual(rows.filter((r) => r.flag).map((r) => r.flag).sort());
    for (const r of rows.filter((x) => x.flag)) expect(options[r.flag!]!.type).toBe(r.kind === 'boolean' ? 'boolean' : 'string');
    // The desktop-editable rows carry the schema of the settings API; secrets never go to the file.
    for (const r of rows.filter((x) => x.desktop)) expect(r.schema, r.name).toBeDefined();
    for (const r of rows.filter((x) => x.secret)) expect(r.file).toBe(false);
  });

  it('`serve --help` is generated from the table and names every flag and variable', async () => {
    const res = await runCli(['serve', '--help']);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe(formatServeHelp());
    for (const r of rows) {
      if (r.flag) expect(res.stdout).toContain(`--${r.flag}`);
      expect(res.stdout).toContain(r.env);
    }
    expect(Math.max(...res.stdout.split('\n').map((l) => l.length))).toBeLessThanOrEqual(120);
  });

  it('docs/settings.md holds the table as generated (npm run gen:settings-docs)', () => {
    const file = path.resolve('docs/settings.md');
    const committed = fs.readFileSync(file, 'utf8');
    expect(committed === withReference(committed), 'docs/settings.md is stale: run npm run gen:settings-docs').toBe(true);
    for (const r of rows) expect(committed).toContain(`\`${r.env}\``);
  });
});
