/**
 * The machine's settings (config/machine-settings.ts) refuse in their own terms (issue 25 item 9): a `SettingsError`
 * saying what kind of refusal it is and which setting, with no HTTP status and no request-body path — those are
 * the route's (http/routes/settings.ts maps them to the same 400 and 409 answers, test/integration/settings.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MachineSettings, SettingsError, type SettingsPatch } from '../../service/config/machine-settings.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function settings(env: NodeJS.ProcessEnv = {}): { settings: MachineSettings; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-machine-settings-'));
  dirs.push(dir);
  return {
    settings: new MachineSettings({ dataDir: dir, flags: {}, env, allowLanWebhooks: false, openKeychain: null }),
    dir,
  };
}

/** What `update(patch)` refused with: the error's kind, setting and message, and whether it carries HTTP. */
async function refusal(s: MachineSettings, patch: SettingsPatch) {
  const err = await s.update(patch).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SettingsError);
  const e = err as SettingsError & { statusCode?: number };
  expect(e.statusCode).toBeUndefined();
  expect(e.message).not.toMatch(/body\//);
  return { kind: e.kind, setting: e.setting, message: e.message };
}

describe('MachineSettings refusals', () => {
  it('names the setting of a value the next start would refuse, and says what is wrong with it', async () => {
    const { settings: s } = settings();
    expect(await refusal(s, { workerId: 'a b' })).toEqual({
      kind: 'invalid',
      setting: 'workerId',
      message: expect.stringMatching(/^invalid value "a b": expected 1-64 letters/),
    });
    expect(await refusal(s, { port: 70000 })).toMatchObject({ kind: 'invalid', setting: 'port' });
    expect(await refusal(s, { billingProvider: 'stripe', stripePriceId: 'price_1' })).toEqual({
      kind: 'invalid',
      setting: 'billingProvider',
      message: expect.stringMatching(/^the stripe billing provider needs SWITCHBOARD_STRIPE_SECRET_KEY/),
    });
    expect(await refusal(s, { stripeSecretKey: 'pk_test_x' })).toEqual({
      kind: 'invalid',
      setting: 'stripeSecretKey',
      message: 'expected a Stripe secret key (sk_test_…, sk_live_…, rk_…)',
    });
  });

  it('tells a setting the process environment holds, and a Stripe key without a keychain, apart', async () => {
    const { settings: locked } = settings({ SWITCHBOARD_WORKER_ID: 'from-env' });
    expect(await refusal(locked, { workerId: 'x' })).toEqual({
      kind: 'locked',
      setting: 'workerId',
      message: 'workerId is set by SWITCHBOARD_WORKER_ID for this service; the settings file cannot change it',
    });
    const { settings: s } = settings();
    expect(await refusal(s, { stripeSecretKey: 'sk_test_51x' })).toMatchObject({
      kind: 'no-keychain',
      setting: 'stripeSecretKey',
    });
  });

  it('reports a settings.json it cannot use as unreadable, naming the file', async () => {
    const { settings: s, dir } = settings();
    fs.writeFileSync(path.join(dir, 'settings.json'), '{"port": 7600,');
    const err = await s.view().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SettingsError);
    expect(err).toMatchObject({
      kind: 'unreadable',
      message: expect.stringMatching(/settings\.json is not valid JSON/),
    });
    expect(await refusal(s, { workerId: 'x' })).toMatchObject({ kind: 'unreadable' });
  });
});
