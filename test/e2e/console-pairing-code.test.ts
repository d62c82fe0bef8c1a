/**
 * The console links a connection by phone code, in Debian Chromium (playwright-core) against `switchboard serve
 * --sandbox` as a child process: a new connection's pairing panel, "Link with phone number instead", a number that
 * is not one refused inline, the account's number, the code **read from the screen** and typed on the sandbox phone
 * through its admin API (`POST /accounts/:phone/link-code`), then the panel moving on by itself and the row turning
 * online with the number. Screenshots go to test-results/screenshots/. Skipped, with the reason printed, when no
 * Chromium is installed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { launchConsole, CHROMIUM } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console pairing-code e2e] skipped: no Chromium at ${CHROMIUM}`);

const PHONE = '+15550100';
const SHOTS = path.resolve('test-results/screenshots');

describe.skipIf(!haveChromium)('console: link a connection with a phone code', { timeout: 120_000 }, () => {
  let dataDir: string;
  let userDataDir: string;
  let service: ServiceProcess;
  let token: string;
  let context: BrowserContext;
  let page: Page;

  const linkCode = async (code: string) => {
    const res = await fetch(`${service.sandboxUrl}/accounts/${encodeURIComponent(PHONE)}/link-code`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });

  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-code-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-code-'));
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir]);
    const created = await runCli(['token', 'create', '--user', 'operator', '--name', 'console', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    ({ context, page } = await launchConsole(userDataDir, 'console pairing-code e2e'));
  });

  afterAll(async () => {
    await context?.close();
    await service?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('pairs by the code shown on the screen, typed on the phone', async () => {
    await page.goto(`${new URL(service.apiUrl).origin}/`);
    await page.getByTestId('token-input').fill(token);
    await page.getByRole('button', { name: 'Open console' }).click();
    await page.getByText('No connections yet').waitFor();

    await page.getByTestId('new-connection').click();
    await page.getByTestId('pairing-qr').waitFor({ state: 'visible', timeout: 20_000 });
    await page.getByRole('button', { name: 'Link with phone number instead' }).click();
    await expect(page.getByTestId('pairing-qr').count()).resolves.toBe(0);

    // A number that is not one: the service's 400 shows on the field.
    await page.getByLabel('Phone number').fill('12');
    await page.getByRole('button', { name: 'Get code' }).click();
    await page.getByText('phoneNumber must be an international phone number').waitFor();

    await page.getByLabel('Phone number').fill('+1 555 0100');
    await page.getByRole('button', { name: 'Get code' }).click();
    const shown = page.getByTestId('pairing-code');
    await shown.waitFor({ state: 'visible', timeout: 20_000 });
    await expect(page.getByRole('button', { name: 'Copy code' }).isVisible()).resolves.toBe(true);
    await shot('02b-pairing-code');
    const code = (await shown.textContent())!.trim();
    expect(code).toMatch(/^[0-9A-Z]{4}-[0-9A-Z]{4}$/);

    const linked = await linkCode(code);
    expect(linked.status).toBe(200);
    // The pairing view moves on by itself; the row's badge turns online from the WebSocket.
    await page.getByTestId('pairing-panel').waitFor({ state: 'detached', timeout: 30_000 });
    const row = page.getByTestId('connection-row').first();
    await row.locator('[data-testid="status-badge"][data-status="online"]').waitFor({ timeout: 30_000 });
    await expect(row.textContent()).resolves.toContain(PHONE);
  });
});
