/**
 * The console as an operator's daily tool (issue 19), in Debian Chromium against `switchboard serve --sandbox`
 * as a child process: the sign-in hint names the command for the running mode; at phone width (390×844) the chat
 * list and the thread take turns and the connection picker stays reachable; when the service stops, a banner
 * says so within 5 s and statuses read "unknown", and after a restart on the same port everything recovers by
 * itself; a revoked console token returns to sign-in with the reason; a 2,000-message thread is virtualized (a few
 * dozen rows in the DOM, the row in view kept in place while older pages load, the bottom followed unless the
 * operator scrolled up); the chat filter as a search (a word only in a message body listed under "Messages", with its
 * snippet, opening the thread at that message, highlighted; a refused query shows nothing extra); a slow API answer never brings back a status older than the latest event; a deleted
 * connection stays listed under Deleted, read-only. Screenshots go to test-results/screenshots/.
 * Skipped, with the reason printed, when no Chromium is installed.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { launchConsole, CHROMIUM } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { checkView, settled } from '../helpers/axe.ts';
import { saveShot } from '../helpers/screenshots.ts';
import { waitFor } from '../helpers/wait.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console operator e2e] skipped: no Chromium at ${CHROMIUM}`);

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
/** A contact with a 2,000-message history (synced at pairing), three days old: the virtualized thread. */
const DAVE = '+15550108';
const DAVE_JID = '15550108@s.whatsapp.net';
const HISTORY = 2000;

