/**
 * The console's profile and call features (issue 14 item 9) in Debian Chromium against `switchboard serve --sandbox`
 * as a child process: the contact panel of a chat (the contact's picture with the bytes the sandbox serves, name,
 * about, Block / Unblock kept by the sandbox server), the account's own profile edited in Settings (name, about and
 * picture reach the sandbox server; a bad picture is refused with the reason), and an incoming call shown as a
 * notification with Reject (the caller's phone sees it rejected; a call the caller ends takes its notification away).
 * Skipped, with the reason printed, when no Chromium is installed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { launchConsole, signIn, CHROMIUM } from '../helpers/chromium.ts';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console profiles e2e] skipped: no Chromium at ${CHROMIUM}`);

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const SHOTS = path.resolve('test-results/screenshots');
const enc = encodeURIComponent;

/** Runs in the page: whether the image matching `selector` has loaded and has pixels. */
const imageLoaded = (selector: string) => {
  const img = (globalThis as unknown as { document: { querySelector(s: string): { complete: boolean; naturalWidth: number } | null } }).document.querySelector(selector);
  return !!img && img.complete && img.naturalWidth > 0;
};

describe.skipIf(!haveChromium)('console: contact panel, own profile, incoming calls', { timeout: 120_000 }, () => {
  let dataDir: string;
  let userDataDir: string;
  let service: ServiceProcess;
  let token: string;
  let context: BrowserContext;
  let page: Page;
  let connectionId: string;
  let aliceJpeg: Buffer;
  const pictures: Array<{ url: string; authorization: string | undefined; body: Buffer }> = [];

  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${service.apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const sandbox = async (method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${service.sandboxUrl}${route}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const sandboxPicture = async (phone: string) => Buffer.from(await (await fetch(`${service.sandboxUrl}/accounts/${enc(phone)}/profile/picture`)).arrayBuffer());
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });

  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-profiles-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-profiles-'));
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir, '--typing-delay-ms', '0']);
    const created = await runCli(['token', 'create', '--user', 'operator', '--name', 'console', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    token = created.stdout.trim();

    // A paired connection, a chat with Alice, and Alice's about and picture, through the API and the sandbox.
    connectionId = (await api('POST', '/connections', { name: 'desk' })).body.id as string;
    const qr = await waitFor('a QR code', async () => {
      const res = await api('GET', `/connections/${connectionId}/qr?format=text`);
      return res.status === 200 ? (res.body.value as string) : undefined;
    });
    expect((await sandbox('POST', `/accounts/${enc(PHONE)}/scan`, { qr })).status).toBe(200);
    await waitFor('online', async () => ((await api('GET', `/connections/${connectionId}`)).body.status === 'online' ? true : undefined), {
      timeoutMs: 30_000,
    });
    aliceJpeg = await sharp({ create: { width: 240, height: 240, channels: 3, background: { r: 240, g: 160, b: 40 } } }).jpeg().toBuffer();
    expect((await sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { about: 'Out hiking', picture: { base64: aliceJpeg.toString('base64') } })).status).toBe(200);
    expect((await sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'Hello from Alice' })).status).toBe(201);

    ({ context, page } = await launchConsole(userDataDir, 'console profiles e2e'));
    // Profile pictures as the page receives them from the media proxy.
    await page.route('**/media/profile-*', async (route) => {
      const response = await route.fetch();
      pictures.push({ url: route.request().url(), authorization: route.request().headers().authorization, body: await response.body() });
      await route.fulfill({ response });
    });
    await signIn(page, new URL(service.apiUrl).origin, token);
  });

  afterAll(async () => {
    await context?.close();
    await service?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it("opens a contact's panel: the picture's bytes, name and about; blocks and unblocks", async () => {
    await page.getByTestId('nav-chats').click();
    await page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`).click();
    await page.getByTestId('thread-scroll').getByText('Hello from Alice').waitFor();
    await page.getByTestId('contact-info-open').click();
    const panel = page.getByTestId('contact-info');
    await expect(panel.getByTestId('contact-name').textContent()).resolves.toBe('Alice Sandbox');
    await expect(panel.getByTestId('contact-about').textContent()).resolves.toBe('Out hiking');
    await page.waitForFunction(imageLoaded, '[data-testid="contact-picture"] img');
    // the bytes the console received through the media proxy (with its Bearer header) for the picture it shows
    const picture = pictures.find((p) => p.url.includes('/media/profile-15550101-'));
    expect(picture?.authorization).toBe(`Bearer ${token}`);
    expect(picture?.body.equals(aliceJpeg)).toBe(true);
    await shot('contact-panel');

    await panel.getByTestId('contact-block').click();
    await panel.locator('[data-testid="contact-block"][data-blocked="true"]').waitFor();
    await expect(panel.getByTestId('contact-block').textContent()).resolves.toBe('Unblock');
    expect((await sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body).toEqual([ALICE]);
    // WhatsApp's server now refuses Alice's messages to the account
    expect((await sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'blocked?' })).status).toBe(403);
    await panel.getByTestId('contact-block').click();
    await panel.locator('[data-testid="contact-block"][data-blocked="false"]').waitFor();
    expect((await sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body).toEqual([]);

    // Refresh asks WhatsApp again instead of the 24 h cache
    expect((await sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { about: 'Back home' })).status).toBe(200);
    await panel.getByTestId('contact-refresh').click();
    await panel.getByTestId('contact-about').filter({ hasText: 'Back home' }).waitFor();
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'hidden' });
  });

  it("edits the account's own name, about and picture in Settings; the server has them", async () => {
    await page.getByTestId('nav-settings').click();
    const card = page.getByTestId('own-profile');
    await card.getByTestId('own-name').waitFor();
    await expect(card.getByTestId('own-name').inputValue()).resolves.toBe('Sandbox Phone');
    await card.getByTestId('own-name').fill('Console Desk');
    await card.getByTestId('own-about').fill('Answering from the console');
    await card.getByTestId('own-profile-save').click();
    await page.getByText('Profile saved').waitFor();
    const atServer = (await sandbox('GET', `/accounts/${enc(PHONE)}/profile`)).body;
    expect(atServer).toMatchObject({ pushName: 'Console Desk', about: 'Answering from the console' });
    await expect(card.getByTestId('own-profile-save').isDisabled()).resolves.toBe(true);

    // A bad file: the reason is shown, nothing changes
    const [badChooser] = await Promise.all([page.waitForEvent('filechooser'), card.getByTestId('own-picture-change').click()]);
    await badChooser.setFiles({ name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('not an image at all') });
    await expect(card.getByTestId('own-profile-error').textContent()).resolves.toMatch(/must be a JPEG or PNG image/);
    expect((await sandbox('GET', `/accounts/${enc(PHONE)}/profile`)).body.picture).toBeNull();

    const png = await sharp({ create: { width: 400, height: 300, channels: 4, background: { r: 20, g: 120, b: 220, alpha: 1 } } }).png().toBuffer();
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), card.getByTestId('own-picture-change').click()]);
    await chooser.setFiles({ name: 'me.png', mimeType: 'image/png', buffer: png });
    await page.getByText('Profile picture changed').waitFor();
    await page.waitForFunction(imageLoaded, '[data-testid="own-picture"] img');
    await expect(card.getByTestId('own-profile-error').count()).resolves.toBe(0);
    const atServerPicture = await sandboxPicture(PHONE);
    expect((await sharp(atServerPicture).metadata()).width).toBe(640);
    expect(pictures.find((p) => p.url.includes('/media/profile-15550100-'))?.body.equals(atServerPicture)).toBe(true);
    await shot('settings-own-profile');
  });

  it('shows an incoming call as a notification with Reject; the caller sees it rejected', async () => {
    const call = await sandbox('POST', `/accounts/${enc(ALICE)}/calls`, { to: PHONE, isVideo: true });
    expect(call.status).toBe(201);
    const note = page.locator(`[data-testid="incoming-call"][data-call-id="${call.body.id as string}"]`);
    await note.waitFor({ timeout: 20_000 });
    await expect(note.textContent()).resolves.toContain('Alice Sandbox');
    await page.getByText('Incoming video call').waitFor();
    await shot('incoming-call');
    await note.getByTestId('call-reject').click();
    await note.waitFor({ state: 'detached' });
    await waitFor('the call rejected at the caller', async () => {
      const calls = (await sandbox('GET', `/accounts/${enc(ALICE)}/calls`)).body as Array<{ id: string; status: string; rejected: boolean }>;
      const c = calls.find((x) => x.id === call.body.id);
      return c?.status === 'rejected' && c.rejected ? c : undefined;
    });

    // A call the caller hangs up takes its notification away by itself
    const second = await sandbox('POST', `/accounts/${enc(ALICE)}/calls`, { to: PHONE });
    const secondNote = page.locator(`[data-testid="incoming-call"][data-call-id="${second.body.id as string}"]`);
    await secondNote.waitFor({ timeout: 20_000 });
    await page.getByText('Incoming voice call').waitFor();
    expect((await sandbox('POST', `/accounts/${enc(ALICE)}/calls/${second.body.id as string}/end`)).status).toBe(200);
    await secondNote.waitFor({ state: 'detached', timeout: 20_000 });
  });
});
