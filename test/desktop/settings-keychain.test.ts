/**
 * The Stripe secret key saved from the console lives in the OS keychain only (issue 18 item 2), checked against a
 * real Secret Service: a private D-Bus session with gnome-keyring unlocked from stdin (as secret-store.test.ts),
 * when dbus-run-session and gnome-keyring-daemon are installed (skipped with the reason printed otherwise). The
 * script (settings-keychain.script.ts) drives a real service over HTTP and the next start's loader.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const bins = ['/usr/bin/dbus-run-session', '/usr/bin/gnome-keyring-daemon'];
const missing = bins.filter((b) => !fs.existsSync(b));
if (missing.length) console.log(`[settings keychain test] skipped: ${missing.join(', ')} not installed (apt-get install dbus gnome-keyring)`);

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-keychain-home-'));
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe.skipIf(missing.length > 0)('the Stripe key in the OS keychain', () => {
  it('is stored there by PATCH /settings, never in settings.json or an answer, and used by the next start', { timeout: 90_000 }, async () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const script = path.join(import.meta.dirname, 'settings-keychain.script.ts');
    const inner = `printf %s sb-test-pw | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null && exec node --import tsx ${JSON.stringify(script)}`;
    const { stdout } = await promisify(execFile)('dbus-run-session', ['--', 'sh', '-c', inner], {
      cwd: root,
      env: { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_RUNTIME_DIR: home },
      timeout: 80_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(result).toEqual({
      before: { source: null, keychain: true, lockedBy: null },
      savedStatus: 200,
      savedEchoesKey: false,
      afterSave: { source: 'keychain', keychain: true, lockedBy: null },
      restartRequired: ['billingProvider', 'stripePriceId', 'stripeSecretKey'],
      fileHasKey: false,
      file: { billingProvider: 'stripe', stripePriceId: 'price_123' },
      keychainHoldsKey: true,
      refusedDelete: 400,
      keptAfterRefusal: true,
      nextProvider: 'stripe',
      nextKeyIsTheStoredOne: true,
      clearedStatus: 200,
      clearedChanged: ['billingProvider', 'stripeSecretKey'],
      cleared: { source: null, keychain: true, lockedBy: null },
      keychainAfterClear: null,
    });
  });
});
