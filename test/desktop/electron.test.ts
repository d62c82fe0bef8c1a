/**
 * The desktop shell through Playwright's Electron driver: the window opens on the console served by the
 * in-process service, signed in with the keychain-held operator token, with a locked-down renderer (no Node,
 * context isolation) and the close button hiding the window instead of quitting. Skipped, with the reason
 * printed, when the Electron binary is absent (it is not downloadable on the build machines).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
function electronBinary(): string | undefined {
  try {
    const dir = path.dirname(require.resolve('electron/package.json'));
    const pathFile = path.join(dir, 'path.txt');
    if (!fs.existsSync(pathFile)) return undefined;
    const bin = path.join(dir, 'dist', fs.readFileSync(pathFile, 'utf8').trim());
    return fs.existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}
const bin = electronBinary();
const built = fs.existsSync(path.resolve('dist/main/index.js'));
const reason = !bin ? 'the Electron binary is not installed (node_modules/electron/dist is absent)' : !built ? 'run `npm run build:desktop` first' : '';
if (reason) console.log(`[electron test] skipped: ${reason}`);

describe.skipIf(!!reason)('desktop shell (Electron)', { timeout: 90_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-desktop-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('opens the console signed in, with a hardened renderer, and hides on close', async () => {
    const { _electron } = await import('playwright-core');
    const app = await _electron.launch({
      executablePath: bin!,
      args: ['--no-sandbox', path.resolve('dist/main/index.js')],
      env: { ...process.env, SWITCHBOARD_SANDBOX: '1', SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_LOG_LEVEL: 'warn' },
    });
    try {
      const page = await app.firstWindow();
      await page.getByText('Connections').first().waitFor({ timeout: 30_000 });
      await page.getByTestId('sandbox-badge').first().waitFor();
      expect(await page.evaluate(() => typeof (globalThis as { require?: unknown }).require)).toBe('undefined');
      expect(await page.evaluate(() => typeof (globalThis as { switchboardDesktop?: unknown }).switchboardDesktop)).toBe('object');
      const visibleAfterClose = await app.evaluate(async ({ BrowserWindow }) => {
        const w = BrowserWindow.getAllWindows()[0]!;
        w.close();
        await new Promise((r) => setTimeout(r, 300));
        return { exists: !w.isDestroyed(), visible: !w.isDestroyed() && w.isVisible() };
      });
      expect(visibleAfterClose).toEqual({ exists: true, visible: false });
    } finally {
      await app.evaluate(({ app }) => app.quit()).catch(() => undefined);
      await app.close().catch(() => undefined);
    }
  });
});
