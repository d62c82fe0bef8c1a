/**
 * The settings API (`GET/PATCH /api/settings`, `POST /api/settings/restart`) on a real SQLite store and a real
 * settings.json: values and their sources, saves that name what waits for a restart, `null` back to the default,
 * bad values answered 400 with the field named and nothing changed (file bytes and answers identical), settings a
 * flag or variable locks (409), the Stripe key refused without a keychain (409, never echoed), the restart hook,
 * and a hand-broken settings.json reported, not crashed on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

interface View {
  file: string;
  settings: Record<string, { value: unknown; source: string; lockedBy: string | null; restart: boolean }>;
  stripeSecretKey: { source: string | null; keychain: boolean; lockedBy: string | null };
  restartRequired: string[];
  canRestart: boolean;
  changed?: string[];
}

const values = (v: View) => Object.fromEntries(Object.entries(v.settings).map(([k, s]) => [k, s.value]));

describe('the settings API', () => {
  let api: TestApi;
  let owner: TestUser;
  const file = () => path.join(api.dataDir, 'settings.json');
  const readFile = () => (fs.existsSync(file()) ? fs.readFileSync(file(), 'utf8') : null);
  const get = () => api.request<View>('GET', '/settings', { token: owner.token });
  const patch = (body: unknown) => api.request<View & { message?: string }>('PATCH', '/settings', { token: owner.token, body });

  beforeAll(async () => {
    api = await startTestApi();
    owner = api.user('owner');
  });
  afterAll(() => api.close());

  it('answers the defaults, where each comes from, and that headless cannot restart itself', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.body.file).toBe(file());
    expect(values(res.body)).toEqual({
      port: 7575,
      allowLanWebhooks: false,
      workerId: 'local',
      billingProvider: 'local',
      stripePriceId: null,
    });
    expect(Object.values(res.body.settings).map((s) => s.source)).toEqual(Array(5).fill('default'));
    expect(res.body.settings.allowLanWebhooks!.restart).toBe(false);
    expect(res.body.settings.port!.restart).toBe(true);
    expect(res.body).toMatchObject({
      stripeSecretKey: { source: null, keychain: false, lockedBy: null },
      restartRequired: [],
      canRestart: false,
    });
    const restart = await api.request('POST', '/settings/restart', { token: owner.token });
    expect(restart.status).toBe(409);
    expect((restart.body as { message: string }).message).toMatch(/cannot restart itself .*restart it to apply/);
  });

  it('saves to settings.json (0600) and says what waits for a restart; the LAN switch applies at once', async () => {
    const res = await patch({ port: 7600, workerId: 'desk-1', allowLanWebhooks: true });
    expect(res.status).toBe(200);
    expect(res.body.changed).toEqual(['port', 'allowLanWebhooks', 'workerId']);
    expect(res.body.restartRequired).toEqual(['port', 'workerId']);
    expect(values(res.body)).toMatchObject({ port: 7600, workerId: 'desk-1', allowLanWebhooks: true });
    expect(res.body.settings.port!.source).toBe('file');
    expect(JSON.parse(readFile()!)).toEqual({ port: 7600, workerId: 'desk-1', allowLanWebhooks: true });
    if (process.platform !== 'win32') expect(fs.statSync(file()).mode & 0o777).toBe(0o600);
    expect(api.settings.allowLanWebhooks()).toBe(true);
    expect((await get()).body.restartRequired).toEqual(['port', 'workerId']);

    // null: back to the default (removed from the file); the same value again changes nothing.
    const reset = await patch({ port: null, workerId: 'desk-1' });
    expect(reset.status).toBe(200);
    expect(reset.body.changed).toEqual(['port']);
    expect(reset.body.restartRequired).toEqual(['workerId']);
    expect(JSON.parse(readFile()!)).toEqual({ workerId: 'desk-1', allowLanWebhooks: true });
    expect((await patch({})).body.changed).toEqual([]);
  });

  it('bad values: 400 naming the field, and nothing changes', async () => {
    const before = readFile();
    const view = (await get()).body;
    const cases: Array<[unknown, RegExp]> = [
      [{ port: 70000 }, /^body\/port/],
      [{ port: 'x' }, /^body\/port/],
      [{ port: 1.5 }, /^body\/port/],
      [{ workerId: 'a b' }, /^body\/workerId: invalid value "a b": expected 1-64 letters/],
      [{ workerId: '' }, /^body\/workerId/],
      [{ workerId: 'ok-now', port: -1 }, /^body\/port/],
      [{ allowLanWebhooks: 'yes' }, /^body\/allowLanWebhooks/],
      [{ billingProvider: 'paypal' }, /^body\/billingProvider/],
      [{ billingProvider: 'stripe', stripePriceId: 'price_1' }, /^body\/billingProvider: the stripe billing provider needs SWITCHBOARD_STRIPE_SECRET_KEY/],
      [{ billingProvider: 'stripe' }, /^body\/billingProvider: .*needs/],
      [{ stripeSecretKey: 'pk_test_publishable' }, /^body\/stripeSecretKey: expected a Stripe secret key/],
      [{ dataDir: '/elsewhere' }, /^body\/dataDir is not allowed/],
      [{ waUrl: 'ws://evil.example/ws' }, /^body\/waUrl is not allowed/],
      [[1, 2], /^body/],
    ];
    const problems: string[] = [];
    for (const [body, message] of cases) {
      const res = await patch(body);
      if (res.status !== 400 || !message.test(res.body.message ?? ''))
        problems.push(`${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`);
      if (JSON.stringify(body).includes('pk_test') && JSON.stringify(res.body).includes('pk_test'))
        problems.push('the key was echoed');
    }
    const raw = await api.request('PATCH', '/settings', { token: owner.token, rawBody: '{"port":', headers: { 'content-type': 'application/json' } });
    expect(raw.status).toBe(400);
    expect(problems).toEqual([]);
    expect(readFile()).toBe(before);
    expect((await get()).body).toEqual(view);
    expect(api.settings.allowLanWebhooks()).toBe(true);
  });

  it('without a keychain the Stripe key is refused with the environment as the way (409), nothing stored', async () => {
    const before = readFile();
    const res = await patch({ stripeSecretKey: 'sk_test_51NeverStoredAnywhere', workerId: 'other' });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/No OS keychain is available .*set SWITCHBOARD_STRIPE_SECRET_KEY in its environment instead/);
    expect(JSON.stringify(res.body)).not.toContain('NeverStored');
    expect(readFile()).toBe(before);
  });

  it('a hand-broken settings.json is reported (409 naming the file), not crashed on', async () => {
    const before = readFile()!;
    fs.writeFileSync(file(), '{"port": 7600,');
    try {
      const res = await get();
      expect(res.status).toBe(409);
      expect((res.body as unknown as { message: string }).message).toMatch(/settings\.json is not valid JSON/);
      expect((await patch({ workerId: 'x' })).status).toBe(409);
      expect(fs.readFileSync(file(), 'utf8')).toBe('{"port": 7600,');
    } finally {
      fs.writeFileSync(file(), before);
    }
    expect((await get()).status).toBe(200);
  });
});

describe('the settings API: what flags and variables of the process set, and the restart hook', () => {
  let api: TestApi;
  let owner: TestUser;
  let restarts = 0;

  beforeAll(async () => {
    api = await startTestApi({
      settings: {
        flags: { port: '0' },
        env: { SWITCHBOARD_WORKER_ID: 'from-env', SWITCHBOARD_STRIPE_SECRET_KEY: 'sk_test_51FromTheEnvironment' },
        restart: () => restarts++,
      },
    });
    owner = api.user('owner');
  });
  afterAll(() => api.close());

  it('shows them locked and refuses to change them (409), changing nothing', async () => {
    const view = await api.request<View>('GET', '/settings', { token: owner.token });
    expect(view.body.settings.port).toMatchObject({ value: 0, source: 'flag', lockedBy: '--port' });
    expect(view.body.settings.workerId).toMatchObject({ value: 'from-env', source: 'env', lockedBy: 'SWITCHBOARD_WORKER_ID' });
    expect(view.body.settings.billingProvider).toMatchObject({ value: 'stripe', source: 'default' }); // a key in the env
    expect(view.body.stripeSecretKey).toMatchObject({ source: 'env', lockedBy: 'SWITCHBOARD_STRIPE_SECRET_KEY' });
    expect(JSON.stringify(view.body)).not.toContain('FromTheEnvironment');
    for (const [body, message] of [
      [{ port: 7600 }, /^port is set by --port for this service/],
      [{ workerId: 'x', allowLanWebhooks: true }, /^workerId is set by SWITCHBOARD_WORKER_ID/],
      [{ stripeSecretKey: 'sk_test_other' }, /Stripe key is set by SWITCHBOARD_STRIPE_SECRET_KEY/],
    ] as const) {
      const res = await api.request<{ message: string }>('PATCH', '/settings', { token: owner.token, body });
      expect(res.status).toBe(409);
      expect(res.body.message).toMatch(message);
    }
    expect(fs.existsSync(path.join(api.dataDir, 'settings.json'))).toBe(false);
    expect(api.settings.allowLanWebhooks()).toBe(false);
  });

  it('POST /settings/restart answers 202 and then asks the host to restart', async () => {
    const res = await api.request('POST', '/settings/restart', { token: owner.token });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ restarting: true });
    await waitFor('the restart hook', () => (restarts > 0 ? true : undefined));
    expect(restarts).toBe(1);
    expect((await api.request<View>('GET', '/settings', { token: owner.token })).body.canRestart).toBe(true);
  });
});
