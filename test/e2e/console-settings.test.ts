/**
 * The console's machine settings in Debian Chromium (playwright-core), against `switchboard serve` as a child
 * process inside a private D-Bus session with gnome-keyring (a real OS keychain): the owner edits the API port,
 * LAN webhooks and worker id, saves, and sees the "restart to apply" notice with what a headless service needs; a bad
 * worker id is refused with the field named and nothing saved; the Stripe key is typed into a write-only field that
 * then reads "Stored in the keychain" while settings.json never holds it; another user sees that only the owner may
 * change these. Skipped, with the reason printed, without Chromium, dbus-run-session or gnome-keyring-daemon.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { launchConsole, CHROMIUM } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/service-process.ts';

const needs = [CHROMIUM, '/usr/bin/dbus-run-session', '/usr/bin/gnome-keyring-daemon'];
const missing = needs.filter((b) => !fs.existsSync(b));
if (missing.length) console.log(`[console settings e2e] skipped: ${missing.join(', ')} not installed`);

const root = path.resolve(import.meta.dirname, '../..');
const KEY = 'sk_test_51ConsoleTypedKey';

describe.skipIf(missing.length > 0)('console: the machine settings', { timeout: 120_000 }, () => {
  let dataDir: string;
  let home: string;
  let userDataDir: string;
  let child: ChildProcess;
  let origin: string;
  let ownerToken: string;
  let otherToken: string;
  let context: BrowserContext;
  let page: Page;
  const settingsFile = () => path.join(dataDir, 'settings.json');
  const saved = () => JSON.parse(fs.readFileSync(settingsFile(), 'utf8')) as Record<string, unknown>;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-settings-'));
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-settings-home-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-'));
    // The port from the settings file (not a flag), so the console may edit it; 0: a free one for this test.
    fs.writeFileSync(settingsFile(), JSON.stringify({ port: 0 }));
    const serve = `exec node ${JSON.stringify(path.join(root, 'bin/switchboard.js'))} serve --data-dir ${JSON.stringify(dataDir)}`;
    const inner = `printf %s sb-test-pw | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null && ${serve}`;
    child = spawn('dbus-run-session', ['--', 'sh', '-c', inner], {
      cwd: root,
      env: { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_RUNTIME_DIR: home, SWITCHBOARD_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const apiUrl = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /^API: (\S+)$/m.exec(out);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`serve exited (${code}): ${err}`)));
    });
    origin = new URL(apiUrl).origin;
    ownerToken = (await runCli(['token', 'create', '--user', 'operator', '--data-dir', dataDir])).stdout.trim();
    otherToken = (await runCli(['token', 'create', '--user', 'someone-else', '--data-dir', dataDir])).stdout.trim();
    ({ context, page } = await launchConsole(userDataDir, 'console settings e2e', { viewport: { width: 1280, height: 900 } }));
  });

  afterAll(async () => {
    await context?.close();
    if (child?.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid, 'SIGTERM'); // the session's process group: dbus-run-session and serve
      await exited;
    }
    for (const d of [dataDir, home, userDataDir]) fs.rmSync(d, { recursive: true, force: true });
  });

  async function signIn(token: string) {
    await page.goto(`${origin}/`);
    await page.getByTestId('token-input').fill(token);
    await page.getByRole('button', { name: 'Open console' }).click();
    await page.getByTestId('nav-settings').click();
  }

  it('the owner edits, saves and is told to restart serve; the file has the values', async () => {
    await signIn(ownerToken);
    const form = page.getByTestId('machine-settings');
    await form.waitFor();
    await expect(page.getByTestId('setting-port').inputValue()).resolves.toBe('0');
    await expect(page.getByTestId('setting-worker-id').inputValue()).resolves.toBe('local');
    await expect(page.getByTestId('restart-notice').count()).resolves.toBe(0);

    await page.getByTestId('setting-port').fill('7611');
    await page.getByTestId('setting-worker-id').fill('desk-1');
    await page.getByRole('switch', { name: 'Allow webhooks to LAN addresses' }).check();
    await page.getByTestId('settings-save').click();
    const notice = page.getByTestId('restart-notice');
    await notice.waitFor();
    await expect(notice.textContent()).resolves.toMatch(/in effect only after a restart: API port, Worker id\./);
    await expect(notice.textContent()).resolves.toMatch(/Restart switchboard serve to apply them/);
    await expect(page.getByTestId('restart-now').count()).resolves.toBe(0); // headless cannot restart itself
    expect(saved()).toEqual({ port: 7611, workerId: 'desk-1', allowLanWebhooks: true });
    fs.mkdirSync(path.resolve('test-results/screenshots'), { recursive: true });
    await page.screenshot({ path: path.resolve('test-results/screenshots/settings-machine.png'), fullPage: true });
    await expect(page.getByTestId('settings-save').isDisabled()).resolves.toBe(true); // nothing left to save
  });

  it('a bad worker id is refused with the field named, and nothing is saved', async () => {
    const before = fs.readFileSync(settingsFile(), 'utf8');
    await page.getByTestId('setting-worker-id').fill('not valid!');
    await page.getByTestId('settings-save').click();
    const error = page.getByTestId('settings-error');
    await error.waitFor();
    await expect(error.textContent()).resolves.toMatch(/body\/workerId: invalid value "not valid!"/);
    expect(fs.readFileSync(settingsFile(), 'utf8')).toBe(before);
    await page.getByRole('button', { name: 'Discard changes' }).click();
    await expect(page.getByTestId('setting-worker-id').inputValue()).resolves.toBe('desk-1');
  });

  it('the Stripe key goes to the keychain: write-only field, "Stored in the keychain", never in settings.json', async () => {
    const field = page.getByTestId('setting-stripe-key');
    await expect(field.getAttribute('placeholder')).resolves.toBe('Not set');
    await expect(field.isDisabled()).resolves.toBe(false); // a keychain is there
    await field.fill(KEY);
    await page.getByTestId('settings-save').click();
    await page.locator('[data-testid="setting-stripe-key"][placeholder="Stored in the keychain"]').waitFor();
    await expect(field.inputValue()).resolves.toBe('');
    await expect(page.getByTestId('restart-notice').textContent()).resolves.toMatch(/Stripe secret key/);
    expect(fs.readFileSync(settingsFile(), 'utf8')).not.toContain(KEY);
    expect(await page.content()).not.toContain(KEY);
    const view = await fetch(`${origin}/api/settings`, { headers: { authorization: `Bearer ${ownerToken}` } });
    const text = await view.text();
    expect(text).not.toContain(KEY);
    expect(JSON.parse(text).stripeSecretKey).toEqual({ source: 'keychain', keychain: true, lockedBy: null });

    await page.getByTestId('setting-stripe-key-remove').click();
    await page.locator('[data-testid="setting-stripe-key"][placeholder="Not set"]').waitFor();
  });

  it("another user is told that only the machine's owner may change these", async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(otherToken);
    await page.getByTestId('machine-settings-forbidden').waitFor();
    await expect(page.getByTestId('machine-settings').count()).resolves.toBe(0);
  });
});
