/**
 * The console's webhooks view in Debian Chromium (issue 19 item 7) against `switchboard serve --sandbox` as a child
 * process (no `--allow-lan-webhooks`: sandbox mode accepts loopback receivers) and a real HTTP consumer on
 * 127.0.0.1: the event picker offers `*` and exactly the event types the service accepts; Active, Paused,
 * Failing (an active webhook whose consumer answers 500) and Disabled (410 Gone) each have their own badge and
 * colour; "Retry now" on a delivery waiting for its next attempt makes the attempt at once (seen at the consumer
 * once it answers 200); the delivery statuses pending, skipped, failed and delivered have distinct colours.
 * Skipped, with the reason printed, when no Chromium is installed.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { launchConsole, signIn, CHROMIUM } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_EVENT_TYPES } from '../../service/http/routes/webhooks.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { checkView } from '../helpers/axe.ts';
import { waitFor } from '../helpers/wait.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console webhooks e2e] skipped: no Chromium at ${CHROMIUM}`);

interface Received {
  path: string;
  webhookId: string;
  event: string;
  at: number;
}
interface Hook {
  id: string;
  url: string;
  active: boolean;
  events: string[];
  disabledReason: string | null;
}
interface Delivery {
  id: string;
  status: string;
  attempts: number;
  webhookMessageId: string;
  lastError: string | null;
}

describe.skipIf(!haveChromium)('console: webhook states, retry now, delivery colours, event picker', { timeout: 120_000 }, () => {
  let dataDir: string;
  let userDataDir: string;
  let service: ServiceProcess;
  let token: string;
  let context: BrowserContext;
  let page: Page;
  let connectionId: string;
  let consumer: http.Server;
  let base: string;
  /** What the consumer answers on /flaky (it records every request either way). */
  let flakyStatus = 500;
  const received: Received[] = [];
  /** Computed colours of the delivery status badges, by status. */
  const colours = new Map<string, string>();

  const api = async <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => {
    const res = await fetch(`${service.apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  const hooks = async () => (await api<Hook[]>('GET', `/connections/${connectionId}/webhooks`)).body;
  const logs = async (id: string) => (await api<Delivery[]>('GET', `/webhooks/${id}/logs`)).body;
  const row = (url: string) => page.getByTestId('webhook-row').filter({ has: page.getByText(url, { exact: true }) });
  const stateOf = (url: string) => row(url).getByTestId('webhook-state');
  /** The computed text and background colours of an element (a badge). */
  const colourOf = (el: Locator) =>
    el.evaluate((e) => {
      const s = (globalThis as unknown as { getComputedStyle(e: unknown): { color: string; backgroundColor: string } }).getComputedStyle(e);
      return `${s.color} on ${s.backgroundColor}`;
    });
  /** Opens a webhook's delivery log, waits for a row with `status`, records its badge colour, closes the log. */
  const recordColour = async (url: string, status: string) => {
    await row(url).getByTestId('webhook-logs').click();
    const delivery = page.locator(`[data-testid="delivery-row"][data-status="${status}"]`).first();
    await waitFor(`a ${status} delivery in the log of ${url}`, async () => {
      if ((await delivery.count()) > 0) return true;
      await page.getByRole('dialog', { name: 'Delivery log' }).getByRole('button', { name: 'Refresh' }).click();
      return undefined;
    }, { intervalMs: 500 });
    await expect(delivery.getByTestId('delivery-status').textContent()).resolves.toBe(status);
    colours.set(status, await colourOf(delivery.getByTestId('delivery-status')));
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Delivery log' }).waitFor({ state: 'detached' });
  };

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-hooks-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-hooks-'));
    consumer = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const p = req.url ?? '';
        received.push({ path: p, webhookId: String(req.headers['webhook-id']), event: (JSON.parse(body) as { event: string }).event, at: Date.now() });
        res.writeHead(p === '/gone' ? 410 : p === '/flaky' ? flakyStatus : 200).end();
      });
    });
    await new Promise<void>((r) => consumer.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(consumer.address() as AddressInfo).port}`;
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir]);
    const created = await runCli(['token', 'create', '--user', 'operator', '--name', 'console', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    // Webhooks belong to a connection; it need not be linked for test events.
    connectionId = (await api('POST', '/connections', { name: 'hooks' })).body.id as string;

    ({ context, page } = await launchConsole(userDataDir, 'console-webhooks e2e'));
    await signIn(page, new URL(service.apiUrl).origin, token);
    await page.getByTestId('nav-webhooks').click();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  });

  afterAll(async () => {
    await context?.close();
    await service?.stop('SIGKILL');
    await new Promise((r) => consumer?.close(r));
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('offers * and exactly the event types the service accepts, and subscribes a loopback consumer to * (sandbox mode)', async () => {
    await page.getByTestId('new-webhook').click();
    await page.getByTestId('webhook-events').click();
    const options = page.getByRole('option');
    await options.first().waitFor();
    const offered = await options.allTextContents();
    expect(offered).toEqual(['* (every event, also future ones)', ...WEBHOOK_EVENT_TYPES]);
    await options.first().click(); // `*` replaces the default `message`
    await page.getByTestId('webhook-url').fill(`${base}/ok`);
    await page.getByTestId('webhook-save').click();
    await page.getByTestId('webhook-secret').waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
    const [hook] = await hooks();
    expect(hook).toMatchObject({ url: `${base}/ok`, events: ['*'], active: true });
    await page.locator(`[data-testid="webhook-state"][data-state="active"]`).waitFor();

    // A test event reaches the consumer and is logged as delivered.
    await row(`${base}/ok`).getByTestId('webhook-test').click();
    await waitFor('the test event at /ok', () => (received.some((r) => r.path === '/ok' && r.event === 'webhook.test') ? true : undefined));
    await recordColour(`${base}/ok`, 'delivered');
  });

  it('shows a webhook paused by the operator as Paused, and Active again when resumed', async () => {
    const url = `${base}/ok`;
    await row(url).getByRole('switch', { name: 'Pause deliveries' }).click({ force: true });
    await stateOf(url).and(page.locator('[data-state="paused"]')).waitFor();
    await expect(stateOf(url).getByTestId('webhook-state-badge').textContent()).resolves.toBe('Paused');
    expect((await hooks())[0]).toMatchObject({ active: false, disabledReason: null });
    await expect(row(url).getByTestId('webhook-reenable').count()).resolves.toBe(0); // that is for a 410 only
    // Still Paused after a reload (from the API, not a local flag).
    await page.reload();
    await stateOf(url).and(page.locator('[data-state="paused"]')).waitFor();
    await row(url).getByRole('switch', { name: 'Resume deliveries' }).click({ force: true });
    await stateOf(url).and(page.locator('[data-state="active"]')).waitFor();
  });

  it('shows an active webhook whose consumer answers 500 as Failing (own colour, the reason readable), apart from Paused and Disabled', async () => {
    const flaky = await api<Hook>('POST', `/connections/${connectionId}/webhooks`, { url: `${base}/flaky`, events: ['message'] });
    expect(flaky.status).toBe(201);
    const gone = await api<Hook>('POST', `/connections/${connectionId}/webhooks`, { url: `${base}/gone`, events: ['message'] });
    const paused = await api<Hook>('POST', `/connections/${connectionId}/webhooks`, { url: `${base}/paused`, events: ['message'], active: false });
    expect([gone.status, paused.status]).toEqual([201, 201]);
    // The new webhooks show up by the view's own refresh (no reload).
    await row(`${base}/flaky`).waitFor({ timeout: 10_000 });
    await expect(stateOf(`${base}/flaky`).getAttribute('data-state')).resolves.toBe('active'); // nothing delivered yet
    await row(`${base}/flaky`).getByTestId('webhook-test').click();
    expect((await api('POST', `/webhooks/${gone.body.id}/test`)).status).toBe(200);

    await stateOf(`${base}/flaky`).and(page.locator('[data-state="failing"]')).waitFor({ timeout: 10_000 });
    const badge = stateOf(`${base}/flaky`).getByTestId('webhook-state-badge');
    // What a screen reader reads: the state and why.
    await expect(badge.textContent()).resolves.toMatch(/^Failing: latest delivery HTTP 500, retrying \(\d attempts?\)$/);
    await expect(badge.isVisible()).resolves.toBe(true);
    // The switch still pauses it.
    await expect(row(`${base}/flaky`).getByRole('switch', { name: 'Pause deliveries' }).isChecked()).resolves.toBe(true);
    await stateOf(`${base}/gone`).and(page.locator('[data-state="disabled"]')).waitFor({ timeout: 10_000 });
    await stateOf(`${base}/paused`).and(page.locator('[data-state="paused"]')).waitFor();
    await stateOf(`${base}/ok`).and(page.locator('[data-state="active"]')).waitFor();

    const stateColours = await Promise.all(['ok', 'flaky', 'paused', 'gone'].map((p) => colourOf(stateOf(`${base}/${p}`).getByTestId('webhook-state-badge'))));
    expect(new Set(stateColours).size, stateColours.join(' | ')).toBe(4);
    expect(await checkView(page, 'webhooks-states', { screenshot: false })).toEqual([]);
  });

  it('"Retry now" on a delivery waiting for its next attempt attempts it at once; it arrives once the consumer answers 200', async () => {
    const flaky = (await hooks()).find((h) => h.url === `${base}/flaky`)!;
    // The second (automatic) attempt comes after ~5 s; the third would be 5 min later.
    const [delivery] = await waitFor('two failed attempts', async () => {
      const l = await logs(flaky.id);
      return l[0]?.status === 'pending' && l[0].attempts === 2 && l[0].lastError === 'HTTP 500' ? l : undefined;
    }, { timeoutMs: 20_000, intervalMs: 250 });
    const attemptsBefore = received.filter((r) => r.path === '/flaky').length;
    expect(attemptsBefore).toBe(2);

    await row(`${base}/flaky`).getByTestId('webhook-logs').click();
    const entry = page.locator('[data-testid="delivery-row"][data-status="pending"]');
    await entry.waitFor();
    await expect(entry.getByText('2 attempts', { exact: false }).count()).resolves.toBe(1);
    await expect(entry.getByText('HTTP 500', { exact: true }).count()).resolves.toBe(1);
    colours.set('pending', await colourOf(entry.getByTestId('delivery-status')));
    flakyStatus = 200;
    const clickedAt = Date.now();
    await entry.getByTestId('delivery-retry').click();
    const arrived = await waitFor('the retried delivery at the consumer', () => received.filter((r) => r.path === '/flaky')[attemptsBefore], { timeoutMs: 10_000 });
    expect(arrived.webhookId).toBe(delivery!.webhookMessageId); // the same delivery, not a new event
    expect(arrived.at - clickedAt).toBeLessThan(5_000); // at once, not at the scheduled 5 min
    const done = await waitFor('delivered after the retry', async () => {
      const d = (await logs(flaky.id)).find((l) => l.id === delivery!.id)!;
      return d.status === 'delivered' ? d : undefined;
    });
    expect(done.attempts).toBe(3);
    // The log shows it delivered (after Refresh) with no retry button left.
    const dialog = page.getByRole('dialog', { name: 'Delivery log' });
    await dialog.getByRole('button', { name: 'Refresh' }).click();
    await dialog.locator('[data-testid="delivery-row"][data-status="delivered"]').waitFor();
    await expect(dialog.getByTestId('delivery-retry').count()).resolves.toBe(0);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // And the webhook is no longer Failing.
    await stateOf(`${base}/flaky`).and(page.locator('[data-state="active"]')).waitFor({ timeout: 10_000 });
  });

  it('gives the delivery statuses pending, skipped, failed and delivered distinct colours', async () => {
    await recordColour(`${base}/gone`, 'failed');
    // `skipped` is written only by earlier versions (paused webhooks before held deliveries existed): such a row is
    // made here in the real database from a delivered one, as those versions wrote it.
    const ok = (await hooks()).find((h) => h.url === `${base}/ok`)!;
    const source = (await logs(ok.id)).find((d) => d.status === 'delivered')!;
    const db = new Database(path.join(dataDir, 'switchboard.db'));
    try {
      db.pragma('busy_timeout = 5000');
      db.exec('CREATE TEMP TABLE old_row AS SELECT * FROM webhook_deliveries WHERE 0');
      db.prepare('INSERT INTO old_row SELECT * FROM webhook_deliveries WHERE id = ?').run(source.id);
      db.prepare(
        "UPDATE old_row SET id = ?, msg_id = ?, status = 'skipped', attempts = 0, delivered_at = NULL, last_status = NULL, last_error = NULL",
      ).run(`${source.id}-skipped`, `${source.webhookMessageId}-skipped`);
      db.exec('INSERT INTO webhook_deliveries SELECT * FROM old_row');
    } finally {
      db.close();
    }
    await recordColour(`${base}/ok`, 'skipped');
    expect([...colours.keys()].sort()).toEqual(['delivered', 'failed', 'pending', 'skipped']);
    expect(new Set(colours.values()).size, JSON.stringify(Object.fromEntries(colours))).toBe(4);
  });

  it('re-enables the webhook disabled by 410 as Active, not Failing (the 410 is what Disabled told)', async () => {
    await row(`${base}/gone`).getByTestId('webhook-reenable').click();
    await stateOf(`${base}/gone`).and(page.locator('[data-state="active"]')).waitFor();
    // Still Active once the view has fetched its log again (after a reload).
    const gone = (await hooks()).find((h) => h.url === `${base}/gone`)!;
    expect((await logs(gone.id))[0]).toMatchObject({ status: 'failed', lastError: 'HTTP 410 Gone: webhook deactivated' });
    const logFetched = page.waitForResponse((r) => r.url().endsWith(`/webhooks/${gone.id}/logs`));
    await page.reload();
    await logFetched;
    await stateOf(`${base}/gone`).waitFor();
    await page.waitForTimeout(300); // rendered from that answer
    await expect(stateOf(`${base}/gone`).getAttribute('data-state')).resolves.toBe('active');
  });
});
