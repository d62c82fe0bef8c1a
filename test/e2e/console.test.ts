/**
 * The operator console end to end in Debian Chromium (playwright-core): `switchboard serve --sandbox` as a child
 * process, the console at `/`, a token typed in, a connection created, its QR code **read from the screen**
 * (element screenshot → jsQR) and scanned by the sandbox phone, the status turning online live, a chat with
 * synced history scrolled back to "history starts here", a message arriving live, a quoted reply, then media,
 * reactions, edits, webhooks, tokens and billing through the UI. Screenshots of each view go to
 * test-results/screenshots/ (and, with UPDATE_SCREENSHOTS=1, docs/screenshots/ for the README).
 * Skipped, with the reason printed, when no Chromium is installed.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { launchConsole, CHROMIUM } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeQrDataUrl } from '../helpers/qr.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { settled } from '../helpers/axe.ts';
import { saveShot } from '../helpers/screenshots.ts';
import { waitFor } from '../helpers/wait.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console e2e] skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const EXTRA_HISTORY = 40;
/** Runs in the page: whether the image matching `selector` has loaded. */
const imageLoaded = (selector: string) => {
  const img = (globalThis as unknown as { document: { querySelector(s: string): { complete: boolean; naturalWidth: number } | null } }).document.querySelector(selector);
  return !!img && img.complete && img.naturalWidth > 0;
}; // more than one page (30) so the thread must page back

