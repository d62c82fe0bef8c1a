/**
 * Edits and deletes for everyone reach the open console live (issue 25 item 2, issue 28 item 4), in Debian Chromium
 * against the real service in sandbox mode: a contact edits and deletes messages of the open chat and of a chat that
 * is not open. The open thread's bubble shows the new text, or "This message was deleted" without its text and
 * reactions, without reopening the chat; the chat list's preview follows when the message is the chat's last one
 * (and only then); after a reload the list shows the same. Skipped, with the reason printed, when no Chromium is
 * installed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchConsole, signIn } from '../helpers/chromium.ts';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[console live edits e2e] skipped: no Chromium at ${CHROMIUM}`);

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';
const BOB_JID = '15550102@s.whatsapp.net';

describe.skipIf(!haveChromium)('console: live edits and deletes for everyone', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let id: string;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;
  const keys: Record<string, string> = {};

  /** A contact's message to the account, once the service stored it; its key id. */
  const receive = async (phone: string, text: string) => {
    const sent = await s.sandbox('POST', `/accounts/${enc(phone)}/messages`, { to: PHONE, text });
    expect(sent.status).toBe(201);
    const messageId = `false_${phone.slice(1)}@s.whatsapp.net_${sent.body.id as string}`;
    await s.frame(`message ${messageId}`, (f) => f.event === 'message' && f.payload.id === messageId);
    return sent.body.id as string;
  };
  /** A change a contact's phone makes (an edit, a revoke, a reaction), once the service has it. */
  const contact = async (phone: string, what: 'edits' | 'revokes' | 'reactions', body: Record<string, unknown>, event: string) => {
    const res = await s.sandbox('POST', `/accounts/${enc(phone)}/${what}`, { to: PHONE, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const messageId = `false_${phone.slice(1)}@s.whatsapp.net_${body.messageId as string}`;
    await s.frame(`${event} ${messageId}`, (f) => f.event === event && f.payload.id === messageId && (event !== 'message.reaction' || f.payload.emoji === body.emoji));
  };
  const bubble = (keyId: string, jid = ALICE_JID) => page.locator(`[data-testid="message"][data-message-id="false_${jid}_${keyId}"]`);
  const preview = (jid: string) => page.locator(`[data-testid="chat-item"][data-chat-id="${jid}"] [data-testid="chat-preview"]`);
  /** Waits until the chat's preview reads `text`. */
  const previewReads = (jid: string, text: string) =>
    waitFor(`preview of ${jid}: ${text}`, async () => ((await preview(jid).textContent()) === text ? true : undefined));

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
    keys.hello = await receive(ALICE, 'Hello from Alice');
    keys.code = await receive(ALICE, 'My door code is 4711');
    keys.bob = await receive(BOB, 'Bob says hi');

    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-live-'));
    ({ context, page } = await launchConsole(userDataDir, 'console-live-edits e2e'));
    await signIn(page, new URL(s.apiUrl).origin, s.token);
    await page.getByTestId('nav-chats').click();
    await page.locator(`[data-testid="chat-item"][data-chat-id="${ALICE_JID}"]`).click();
    await bubble(keys.code!).waitFor();
  });

  afterAll(async () => {
    await context?.close();
    await s?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('an edit shows in the open thread at once; the preview follows the last message only', async () => {
    await contact(ALICE, 'edits', { messageId: keys.hello, text: 'Hello from Alice, edited' }, 'message.edited');
    await bubble(keys.hello!).getByText('Hello from Alice, edited').waitFor();
    await expect(preview(ALICE_JID).textContent()).resolves.toBe('My door code is 4711');

    await contact(ALICE, 'edits', { messageId: keys.code, text: 'My door code is 0815' }, 'message.edited');
    await bubble(keys.code!).getByText('My door code is 0815').waitFor();
    await previewReads(ALICE_JID, 'My door code is 0815');
  });

  it('a delete of the last message: the bubble says deleted, its text and reactions gone, and so does the preview', async () => {
    // A message that arrives while the chat is open (announced to screen readers), with a reaction.
    keys.pin = await receive(ALICE, 'My PIN is 2468');
    await bubble(keys.pin).waitFor();
    await previewReads(ALICE_JID, 'My PIN is 2468');
    await expect(page.getByTestId('message-announcer').textContent()).resolves.toContain('2468');
    await contact(ALICE, 'reactions', { messageId: keys.pin, emoji: '❤️' }, 'message.reaction');
    await bubble(keys.pin).getByTestId('reaction').waitFor();

    await contact(ALICE, 'revokes', { messageId: keys.pin }, 'message.revoked');
    await bubble(keys.pin).getByTestId('revoked').waitFor();
    await expect(bubble(keys.pin).getByTestId('revoked').textContent()).resolves.toBe('This message was deleted');
    await expect(bubble(keys.pin).getByTestId('reaction').count()).resolves.toBe(0);
    await previewReads(ALICE_JID, 'This message was deleted');
    // the deleted text is nowhere on the page (thread, list, screen-reader announcement)
    await expect(page.locator('body').textContent()).resolves.not.toContain('2468');
    // the edited older message is untouched
    await bubble(keys.code!).getByText('My door code is 0815').waitFor();
  });

  it('reaches the preview of a chat that is not open, and survives a reload', async () => {
    await contact(BOB, 'revokes', { messageId: keys.bob }, 'message.revoked');
    await previewReads(BOB_JID, 'This message was deleted');

    await page.reload();
    await page.locator('[data-testid="live-indicator"][data-state="open"]').waitFor();
    await page.getByTestId('nav-chats').click();
    await previewReads(ALICE_JID, 'This message was deleted');
    await previewReads(BOB_JID, 'This message was deleted');
    await expect(page.locator('body').textContent()).resolves.not.toContain('Bob says hi');
    // the API agrees
    const chats = (await s.api('GET', `/connections/${id}/chats`)).body as Array<{ id: string; lastMessage: { body: string; kind: string } }>;
    expect(chats.find((c) => c.id === BOB_JID)!.lastMessage).toMatchObject({ body: '', kind: 'revoked' });
  });
});
