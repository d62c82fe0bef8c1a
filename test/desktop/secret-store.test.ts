/**
 * SecretStore: the 0600 file fallback (always), and the OS keychain against a real Secret Service — a private
 * D-Bus session with gnome-keyring unlocked from stdin — when dbus-run-session and gnome-keyring-daemon are
 * installed (skipped with the reason printed otherwise).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openKeychain } from '../../service/secrets/keychain.ts';
import { FileSecretStore, openSecretStore } from '../../service/secrets/secret-store.ts';

const dirs: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-secrets-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

describe('FileSecretStore (degraded fallback)', () => {
  it('keeps secrets in a 0600 file and says it is degraded', async () => {
    const dir = tmp();
    const reasons: string[] = [];
    const store = await openSecretStore({ dataDir: dir, forceFile: true, onDegraded: (r) => reasons.push(r) });
    expect(store).toBeInstanceOf(FileSecretStore);
    expect(store.degraded).toBe(true);
    expect(reasons).toHaveLength(1);
    expect(await store.get('token')).toBeUndefined();
    await store.set('token', 'wh_abc');
    await store.set('other', 'x');
    expect(await store.get('token')).toBe('wh_abc');
    const file = path.join(dir, 'secrets.json');
    if (process.platform !== 'win32') expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(await store.delete('token')).toBe(true);
    expect(await store.delete('token')).toBe(false);
    expect(await new FileSecretStore(file).get('other')).toBe('x');
  });
});

describe('no test reaches the user\'s keychain', () => {
  it('pins every keychain entry to the Secret Service on Linux (never the kernel keyring: no environment redirects it)', async () => {
    const options: unknown[] = [];
    vi.doMock('@napi-rs/keyring', () => ({
      Entry: class {
        constructor(_service: string, _account: string, entryOptions?: unknown) {
          options.push(entryOptions);
        }
        setPassword() {}
        getPassword() {
          return 'ok';
        }
        deletePassword() {
          return true;
        }
      },
    }));
    try {
      vi.resetModules();
      const secrets = await import('../../service/secrets/secret-store.ts');
      const keychain = await import('../../service/secrets/keychain.ts');
      expect((await secrets.openSecretStore({ dataDir: tmp() })).backend).toBe('keyring');
      await keychain.openKeychain();
      await keychain.readStoredStripeKey(tmp());
    } finally {
      vi.doUnmock('@napi-rs/keyring');
      vi.resetModules();
    }
    expect(options.length).toBeGreaterThanOrEqual(3);
    const pinned = JSON.stringify({ linux: { store: 'secret-service' } });
    expect(new Set(options.map((o) => JSON.stringify(o)))).toEqual(new Set([pinned]));
  });

  // macOS's Keychain and Windows' Credential Manager cannot be pointed elsewhere by an environment.
  const linuxOnly = it.skipIf(process.platform !== 'linux');
  linuxOnly('finds no keychain in the test run: its Secret Service address leads nowhere', async () => {
    expect(process.env.DBUS_SESSION_BUS_ADDRESS).toContain(os.homedir()); // the run's own home (vitest globalSetup)
    await expect(openKeychain()).rejects.toThrow();
    const reasons: string[] = [];
    const store = await openSecretStore({ dataDir: tmp(), onDegraded: (r) => reasons.push(r) });
    expect(store.backend).toBe('file');
    expect(reasons[0]).toMatch(/no OS keychain available/);
  });
});

const bins = ['/usr/bin/dbus-run-session', '/usr/bin/gnome-keyring-daemon'];
const missing = bins.filter((b) => !fs.existsSync(b));
if (missing.length) console.log(`[keychain test] skipped: ${missing.join(', ')} not installed (apt-get install dbus gnome-keyring)`);

describe.skipIf(missing.length > 0)('KeyringSecretStore against a real Secret Service', () => {
  it('stores, reads and deletes through gnome-keyring, and openSecretStore picks it (not degraded)', { timeout: 60_000 }, async () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const script = path.join(import.meta.dirname, 'keyring-probe.script.ts');
    const home = tmp();
    const inner = `printf %s sb-test-pw | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null && exec node --import tsx ${JSON.stringify(script)}`;
    const { stdout } = await promisify(execFile)('dbus-run-session', ['--', 'sh', '-c', inner], {
      cwd: root,
      env: { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_RUNTIME_DIR: home, SB_DATA_DIR: tmp() },
      timeout: 50_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(result).toEqual({ read: 'wh_secret_value', deleted: true, after: null, backend: 'keyring', degraded: false, reasons: [] });
  });
});