describe.skipIf(!haveChromium)('console: pair, chat and operate through the browser UI', { timeout: 120_000 }, () => {
  let dataDir: string;
  let userDataDir: string;
  let service: ServiceProcess;
  let token: string;
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  let connectionId: string;
  let receiver: http.Server;
  let receiverUrl: string;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

  const sandbox = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${service.sandboxUrl}${route}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const api = async (route: string) => {
    const res = await fetch(`${service.apiUrl}${route}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const shot = async (name: string) => {
    await settled(page); // no colour mid-transition
    await saveShot(page, name);
  };
  const nav = (view: string) => page.getByTestId(`nav-${view}`).click();

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-'));
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir, '--typing-delay-ms', '800-900', '--allow-lan-webhooks']);
    origin = new URL(service.apiUrl).origin;
    const created = await runCli(['token', 'create', '--user', 'operator', '--name', 'e2e', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    ({ context, page } = await launchConsole(userDataDir, 'console e2e'));
  });

  afterAll(async () => {
    await context?.close();
    await service?.stop('SIGKILL');
    await new Promise((r) => receiver?.close(r));
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('asks for a token, refuses a bad one and opens the console with a good one', async () => {
    await page.goto(`${origin}/`);
    await expect(page.getByTestId('token-input').isVisible()).resolves.toBe(true);
    await page.getByTestId('sandbox-badge').first().waitFor();
    await shot('01-token');
    await page.getByTestId('token-input').fill('wh_not_a_real_token');
    await page.getByRole('button', { name: 'Open console' }).click();
    await page.getByText('That token was not accepted').waitFor();
    await page.getByTestId('token-input').fill(token);
    await page.getByRole('button', { name: 'Open console' }).click();
    await page.getByText('No connections yet').waitFor();
    await page.locator('[data-testid="live-indicator"][data-state="open"]').waitFor();
  });

  it('creates a connection, reads the QR from the screen, scans it and goes online', async () => {
    await page.getByTestId('new-connection').click();
    const qr = page.getByTestId('pairing-qr');
    await qr.waitFor({ state: 'visible', timeout: 20_000 });
    await page.waitForFunction(imageLoaded, '[data-testid="pairing-qr"]');
    await shot('02-pairing-qr');
    // The QR as the operator sees it: a screenshot of the element (with its white frame as quiet zone).
    const png = await page.locator('.qr-frame').screenshot();
    const qrText = decodeQrDataUrl(`data:image/png;base64,${png.toString('base64')}`);
    expect(qrText).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#/);
    const scan = await sandbox('POST', `/accounts/${encodeURIComponent(PHONE)}/scan`, { qr: qrText });
    expect(scan.status).toBe(200);
    // The pairing view moves on by itself; the row's badge turns online from the WebSocket.
    await page.getByTestId('pairing-panel').waitFor({ state: 'detached', timeout: 30_000 });
    const row = page.getByTestId('connection-row').first();
    connectionId = (await row.getAttribute('data-id'))!;
    await row.locator('[data-testid="status-badge"][data-status="online"]').waitFor({ timeout: 30_000 });
    await row.getByText(PHONE).waitFor(); // the record read once linked
    await shot('03-connections');
  });

  it('shows the chats with synced history and pages back to where history starts', async () => {
    // Enough messages from Alice that the thread needs more than one page.
    for (let i = 1; i <= EXTRA_HISTORY; i++) {
      expect((await sandbox('POST', `/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: `Backlog ${i}` })).status).toBe(201);
    }
    let newest: unknown;
    await waitFor(
      'backlog stored',
      async () => {
        // Timestamps are seconds, so the order within one second is not the sending order: count them.
        const p = await api(`/connections/${connectionId}/chats/${ALICE_JID}/messages?limit=100`);
        const n = (p.body.messages as Array<{ text: string }>).filter((m) => m.text.startsWith('Backlog ')).length;
        newest = { stored: n };
        return n === EXTRA_HISTORY ? true : undefined;
      },
      { timeoutMs: 60_000 },
    ).catch((err) => {
      throw new Error(`${String(err)}; newest: ${JSON.stringify(newest)}; stderr: ${service.stderr().slice(-3000)}`);
    });
    await nav('chats');
    const alice = page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`);
    await alice.waitFor();
    await expect(alice.getByTestId('unread-badge').isVisible()).resolves.toBe(true);
    await page.getByTestId('unread-only').click({ force: true });
    await alice.waitFor();
    await page.getByTestId('unread-only').click({ force: true });
    await alice.click();
    await page.getByTestId('thread-scroll').getByText(/^Backlog \d+$/).last().waitFor();
    await expect(page.getByTestId('history-start').count()).resolves.toBe(0);
    // Scroll to the top until the start of the synced history is reached.
    const scroller = page.getByTestId('thread-scroll');
    await waitFor(
      'history marker',
      async () => {
        await scroller.evaluate((el) => {
          el.scrollTop = 0;
          el.dispatchEvent(new Event('scroll'));
        });
        return (await page.getByTestId('history-start').count()) > 0 ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300 },
    );
    // The list is virtualized and keeps the message in view put while an older page lands: scroll to the top
    // again until the oldest message is rendered.
    await waitFor(
      'the oldest message rendered',
      async () => {
        await scroller.evaluate((el) => {
          el.scrollTop = 0;
          el.dispatchEvent(new Event('scroll'));
        });
        return (await page.getByTestId('thread-scroll').getByText('Backlog 1', { exact: true }).count()) > 0 ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300 },
    );
    await expect(page.getByTestId('history-start').textContent()).resolves.toContain('History starts here');
    await scroller.evaluate((el) => (el.scrollTop = 0));
    await page.getByTestId('history-start').scrollIntoViewIfNeeded();
    await shot('04-history-start');
  });

  it('receives a message live and replies to it with a quote', async () => {
    await sandbox('POST', `/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'Are you there, console?' });
    // The operator is reading the start of the history: the new message does not move the view, it is counted on
    // the jump button, which brings the newest messages back.
    await page.locator('[data-testid="jump-to-newest"][data-unseen="1"]').waitFor({ timeout: 20_000 });
    await expect(page.getByTestId('history-start').isVisible()).resolves.toBe(true);
    await page.getByRole('button', { name: 'Jump to the newest message (1 new)' }).click();
    const incoming = page.locator('[data-testid="message"][data-from-me="false"]', { hasText: 'Are you there, console?' });
    await incoming.waitFor({ timeout: 20_000 });
    await page.getByTestId('jump-to-newest').waitFor({ state: 'detached' });
    await incoming.getByTestId('message-actions').click();
    await page.getByRole('menuitem', { name: 'Reply' }).click();
    await page.getByTestId('reply-banner').waitFor();
    await page.getByTestId('composer-input').fill('Yes, from the console!');
    await page.getByTestId('composer-input').press('Enter');
    const reply = page.locator('[data-testid="message"][data-from-me="true"]', { hasText: 'Yes, from the console!' });
    await reply.waitFor({ timeout: 20_000 });
    await expect(reply.getByTestId('quote').textContent()).resolves.toContain('Are you there, console?');
    await waitFor('the reply at Alice', async () => {
      const list = (await sandbox('GET', `/accounts/${encodeURIComponent(ALICE)}/messages`)).body as Array<{ text: string }>;
      return list.find((m) => m.text === 'Yes, from the console!');
    });
    await shot('05-chat');
  });

  it('sends an image that shows inline through the media proxy', async () => {
    const pngFile = fs.readFileSync(path.resolve('resources/icon.png'));
    await page.getByTestId('attach-menu').click();
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('menuitem', { name: /^File, photo/ }).click()]);
    await chooser.setFiles({ name: 'logo.png', mimeType: 'image/png', buffer: pngFile });
    // A preview with a caption before anything is sent; the attach menu has closed.
    await page.getByAltText('Preview of logo.png').waitFor();
    await page.getByRole('menu').waitFor({ state: 'hidden' });
    await page.getByTestId('attachment-caption').fill('Our logo');
    await page.getByTestId('attachment-send').click();
    const img = page.locator('[data-testid="message"][data-from-me="true"] [data-testid="media-image"]');
    await img.first().waitFor({ timeout: 30_000 });
    await page.waitForFunction(imageLoaded, '[data-testid="media-image"]');
    await page.locator('[data-testid="message"][data-from-me="true"]', { hasText: 'Our logo' }).waitFor();
    // The thread stays at the bottom once the image has loaded (nothing of the last message cut off).
    await waitFor('the thread at the bottom', () =>
      page.getByTestId('thread-scroll').evaluate((el) => (el.scrollHeight - el.scrollTop - el.clientHeight < 2 ? true : undefined)),
    );
  });

  it('reacts to a message and edits a sent one', async () => {
    const incoming = page.locator('[data-testid="message"][data-from-me="false"]', { hasText: 'Are you there, console?' });
    await incoming.getByTestId('message-actions').click();
    await page.getByRole('menuitem', { name: 'React 👍' }).click();
    await incoming.getByTestId('reaction').first().waitFor();

    const mine = page.locator('[data-testid="message"][data-from-me="true"]', { hasText: 'Yes, from the console!' });
    await mine.getByTestId('message-actions').click();
    await page.getByTestId('edit-message').click();
    await page.getByTestId('editing-banner').waitFor();
    await page.getByTestId('composer-input').fill('Yes, from the console (edited)!');
    await page.getByTestId('composer-input').press('Enter');
    await page.locator('[data-testid="message"][data-from-me="true"]', { hasText: 'Yes, from the console (edited)!' }).waitFor({ timeout: 20_000 });
    await shot('06-chat-media-reaction-edit');
  });

  it('creates a webhook, sends a test event and shows it in the delivery log', async () => {
    await nav('webhooks');
    await page.getByTestId('new-webhook').click();
    await page.getByTestId('webhook-url').fill(receiverUrl);
    await page.getByTestId('webhook-save').click();
    await page.getByTestId('webhook-secret').waitFor();
    await expect(page.getByTestId('webhook-secret').textContent()).resolves.toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByTestId('webhook-row').waitFor();
    await shot('07-webhooks');
    await page.getByTestId('webhook-test').click();
    await waitFor('the test delivery at the receiver', () => (received.length > 0 ? true : undefined));
    await page.getByTestId('webhook-logs').click();
    await waitFor(
      'a delivered log row',
      async () => {
        if ((await page.locator('[data-testid="delivery-row"][data-status="delivered"]').count()) > 0) return true;
        await page.getByRole('button', { name: 'Refresh' }).click();
        return undefined;
      },
      { intervalMs: 500 },
    );
    await shot('08-webhook-log');
    await page.keyboard.press('Escape');
  });

  it('creates a token shown once and revokes it', async () => {
    await nav('tokens');
    await page.getByTestId('tokens-table').waitFor();
    await page.getByTestId('new-token').click();
    await page.getByTestId('token-name').fill('crm');
    await page.getByTestId('token-create').click();
    const value = (await page.getByTestId('created-token').textContent())!;
    expect(value).toMatch(/^wh_/);
    await page.getByRole('button', { name: 'Done' }).click();
    const row = page.locator('[data-testid="token-row"][data-name="crm"]');
    await row.waitFor();
    await shot('09-tokens');
    await row.getByTestId('revoke-token').click();
    await page.getByTestId('confirm-revoke').click();
    await row.waitFor({ state: 'detached' });
    const res = await fetch(`${service.apiUrl}/connections`, { headers: { authorization: `Bearer ${value}` } });
    expect(res.status).toBe(401);
  });

  it('changes the number of slots and shows the result', async () => {
    await nav('billing');
    await page.getByTestId('billing-slots').waitFor();
    await page.getByTestId('slots-input').fill('3');
    await page.getByTestId('slots-apply').click();
    await page.getByTestId('slots-result').waitFor();
    await expect(page.getByTestId('slots-result').textContent()).resolves.toMatch(/3 slots/);
    // The local provider: slots set here, no talk of charges, no payment buttons that could only fail.
    await expect(page.getByTestId('slots-explainer').textContent()).resolves.toContain('set locally');
    await expect(page.getByTestId('slots-result').textContent()).resolves.not.toMatch(/Charged|Credited/);
    await expect(page.getByTestId('payment-actions').count()).resolves.toBe(0);
    await shot('10-billing');
  });

  it('shows the live events and the settings, in both themes', async () => {
    await nav('events');
    await page.getByTestId('event-row').first().waitFor();
    await shot('11-events');
    await nav('settings');
    await page.getByText('Sandbox (simulated WhatsApp)').waitFor();
    await page.getByText('Dark', { exact: true }).click();
    await nav('chats');
    await page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`).click();
    await page.getByTestId('thread-scroll').getByText('Yes, from the console (edited)!').waitFor();
    await shot('12-chat-dark');
  });
});