describe.skipIf(!haveChromium)('console: honest state, phone width, sign-in hint', { timeout: 120_000 }, () => {
  let dataDir: string;
  let userDataDir: string;
  let service: ServiceProcess;
  let port: string;
  let token: string;
  let tokenId: string;
  let context: BrowserContext;
  let page: Page;
  let connectionId: string;

  const serve = () => startServe(['--sandbox', '--port', port, '--data-dir', dataDir, '--typing-delay-ms', '0', '--allow-lan-webhooks']);
  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${service.apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const sandbox = async (route: string, body: unknown) =>
    (await fetch(`${service.sandboxUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status;
  const shot = (name: string) => saveShot(page, name);

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-op-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-op-'));
    port = '0';
    service = await serve();
    port = new URL(service.apiUrl).port;
    const created = await runCli(['token', 'create', '--user', 'operator', '--name', 'console', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    tokenId = ((await api('GET', '/tokens')).body as unknown as Array<{ id: string }>)[0]!.id;

    // A paired connection with one chat and a long history, through the API and the sandbox admin API.
    const dave = await fetch(`${service.sandboxUrl}/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phoneNumber: DAVE, pushName: 'Dave Long' }),
    });
    expect(dave.status).toBe(201);
    const threeDaysAgo = Math.floor(Date.now() / 1000) - 3 * 86_400 - HISTORY;
    expect(await sandbox(`/accounts/${encodeURIComponent(PHONE)}/history`, { with: DAVE, count: HISTORY, startAt: threeDaysAgo })).toBe(201);
    const conn = await api('POST', '/connections', { name: 'ops' });
    connectionId = conn.body.id as string;
    const qr = await waitFor('a QR code', async () => {
      const res = await api('GET', `/connections/${connectionId}/qr?format=text`);
      return res.status === 200 ? (res.body.value as string) : undefined;
    });
    expect(await sandbox(`/accounts/${encodeURIComponent(PHONE)}/scan`, { qr })).toBe(200);
    await waitFor('online', async () => ((await api('GET', `/connections/${connectionId}`)).body.status === 'online' ? true : undefined), {
      timeoutMs: 30_000,
    });
    expect(await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'Hello from Alice' })).toBe(201);

    ({ context, page } = await launchConsole(userDataDir, 'console-operator e2e', { viewport: { width: 390, height: 844 } }));
  });

  afterAll(async () => {
    await context?.close();
    await service?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('serves the console split by view and pre-compressed', async () => {
    const origin = new URL(service.apiUrl).origin;
    const html = await (await fetch(`${origin}/`)).text();
    const entry = /src="(\/assets\/index-[^"]+\.js)"/.exec(html)![1]!;
    const plain = await fetch(`${origin}${entry}`, { headers: { 'accept-encoding': 'identity' } });
    const source = await plain.text();
    expect(source).toMatch(/ChatsView-[\w-]+\.js/); // views are chunks loaded on demand, not in the entry
    // undici's fetch would decode the body: ask with a raw request to see the encoding on the wire.
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get(`${origin}${entry}`, { headers: { 'accept-encoding': 'br, gzip' } }, resolve).on('error', reject),
    );
    res.resume();
    expect(res.headers['content-encoding']).toBe('br');
    expect(Number(res.headers['content-length'])).toBeLessThan(Buffer.byteLength(source) / 2);
  });

  it('names the exact token command of the running mode on the sign-in page', async () => {
    await page.goto(`${new URL(service.apiUrl).origin}/`);
    // The hint follows the health answer (sandbox or not), which arrives just after the page.
    await page.getByTestId('token-command').filter({ hasText: '--sandbox' }).waitFor();
    await expect(page.getByTestId('token-command').textContent()).resolves.toBe('switchboard token create --user NAME --sandbox');
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await checkView(page, 'sign-in')).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId('token-input').fill(token);
    await page.getByRole('button', { name: 'Open console' }).click();
    await page.locator('[data-testid="live-indicator"][data-state="open"]').waitFor();
  });

  it('at phone width shows one pane at a time, with the connection picker reachable', async () => {
    await expect(page.getByTestId('connection-picker').isVisible()).resolves.toBe(true);
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByTestId('nav-chats').click();
    const alice = page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`);
    await alice.waitFor();
    expect(await checkView(page, 'phone-chats')).toEqual([]);
    const listBox = await alice.boundingBox();
    expect(listBox!.width).toBeGreaterThan(300); // the list takes the width, not a squeezed column
    await alice.click();
    await page.getByTestId('thread-scroll').getByText('Hello from Alice').waitFor();
    await expect(alice.isVisible()).resolves.toBe(false);
    const thread = await page.getByTestId('thread-scroll').boundingBox();
    expect(thread!.width).toBeGreaterThan(300);
    expect(await checkView(page, 'phone-thread')).toEqual([]);
    await page.getByTestId('thread-back').click();
    await alice.waitFor();
  });

  it('thread: date separators, clickable links, an optimistic bubble at once, a failed send with Retry', async () => {
    expect(await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'Notes: https://example.test/notes?id=7.' })).toBe(201);
    await page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`).click();
    const link = page.getByTestId('message-link').last();
    await link.waitFor();
    await expect(link.getAttribute('href')).resolves.toBe('https://example.test/notes?id=7');
    await expect(link.getAttribute('rel')).resolves.toBe('noopener noreferrer');
    // The seeded history is from an earlier day than the new messages: at least one separator, today's last.
    await expect(page.getByTestId('date-separator').last().textContent()).resolves.toBe('Today');

    // The send request is held (then refused once): the bubble is there before any answer.
    let attempts = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/api/connections/*/send', async (route) => {
      attempts++;
      if (attempts === 1) return route.abort('connectionrefused');
      await held;
      await route.continue();
    });
    await page.getByTestId('composer-input').fill('Optimistic hello');
    await page.getByTestId('composer-input').press('Enter');
    const failed = page.locator('[data-testid="message"]', { hasText: 'Optimistic hello' });
    await failed.getByTestId('send-failed').waitFor();
    await failed.getByTestId('retry-send').click();
    await failed.getByTestId('pending-tick').waitFor();
    await expect(page.getByTestId('composer-input').inputValue()).resolves.toBe('');
    release();
    await failed.locator('[data-testid="pending-tick"]').waitFor({ state: 'detached', timeout: 20_000 });
    await expect(page.locator('[data-testid="message"]', { hasText: 'Optimistic hello' }).count()).resolves.toBe(1);
    await page.unroute('**/api/connections/*/send');
    expect(attempts).toBe(2);
    await page.getByTestId('thread-back').click();
  });

  it('starts a new chat by phone number (refusing one not on WhatsApp inline) and sends in it', async () => {
    const CAROL = '+15550177';
    const created = await fetch(`${service.sandboxUrl}/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phoneNumber: CAROL, pushName: 'Carol New' }),
    });
    expect(created.status).toBe(201);
    await page.getByTestId('new-chat').click();
    await page.getByTestId('new-chat-number').fill('+15559999');
    await page.getByTestId('new-chat-start').click();
    await page.getByText('+15559999 is not on WhatsApp').waitFor();
    await page.getByTestId('new-chat-number').fill('+1 555 0177');
    await page.getByTestId('new-chat-start').click();
    await page.getByTestId('new-chat-number').waitFor({ state: 'detached' });
    await expect(page.getByTestId('thread-title').textContent()).resolves.toBe('15550177@s.whatsapp.net');
    await page.getByTestId('composer-input').fill('Hello Carol, first message');
    await page.getByTestId('composer-input').press('Enter');
    await waitFor('Carol received it', async () => {
      const got = (await (await fetch(`${service.sandboxUrl}/accounts/${encodeURIComponent(CAROL)}/messages`)).json()) as Array<{ text: string }>;
      return got.some((m) => m.text === 'Hello Carol, first message') ? true : undefined;
    });
    await page.getByTestId('thread-back').click();
    await page.locator('[data-testid="chat-item"][data-chat-id="15550177@s.whatsapp.net"]').waitFor();
    // Or from the contacts list (the dialog is checked for accessibility in both schemes too).
    await page.getByTestId('new-chat').click();
    await page.getByLabel('Filter contacts').fill('Bob');
    const bob = page.getByTestId('new-chat-contact').filter({ hasText: 'Bob Sandbox' });
    await bob.waitFor();
    expect(await checkView(page, 'phone-new-chat', { screenshot: false })).toEqual([]);
    await bob.click();
    await expect(page.getByTestId('thread-title').textContent()).resolves.toBe('Bob Sandbox');
    await page.getByTestId('thread-back').click();
  });

  it('virtualizes a 2,000-message thread: few rows in the DOM, place kept while older pages load, bottom followed unless scrolled up', async () => {
    await waitFor(
      'the synced history',
      async () => {
        let stored = 0;
        for (let before: string | null = '', n = 0; before !== null && n < 5; n++) {
          const res = await api('GET', `/connections/${connectionId}/chats/${DAVE_JID}/messages?limit=500${before ? `&before=${encodeURIComponent(before)}` : ''}`);
          stored += (res.body.messages as unknown[] | undefined)?.length ?? 0;
          before = (res.body.nextBefore as string | null | undefined) ?? null;
        }
        return stored >= HISTORY ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const scroller = page.getByTestId('thread-scroll');
    const rendered = () => page.locator('[data-testid="message"]').count();
    /** Top (px) of a row, from the thread's top. */
    const topOf = (row: ReturnType<Page['locator']>) =>
      row.evaluate((el) => el.getBoundingClientRect().top - el.closest('[data-testid="thread-scroll"]')!.getBoundingClientRect().top);
    await page.locator(`[data-testid="chat-item"][data-chat-id="${DAVE_JID}"]`).click();
    await scroller.getByText(`History message ${HISTORY} of ${HISTORY}`).waitFor();
    // Each message is an article named by its sender and time (what assistive technology reads).
    await expect(page.getByRole('article', { name: /^(You|Dave Long|15550108) at \d{1,2}:\d{2}/ }).first().isVisible()).resolves.toBe(true);

    // Ten older pages, each held until the first row has been measured: that row stays where it was.
    let release: (() => void) | undefined;
    const olderPage = (url: URL) => decodeURIComponent(url.pathname).endsWith(`/chats/${DAVE_JID}/messages`) && url.searchParams.has('before');
    await page.route(olderPage, async (route) => {
      await new Promise<void>((r) => (release = r));
      await route.continue();
    });
    for (let pageNo = 1; pageNo <= 10; pageNo++) {
      release = undefined;
      await scroller.evaluate((el) => (el.scrollTop = 0));
      await waitFor('the older page requested', () => (release ? true : undefined));
      const first = page.locator('.thread-row[data-index="0"]');
      const text = (await first.locator('[data-testid="message"] p').first().textContent())!;
      const before = await topOf(first);
      const anchored = page.locator('.thread-row').filter({ has: page.getByText(text, { exact: true }) });
      release!();
      // Shown once the row that was first is the 31st (30 older messages above it).
      await waitFor('the older page shown', async () => ((await anchored.getAttribute('data-index', { timeout: 500 }).catch(() => null)) === '30' ? true : undefined));
      await page.getByTestId('loading-older').waitFor({ state: 'detached' });
      const after = await topOf(anchored);
      expect(Math.abs(after - before), `page ${pageNo}: ${text} moved from ${before} to ${after}`).toBeLessThanOrEqual(2);
      expect(await rendered()).toBeLessThan(60);
    }
    // 330 messages loaded (the newest is the 330th row), a few dozen in the DOM.
    await scroller.evaluate((el) => (el.scrollTop = el.scrollHeight));
    const newest = page.locator('.thread-row').filter({ has: page.getByText(`History message ${HISTORY} of ${HISTORY}`, { exact: true }) });
    await expect(newest.getAttribute('data-index')).resolves.toBe('329');
    expect(await rendered()).toBeLessThan(60);
    expect(await scroller.evaluate((el) => el.querySelectorAll('*').length)).toBeLessThan(2_500);
    await page.unroute(olderPage);

    // Scrolled up, a new message does not move the view; it is counted on the jump button.
    await scroller.evaluate((el) => (el.scrollTop = el.scrollHeight / 2));
    await waitFor('the middle of the thread rendered', async () => (Number(await page.locator('.thread-row').first().getAttribute('data-index')) < 250 ? true : undefined));
    const reading = page.locator('.thread-row').nth(3);
    const index = (await reading.getAttribute('data-index'))!;
    const readingTop = await topOf(reading);
    expect(await sandbox(`/accounts/${encodeURIComponent(DAVE)}/messages`, { to: PHONE, text: 'Dave is back today' })).toBe(201);
    await page.locator('[data-testid="jump-to-newest"][data-unseen="1"]').waitFor();
    expect(Math.abs((await topOf(page.locator(`.thread-row[data-index="${index}"]`))) - readingTop)).toBeLessThanOrEqual(2);
    await page.getByTestId('jump-to-newest').getByRole('button').click();
    await scroller.getByText('Dave is back today').waitFor();
    // The new day has its separator above it.
    await expect(page.getByTestId('date-separator').last().textContent()).resolves.toBe('Today');
    // At the bottom, the next message is followed and announced.
    expect(await sandbox(`/accounts/${encodeURIComponent(DAVE)}/messages`, { to: PHONE, text: 'And once more' })).toBe(201);
    await scroller.getByText('And once more').waitFor();
    await waitFor('the thread at the bottom', () => scroller.evaluate((el) => (el.scrollHeight - el.scrollTop - el.clientHeight < 2 ? true : undefined)));
    await expect(page.getByTestId('message-announcer').textContent()).resolves.toBe('New message from Dave Long: And once more');
    await page.getByTestId('thread-back').click();
  });

  it('reaches every one of 250 chats: the oldest by scrolling the list and by the server-side filter', async () => {
    const admin = (route: string, body: unknown) =>
      fetch(`${service.sandboxUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const OLDEST = '+15560000';
    expect((await admin('/accounts', { phoneNumber: OLDEST, pushName: 'Zed Oldest' })).status).toBe(201);
    expect((await admin(`/accounts/${encodeURIComponent(OLDEST)}/messages`, { to: PHONE, text: 'the oldest chat' })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1_100)); // a later second for every other chat
    const others = Array.from({ length: 249 }, (_, i) => `+1556${String(i + 1).padStart(4, '0')}`);
    for (let i = 0; i < others.length; i += 25) {
      await Promise.all(
        others.slice(i, i + 25).map(async (p, j) => {
          expect((await admin('/accounts', { phoneNumber: p, pushName: `Crowd ${i + j + 1}` })).status).toBe(201);
          expect((await admin(`/accounts/${encodeURIComponent(p)}/messages`, { to: PHONE, text: `crowd ${i + j + 1}` })).status).toBe(201);
        }),
      );
    }
    await waitFor(
      '250 new chats stored',
      async () => ((await api('GET', `/connections/${connectionId}/chats?limit=500`)).body as unknown as unknown[]).length >= 253 ? true : undefined,
      { timeoutMs: 60_000 },
    );
    await page.reload();
    const oldest = page.locator('[data-testid="chat-item"][data-chat-id="15560000@s.whatsapp.net"]');
    await page.locator('[data-testid="chat-item"]').first().waitFor();
    expect(await page.locator('[data-testid="chat-item"]').count()).toBe(100); // one page at first
    // Scrolling down pages in the rest until the oldest chat shows.
    await waitFor(
      'the oldest chat after scrolling',
      async () => {
        await page.locator('[data-testid="chat-list-scroll"] .mantine-ScrollArea-viewport').evaluate((el) => el.scrollTo(0, el.scrollHeight));
        return (await oldest.count()) > 0 ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300 },
    );
    await page.reload();
    await page.locator('[data-testid="chat-item"]').first().waitFor();
    await expect(oldest.count()).resolves.toBe(0);
    await page.getByLabel('Filter chats').fill('nobody by that name');
    await page.getByText('No chats match').waitFor();
    await page.getByLabel('Filter chats').fill('zed old');
    await oldest.waitFor();
    await page.getByLabel('Filter chats').fill('+15560000');
    await oldest.waitFor();
    await expect(page.locator('[data-testid="chat-item"]').count()).resolves.toBe(1);
    await page.getByLabel('Filter chats').fill('');
  });

  it('filter as search: a word found only in a message body is listed under Messages and opens its thread at that message, highlighted', async () => {
    // A message with a word no chat name holds, then more than a thread page of newer ones after it (a later second).
    expect(await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'Meet me at the lighthouse at dawn' })).toBe(201);
    const messageId = await waitFor('the message indexed', async () => {
      const res = await api('GET', `/connections/${connectionId}/search?q=lighthouse`);
      return (res.body.results as Array<{ message: { id: string } }> | undefined)?.[0]?.message.id;
    });
    await new Promise((r) => setTimeout(r, 1_100));
    for (let i = 1; i <= 35; i += 5) {
      await Promise.all(
        [0, 1, 2, 3, 4].map(async (j) => expect(await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: `later note ${i + j}` })).toBe(201)),
      );
    }
    await waitFor('the later notes stored', async () => ((await api('GET', `/connections/${connectionId}/search?q=later%20note&limit=50`)).body.results as unknown[]).length >= 35 ? true : undefined);

    const filter = page.getByLabel('Filter chats');
    const hit = page.locator(`[data-testid="message-hit"][data-message-id="${messageId}"]`);
    await filter.fill('lighthou'); // the last word matches as a prefix while it is typed
    await hit.waitFor();
    await expect(page.getByRole('heading', { name: 'Messages', level: 2 }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('navigation', { name: 'Messages' }).getByTestId('message-hit').count()).resolves.toBe(1);
    await expect(page.getByTestId('chat-item').count()).resolves.toBe(0); // no chat is named so
    await expect(page.getByTestId('no-chats-match').isVisible()).resolves.toBe(true);
    await expect(hit.locator('.search-snippet').innerText()).resolves.toBe('Meet me at the lighthouse at dawn');
    await expect(hit.locator('.search-snippet mark').allInnerTexts()).resolves.toEqual(['lighthouse']);
    await expect(hit.innerText()).resolves.toContain('Alice');
    expect((await hit.boundingBox())!.width).toBeGreaterThan(300); // the list's width at 390 px, not squeezed
    expect(await checkView(page, 'phone-chats-search')).toEqual([]);

    // A query the API refuses (400: an unbalanced quote) shows no message section and no error.
    const refused = page.waitForResponse((r) => r.url().includes('/search?') && r.status() === 400);
    await filter.fill('"lighthouse');
    await refused;
    await page.getByText('No chats match').waitFor();
    await expect(page.getByTestId('message-hit').count()).resolves.toBe(0);
    await expect(page.locator('.mantine-Notification-root').count()).resolves.toBe(0);
    // A query without message hits adds nothing either.
    const none = page.waitForResponse((r) => r.url().includes('/search?') && r.status() === 200);
    await filter.fill('zzyzx');
    await none;
    await page.getByText('No chats match').waitFor();
    await expect(page.getByRole('heading', { name: 'Messages' }).count()).resolves.toBe(0);

    // A click opens Alice's thread at the message (35 newer ones after it: not the newest page), scrolled to and highlighted.
    await filter.fill('lighthouse');
    await hit.click();
    const highlighted = page.getByTestId('search-hit');
    await highlighted.waitFor();
    await expect(highlighted.innerText()).resolves.toContain('Meet me at the lighthouse at dawn');
    await expect(page.getByTestId('thread-title').textContent()).resolves.toMatch(/Alice/);
    // Scrolled into the thread's view (a function, not a string: the console's CSP has no 'unsafe-eval').
    await page.waitForFunction(() => {
      type Box = { top: number; bottom: number };
      const doc = (globalThis as unknown as { document: { querySelector(s: string): { getBoundingClientRect(): Box } | null } }).document;
      const el = doc.querySelector('[data-testid="search-hit"]')?.getBoundingClientRect();
      const box = doc.querySelector('[data-testid="thread-scroll"]')?.getBoundingClientRect();
      return !!el && !!box && el.top >= box.top && el.bottom <= box.bottom;
    });
    await page.getByTestId('thread-back').click();
    await filter.fill('');
    await page.getByRole('heading', { name: 'Messages' }).waitFor({ state: 'detached' }); // cleared: the plain list again
    await page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`).waitFor();
  });

  it('says plainly when the service is down, and recovers by itself when it is back', async () => {
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByTestId('nav-connections').click();
    await page.locator('[data-testid="status-badge"][data-status="online"]').first().waitFor();
    await service.stop('SIGKILL');
    const stoppedAt = Date.now();
    await page.getByTestId('service-unreachable').waitFor({ timeout: 5_000 });
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    await page.locator('[data-testid="status-badge"][data-status="unknown"]').first().waitFor();
    await shot('phone-service-down');
    service = await serve();
    await page.getByTestId('service-unreachable').waitFor({ state: 'detached', timeout: 20_000 });
    await page.locator('[data-testid="live-indicator"][data-state="open"]').waitFor({ timeout: 20_000 });
    await page.locator('[data-testid="status-badge"][data-status="online"]').first().waitFor({ timeout: 30_000 });
  });

  it('shows a webhook disabled by 410 Gone as such, with the reason, and re-enables it', async () => {
    // 410 Gone once (the webhook is disabled), then 200: the endpoint came back before the operator re-enables it
    // (held events delivered on re-enable would otherwise meet the 410 again and disable it anew).
    let answered = 0;
    const gone = http.createServer((_req, res) => res.writeHead(answered++ === 0 ? 410 : 200).end());
    await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/hook`;
      const hook = await api('POST', `/connections/${connectionId}/webhooks`, { url, events: ['*'] });
      expect(hook.status).toBe(201);
      expect((await api('POST', `/webhooks/${hook.body.id as string}/test`)).status).toBe(200);
      await waitFor('disabled by 410', async () => ((await api('GET', `/connections/${connectionId}/webhooks`)).body as unknown as Array<{ active: boolean }>)[0]?.active === false ? true : undefined);
      await page.getByRole('button', { name: 'Toggle navigation' }).click();
      await page.getByTestId('nav-webhooks').click();
      const state = page.getByTestId('webhook-state');
      await page.locator('[data-testid="webhook-state"][data-state="disabled"]').waitFor();
      await shot('phone-webhook-disabled');
      await page.getByTestId('webhook-reenable').click();
      await page.locator('[data-testid="webhook-state"][data-state="active"]').waitFor();
      await expect(state.count()).resolves.toBe(1);
    } finally {
      gone.close();
    }
  });

  it('never shows a status older than the latest event (a slow answer after scan_qr), and lists a deleted connection under Deleted, read-only', async () => {
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByTestId('nav-connections').click();
    // get-or-create's answer (status "starting") is held until the session's scan_qr event has been shown.
    let createdId = '';
    let answered!: () => void;
    const held = new Promise<void>((r) => (answered = r));
    await page.route('**/api/connections/get-or-create', async (route) => {
      const res = await route.fetch();
      const body = (await res.json()) as { id: string; status: string };
      expect(body.status).toBe('starting');
      createdId = body.id;
      answered();
      await page.locator(`[data-testid="connection-row"][data-id="${body.id}"] [data-testid="status-badge"][data-status="scan_qr"]`).waitFor({ timeout: 20_000 });
      await route.fulfill({ response: res, json: body });
    });
    await page.getByTestId('new-connection').click();
    await held;
    await page.getByTestId('pairing-qr').waitFor({ timeout: 20_000 });
    await page.unroute('**/api/connections/get-or-create');
    const row = page.locator(`[data-testid="connection-row"][data-id="${createdId}"]`);
    await expect(row.getByTestId('status-badge').getAttribute('data-status')).resolves.toBe('scan_qr');
    await page.keyboard.press('Escape');
    await page.getByTestId('pairing-qr').waitFor({ state: 'detached' });

    // Delete it through the UI: gone from the active list, listed (read-only) under Deleted, also after a reload.
    await row.getByRole('button', { name: /^Actions for / }).click();
    await page.getByRole('menuitem', { name: 'Delete' }).click();
    await page.getByTestId('confirm-delete').click();
    await row.waitFor({ state: 'detached' });
    for (const reload of [false, true]) {
      if (reload) await page.reload();
      await page.getByTestId('connections-filter').getByText('Deleted').click();
      const gone = page.locator(`[data-testid="deleted-connection-row"][data-id="${createdId}"]`);
      await gone.waitFor();
      await expect(gone.getByTestId('status-badge').textContent()).resolves.toBe('Deleted');
      await expect(gone.getByRole('button').count()).resolves.toBe(0); // nothing to act on
      await expect(page.locator('[data-testid="deleted-connection-row"]').count()).resolves.toBe(1);
      await expect(page.locator(`[data-testid="deleted-connection-row"][data-id="${connectionId}"]`).count()).resolves.toBe(0);
      await page.getByTestId('connections-filter').getByText('Active').click();
      await page.locator(`[data-testid="connection-row"][data-id="${connectionId}"]`).waitFor();
      await expect(page.locator(`[data-testid="connection-row"][data-id="${createdId}"]`).count()).resolves.toBe(0);
    }
  });

  it('routes views by hash (Back works, links are shareable) and shows the event history after a reload', async () => {
    const origin = new URL(service.apiUrl).origin;
    await page.goto(`${origin}/#/tokens`);
    await page.getByTestId('token-input').or(page.getByRole('heading', { name: 'API tokens' })).first().waitFor();
    if (await page.getByTestId('token-input').isVisible()) {
      await page.getByTestId('token-input').fill(token);
      await page.getByRole('button', { name: 'Open console' }).click();
    }
    await expect(page.getByTestId('nav-tokens').getAttribute('aria-current')).resolves.toBe('page');
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByTestId('nav-events').click();
    await page.locator('[data-testid="event-row"][data-event="session.status"]').first().waitFor();
    await page.reload();
    // After a reload the view is still Events, filled from GET /events, not empty until something happens.
    await page.locator('[data-testid="event-row"][data-event="session.status"]').first().waitFor({ timeout: 10_000 });
    await page.goBack();
    await expect(page.getByTestId('nav-tokens').getAttribute('aria-current')).resolves.toBe('page');
  });

  it('has no serious or critical accessibility violations in any view, light or dark (axe-core), one h1 each, named message actions', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    // Alice's chat on top of the list for the chats view.
    expect(await sandbox(`/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text: 'See you at the standup' })).toBe(201);
    const views: Array<{ name: string; nav: string; ready: () => Promise<unknown>; after?: () => Promise<unknown> }> = [
      { name: 'connections', nav: 'connections', ready: () => page.getByTestId('connection-row').first().waitFor() },
      {
        name: 'connections-deleted',
        nav: 'connections',
        ready: async () => {
          await page.getByTestId('connections-filter').getByText('Deleted').click();
          await page.getByTestId('deleted-connection-row').first().waitFor();
        },
        after: () => page.getByTestId('connections-filter').getByText('Active').click(),
      },
      {
        name: 'pairing',
        nav: 'connections',
        ready: async () => {
          await page.getByTestId('new-connection').click();
          await page.waitForFunction(() => {
            const doc = (globalThis as unknown as { document: { querySelector(s: string): { complete: boolean; naturalWidth: number } | null } }).document;
            const img = doc.querySelector('[data-testid="pairing-qr"]');
            return !!img && img.complete && img.naturalWidth > 0;
          });
        },
        after: async () => {
          await page.keyboard.press('Escape');
          await page.getByTestId('pairing-panel').waitFor({ state: 'detached' });
        },
      },
      {
        name: 'chats',
        nav: 'chats',
        ready: async () => {
          await page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`).click();
          await page.getByTestId('thread-scroll').getByText('See you at the standup').waitFor();
        },
      },
      { name: 'webhooks', nav: 'webhooks', ready: () => page.getByTestId('webhook-row').first().waitFor() },
      { name: 'tokens', nav: 'tokens', ready: () => page.getByTestId('tokens-table').waitFor() },
      { name: 'billing', nav: 'billing', ready: () => page.getByTestId('billing-slots').waitFor() },
      { name: 'events', nav: 'events', ready: () => page.getByTestId('event-row').first().waitFor() },
      { name: 'settings', nav: 'settings', ready: () => page.getByText('Sandbox (simulated WhatsApp)').waitFor() },
    ];
    const report: string[] = [];
    for (const view of views) {
      await page.getByTestId(`nav-${view.nav}`).click();
      await view.ready();
      await settled(page);
      report.push(...(await checkView(page, view.name)));
      const h1 = await page.locator('h1').count();
      if (h1 !== 1) report.push(`${view.name}: ${h1} h1 elements`);
      if (view.name === 'chats') {
        // Each message's menu button is named by its action and its message (sender and time), not "Message actions".
        const names = await page.getByTestId('message-actions').evaluateAll((els) => els.map((el) => el.getAttribute('aria-label') ?? ''));
        expect(names.length).toBeGreaterThan(3);
        for (const name of names) expect(name).toMatch(/^Actions for the message from (You|Alice Sandbox) at \d{1,2}:\d{2}/);
      }
      await view.after?.();
    }
    await page.setViewportSize({ width: 390, height: 844 });
    expect(report).toEqual([]);
  });

  it('returns to sign-in with the reason when its token is revoked', async () => {
    const other = await runCli(['token', 'create', '--user', 'operator', '--name', 'admin', '--data-dir', dataDir]);
    const revoke = await fetch(`${service.apiUrl}/tokens/${tokenId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${other.stdout.trim()}` },
    });
    expect(revoke.status).toBe(200);
    await page.getByTestId('sign-in-reason').waitFor({ timeout: 10_000 });
    await expect(page.getByTestId('sign-in-reason').textContent()).resolves.toContain('no longer accepted');
    await expect(page.getByTestId('token-input').isVisible()).resolves.toBe(true);
  });
});
