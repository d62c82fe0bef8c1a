/**
 * A message's menu and the thread's menu in Debian Chromium (issues 14 and 15), against the real service in
 * sandbox mode (in process, with the sandbox's phones): "Delete for everyone" on an own message reaches the
 * contact's phone as a revoke; "Forward" sends the message to another chat, where it arrives (on that phone and
 * in the console) marked forwarded; "Export chat" downloads JSONL, an HTML transcript and a ZIP with the media,
 * each checked against the messages API. Skipped, with the reason printed, when no Chromium is installed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { launchConsole, signIn, CHROMIUM } from '../helpers/chromium.ts';
import { unzip } from '../helpers/zip.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console thread menu e2e] skipped: no Chromium at ${CHROMIUM}`);

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';
const BOB_JID = '15550102@s.whatsapp.net';

/** A sandbox phone's view of a message (GET /accounts/:phone/messages). */
interface PhoneMessage {
  id: string;
  from: string;
  to: string;
  text: string;
  revoked: boolean;
  forwarded?: boolean;
}

const pngBytes = () => pngBytesOf(16, 16);

/** Every entry of a ZIP. */

describe.skipIf(!haveChromium)('console: delete for everyone, forward, export chat', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let id: string;
  let userDataDir: string;
  let downloads: string;
  let context: BrowserContext;
  let page: Page;
  const image = pngBytes();

  const phoneMessages = async (phone: string) => (await s.sandbox<PhoneMessage[]>('GET', `/accounts/${enc(phone)}/messages`)).body;
  /** Every message of a chat through the API, newest first. */
  const apiMessages = async (chatId: string) => {
    const all: Json[] = [];
    let before: string | null = null;
    do {
      const p: Json = await s.api('GET', `/connections/${id}/chats/${chatId}/messages?limit=500${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      all.push(...p.body.messages);
      before = p.body.nextBefore;
    } while (before);
    return all;
  };
  const bubble = (text: string) => page.locator('[data-testid="message"]', { hasText: text });
  /**
   * Opens a message's menu and returns it: the dropdown named by that message's button (another message's menu
   * may still be fading out, with items of the same test ids).
   */
  const menuOf = async (message: Locator) => {
    const button = message.getByTestId('message-actions');
    await button.click();
    const menu = page.locator(`[role="menu"][aria-labelledby="${await button.getAttribute('id')}"]`);
    await menu.waitFor();
    return menu;
  };
  const openChat = async (jid: string) => {
    await page.locator(`[data-testid="chat-item"][data-chat-id="${jid}"]`).click();
    await page.getByTestId('thread-scroll').waitFor();
  };
  /** Picks an export from the thread's menu; the file the browser downloaded, and its suggested name. */
  const exportVia = async (item: 'export-jsonl' | 'export-html' | 'export-zip') => {
    await page.getByTestId('thread-menu').click();
    const download = page.waitForEvent('download');
    await page.getByTestId(item).click();
    const d = await download;
    expect(await d.failure()).toBeNull();
    const file = path.join(downloads, d.suggestedFilename());
    await d.saveAs(file);
    return { name: d.suggestedFilename(), file, bytes: fs.readFileSync(file) };
  };

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
    const receive = async (body: Record<string, unknown>) => {
      const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, ...body });
      expect(sent.status).toBe(201);
      const messageId = `false_${ALICE_JID}_${sent.body.id}`;
      await s.frame(`message ${messageId}`, (f) => f.event === 'message' && f.payload.id === messageId);
    };
    await receive({ text: 'Hello from Alice' });
    await receive({ image: { base64: image.toString('base64'), mimetype: 'image/png', caption: 'Harbour at dusk' } });
    await receive({ text: 'Forward me please <b>as is</b> & more' });

    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-thread-'));
    downloads = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-downloads-'));
    ({ context, page } = await launchConsole(userDataDir, 'console-thread-menu e2e', { acceptDownloads: true }));
    await signIn(page, new URL(s.apiUrl).origin, s.token);
    await page.getByTestId('nav-chats').click();
    await openChat(ALICE_JID);
    await bubble('Forward me please').waitFor();
  });

  afterAll(async () => {
    await context?.close();
    await s?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
    if (downloads) fs.rmSync(downloads, { recursive: true, force: true });
  });

  it('"Delete for everyone" on an own message: the contact\'s phone sees the revoke, the thread shows it deleted', async () => {
    await page.getByTestId('composer-input').fill('Sent by mistake');
    await page.getByTestId('composer-input').press('Enter');
    // The stored message (not the optimistic bubble) has the menu.
    const sent = bubble('Sent by mistake').and(page.locator('[data-message-id^="true_"]'));
    await sent.getByTestId('message-actions').waitFor();
    const messageId = (await sent.getAttribute('data-message-id'))!;
    const keyId = messageId.split('_').pop()!;
    await waitFor('Alice has it', async () => ((await phoneMessages(ALICE)).some((m) => m.id === keyId && !m.revoked) ? true : undefined));

    await (await menuOf(sent)).getByTestId('revoke-message').click();
    const row = page.locator(`[data-testid="message"][data-message-id="${messageId}"]`);
    await row.getByTestId('revoked').waitFor();
    await expect(row.getByTestId('revoked').textContent()).resolves.toBe('This message was deleted');
    await expect(bubble('Sent by mistake').count()).resolves.toBe(0);

    const onPhone = await waitFor('the revoke on Alice\'s phone', async () => (await phoneMessages(ALICE)).find((m) => m.id === keyId && m.revoked));
    expect(onPhone.from).toMatch(/15550100/);
    const stored = (await s.api('GET', `/connections/${id}/messages/${encodeURIComponent(messageId)}?chatId=${ALICE_JID}`)).body;
    expect(stored.kind).toBe('revoked');
    // Incoming messages of a 1:1 chat cannot be deleted for everyone: not offered.
    const menu = await menuOf(bubble('Hello from Alice'));
    await menu.getByTestId('forward-message').waitFor();
    await expect(menu.getByTestId('revoke-message').count()).resolves.toBe(0);
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
  });

  it('"Forward" sends the message to another chat, where it arrives marked forwarded (phone and console)', async () => {
    const text = 'Forward me please <b>as is</b> & more';
    await (await menuOf(bubble(text))).getByTestId('forward-message').click();
    await page.getByTestId('forward-to').fill(BOB);
    await page.getByTestId('forward-send').click();
    await page.getByText(`Forwarded to ${BOB_JID}`).waitFor();
    await page.getByTestId('forward-to').waitFor({ state: 'detached' });

    const onPhone = await waitFor('the forward on Bob\'s phone', async () => (await phoneMessages(BOB)).find((m) => m.text === text));
    expect(onPhone.forwarded).toBe(true);
    expect(onPhone.from).toMatch(/15550100/);
    // Not sent into the chat it came from.
    await expect(bubble('Forward me please').count()).resolves.toBe(1);
    expect((await phoneMessages(ALICE)).filter((m) => m.text === text && /15550100/.test(m.from)).length).toBe(0);

    // Bob's chat appears in the list (live) with the message marked Forwarded.
    await openChat(BOB_JID);
    const forwarded = bubble(text);
    await forwarded.waitFor();
    await expect(forwarded.getByTestId('forwarded').textContent()).resolves.toBe('Forwarded');
    await expect(forwarded.getAttribute('data-from-me')).resolves.toBe('true');
    const [stored] = await apiMessages(BOB_JID);
    expect(stored).toMatchObject({ text, isForwarded: true, fromMe: true });
    await openChat(ALICE_JID);
  });

  it('"Export chat" downloads JSONL equal to the messages API, oldest first', async () => {
    const { name, bytes } = await exportVia('export-jsonl');
    expect(name).toBe('chat-15550101_s.whatsapp.net.jsonl');
    const lines = bytes.toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Json);
    const api = (await apiMessages(ALICE_JID)).reverse();
    expect(lines.map((m) => m.id)).toEqual(api.map((m) => m.id));
    expect(lines).toEqual(api);
    // After the seeded history: hello, the image, the one forwarded, and the one deleted for everyone (kept, revoked).
    expect(lines.length).toBeGreaterThan(4);
    expect(lines.slice(-4).map((m) => [m.type, m.kind === 'revoked'])).toEqual([
      ['text', false],
      ['image', false],
      ['text', false],
      ['text', true],
    ]);
  });

  it('"Export chat" downloads a readable HTML transcript with every message of the API, in order', async () => {
    const { name, file } = await exportVia('export-html');
    expect(name).toBe('chat-15550101_s.whatsapp.net.html');
    const api = (await apiMessages(ALICE_JID)).reverse();
    const view = await context.newPage();
    try {
      const requests: string[] = [];
      view.on('request', (r) => requests.push(r.url()));
      await view.goto(`file://${file}`);
      const shown = await view.locator('main .m').evaluateAll((els) => els.map((e) => ({ id: e.id, text: (e as unknown as { innerText: string }).innerText })));
      expect(shown.map((m) => m.id)).toEqual(api.map((m) => m.id));
      for (const [i, m] of api.entries()) {
        const text = shown[i]!.text;
        expect(text).toContain(m.fromMe ? 'You' : 'Alice Sandbox');
        if (m.kind === 'revoked') expect(text).toContain('This message was deleted');
        else expect(text).toContain(m.text); // escaped in the file, the same text on the page
        if (m.type === 'image') expect(text).toContain('[image]');
      }
      await expect(view.locator('main b').count()).resolves.toBe(0);
      await expect(view.locator('footer').textContent()).resolves.toBe(`${api.length} messages · exported by Switchboard`);
      expect(requests).toEqual([`file://${file}`]); // self-contained
    } finally {
      await view.close();
    }
  });

  it('"Export chat" downloads a ZIP whose media file is the image that was received, linked from the transcript', async () => {
    const { name, bytes } = await exportVia('export-zip');
    expect(name).toBe('chat-15550101_s.whatsapp.net.zip');
    const entries = await unzip(bytes);
    const media = [...entries.keys()].filter((n) => n.startsWith('media/'));
    expect(media.length).toBe(1);
    expect(entries.get(media[0]!)!.equals(image)).toBe(true);
    const transcript = entries.get('transcript.html')!.toString('utf8');
    expect(transcript).toContain(`href="${media[0]}"`);
    const ids = [...transcript.matchAll(/<div class="m(?: me)?" id="([^"]+)"/g)].map((m) => m[1]);
    expect(ids).toEqual((await apiMessages(ALICE_JID)).reverse().map((m) => m.id));
    expect(JSON.parse(entries.get('media-missing.json')!.toString('utf8'))).toEqual({ missing: [] });
  });
});
