/**
 * Issue 17 (findings of the spec review) through the running service and the sandbox, for the points the
 * integration test (test/integration/api-review.test.ts) checks against the store alone:
 * - item 2: a history sync whose chats carry no messages (the sandbox sends them as metadata, as real phones do for
 *   older chats) lists every chat with a `lastMessage` object — the phone's activity time, body "" — until a
 *   message arrives;
 * - item 3: every chatId form (`@s.whatsapp.net`, `@c.us`, the LID, `+1 555-0101`, digits) on every route that
 *   takes one — send, forward, react, edit, mark-read, typing, reads, export, search, message media, revoke —
 *   reaches the contact and
 *   answers for the canonical chat;
 * - item 6: bodyless POST/DELETE with `Content-Type: application/json`;
 * - item 7: webhook event types checked, `test` on a paused webhook delivered, events held while paused and
 *   delivered in order on resume;
 * - item 8: a revoke clears the reactions (the contact's and our own).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../service/sandbox/index.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';
import { startConsumer, type Consumer } from '../integration/webhooks-consumer.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB_JID = '15550102@s.whatsapp.net';

const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

interface PhoneMessage {
  id: string;
  from: string;
  text: string;
  timestamp: number;
  reaction?: unknown;
  revoke?: unknown;
  groupId?: string;
  edits: Array<{ text: string }>;
}

describe('issue 17 item 2: chats synced without messages', { timeout: 90_000 }, () => {
  let dir: string;
  let sandbox: Sandbox;
  let s: SandboxService;
  let id: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-meta-history-'));
    // A sandbox whose history sync carries the chats but none of their messages.
    sandbox = await startSandbox({ dataDir: dir, historyMessagesPerChat: 0 });
    await sandbox.seedDemo();
    s = await startSandboxService({ config: { waUrl: sandbox.wsUrl } });
    id = await s.pair(PHONE);
  });

  afterAll(async () => {
    await s?.close();
    await sandbox?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lists them with lastMessage { body: "", timestamp: the phone\'s activity, fromMe: false }, replaced by the first message', async () => {
    // The newest demo messages of Alice's and Bob's chats were sent to the phone: their times are the activity.
    const received = (await s.sandbox('GET', `/accounts/${enc(PHONE)}/messages`)).body as PhoneMessage[];
    const newestFrom = (pn: string) => Math.max(...received.filter((m) => m.from === pn && !m.groupId).map((m) => m.timestamp));
    const chats = await waitFor('the synced chats', async () => {
      const list = (await s.api('GET', `/connections/${id}/chats`)).body as Array<{ id: string; isGroup: boolean; lastMessage: unknown }>;
      return list.some((c) => c.id === ALICE_JID) && list.some((c) => c.id === BOB_JID) && list.some((c) => c.isGroup) ? list : undefined;
    });
    for (const chat of chats) {
      expect(chat.lastMessage, chat.id).toMatchObject({ body: '', fromMe: false });
      expect((chat.lastMessage as { timestamp: number }).timestamp, chat.id).toBeGreaterThan(0);
    }
    expect(chats.find((c) => c.id === ALICE_JID)!.lastMessage).toEqual({ body: '', timestamp: newestFrom('+15550101'), fromMe: false, id: null, kind: null });
    expect(chats.find((c) => c.id === BOB_JID)!.lastMessage).toEqual({ body: '', timestamp: newestFrom('+15550102'), fromMe: false, id: null, kind: null });
    // No messages came with them.
    expect((await s.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages`)).body).toEqual({ messages: [], nextBefore: null, historyStartsAt: null });

    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'now a real message' })).status).toBe(201);
    const alice = await waitFor('the message as lastMessage', async () => {
      const list = (await s.api('GET', `/connections/${id}/chats`)).body as Array<{ id: string; lastMessage: { body: string } }>;
      const chat = list.find((c) => c.id === ALICE_JID);
      return chat?.lastMessage.body === 'now a real message' ? chat : undefined;
    });
    expect(alice.lastMessage).toMatchObject({ body: 'now a real message', fromMe: false, kind: 'text' });
    expect((alice.lastMessage as unknown as { id: string }).id).toMatch(new RegExp(`^false_${ALICE_JID}_`));
  });
});

describe('issue 17 items 3, 6, 7, 8 through the service and the sandbox', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let consumer: Consumer;
  let id: string;
  let aliceLid: string;
  let image: Buffer;
  let imageId: string;

  const atAlice = async () => (await s.sandbox('GET', `/accounts/${enc(ALICE)}/messages`)).body as PhoneMessage[];
  /** Alice sends `text`; resolves with the stored message id. */
  const fromAlice = async (body: Record<string, unknown>) => {
    const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, ...body });
    expect(sent.status).toBe(201);
    const messageId = `false_${ALICE_JID}_${sent.body.id}`;
    await s.frame(`message ${messageId}`, (f) => f.event === 'message' && f.payload.id === messageId);
    return messageId;
  };

  beforeAll(async () => {
    consumer = await startConsumer();
    s = await startSandboxService({ allowLan: true });
    id = await s.pair(PHONE);
    aliceLid = (await s.sandbox('GET', `/accounts/${enc(ALICE)}`)).body.lid as string;
    expect(aliceLid).toMatch(/@lid$/);
    const png = new PNG({ width: 5, height: 5 });
    for (let i = 0; i < png.data.length; i += 4) png.data.set([40, i % 255, 90, 255], i);
    image = PNG.sync.write(png);
    imageId = await fromAlice({ image: { base64: image.toString('base64'), mimetype: 'image/png' } });
  });

  afterAll(async () => {
    await s?.close();
    await consumer?.close();
  });

  describe.each([
    ['a phone-number JID', () => ALICE_JID],
    ['a @c.us JID', () => '15550101@c.us'],
    ['the LID', () => aliceLid],
    ['a formatted number', () => '+1 555-0101'],
    ['bare digits', () => '15550101'],
  ])('item 3: chatId as %s', (_name, form) => {
    let sentId: string;

    it('sends (the contact gets it), reads the canonical chat, the message and the media', async () => {
      const chatId = form();
      const sent = await s.api('POST', `/connections/${id}/send`, { chatId, text: `to ${chatId}`, skipPresence: true });
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      expect(sent.body.chatId).toBe(ALICE_JID);
      sentId = sent.body.id as string;
      await waitFor('the text at Alice', async () => ((await atAlice()).some((m) => m.id === keyIdOf(sentId) && m.text === `to ${chatId}`) ? true : undefined));

      const page = await s.api('GET', `/connections/${id}/chats/${encodeURIComponent(chatId)}/messages?limit=5`);
      expect(page.status).toBe(200);
      expect(page.body.messages.map((m: Json) => m.chatId)).toEqual(page.body.messages.map(() => ALICE_JID));
      expect(page.body.messages.map((m: Json) => m.id)).toContain(sentId);
      const one = await s.api('GET', `/connections/${id}/messages/${encodeURIComponent(sentId)}?chatId=${encodeURIComponent(chatId)}`);
      expect(one.body).toMatchObject({ id: sentId, text: `to ${chatId}` });
      const media = await s.raw(`/connections/${id}/messages/${encodeURIComponent(imageId)}/media?chatId=${encodeURIComponent(chatId)}`);
      expect(media.status).toBe(200);
      expect(media.bytes.equals(image)).toBe(true);
      const exported = await s.raw(`/connections/${id}/chats/${encodeURIComponent(chatId)}/export?format=jsonl`);
      expect(exported.bytes.toString()).toContain(`"id":"${sentId}"`);
      const found = await s.api('GET', `/connections/${id}/search?q=${encodeURIComponent(`"to ${chatId}"`)}&chatId=${encodeURIComponent(chatId)}`);
      expect(found.body.results.map((r: Json) => r.message.id)).toContain(sentId);
    });

    it('forwards the contact\'s image from and to the chat', async () => {
      const chatId = form();
      const forwarded = await s.api('POST', `/connections/${id}/forward`, { chatId, fromChatId: chatId, messageId: imageId, skipPresence: true });
      expect(forwarded.status, JSON.stringify(forwarded.body)).toBe(201);
      expect(forwarded.body).toMatchObject({ chatId: ALICE_JID, type: 'image', isForwarded: true });
      await waitFor('the forwarded image at Alice', async () => ((await atAlice()).some((m) => m.id === keyIdOf(forwarded.body.id)) ? true : undefined));
    });

    it('reacts, edits, marks read and types; the contact sees each', async () => {
      const chatId = form();
      const incoming = await fromAlice({ text: `please read, ${chatId}` });
      const reacted = await s.api('POST', `/connections/${id}/react`, { chatId, messageId: incoming, emoji: '👀', skipPresence: true });
      expect(reacted.status, JSON.stringify(reacted.body)).toBe(201);
      await waitFor('the reaction at Alice', async () =>
        (await atAlice()).some((m) => m.reaction !== undefined && JSON.stringify(m.reaction).includes(keyIdOf(incoming))) ? true : undefined,
      );

      const edited = await s.api('PUT', `/connections/${id}/messages/${encodeURIComponent(sentId)}`, { chatId, text: `edited for ${chatId}` });
      expect(edited.status, JSON.stringify(edited.body)).toBe(200);
      await waitFor('the edit at Alice', async () =>
        (await atAlice()).some((m) => m.id === keyIdOf(sentId) && m.edits.some((e) => e.text === `edited for ${chatId}`)) ? true : undefined,
      );

      expect((await s.api('POST', `/connections/${id}/mark-read`, { chatId })).body).toEqual({ success: true });
      await waitFor('the read receipt at Alice', async () => {
        const receipts = (await s.sandbox('GET', `/accounts/${enc(ALICE)}/receipts`)).body as Array<{ type: string; messageIds: string[] }>;
        return receipts.some((r) => r.type === 'read' && r.messageIds.includes(keyIdOf(incoming))) ? true : undefined;
      });

      const states = async () => ((await s.sandbox('GET', `/accounts/${enc(ALICE)}/chatstates`)).body as unknown[]).length;
      const before = await states();
      expect((await s.api('POST', `/connections/${id}/typing`, { chatId })).body).toEqual({ success: true });
      expect((await s.api('POST', `/connections/${id}/typing/stop`, { chatId })).body).toEqual({ success: true });
      await waitFor('composing and paused at Alice', async () => ((await states()) >= before + 2 ? true : undefined));
    });

    it('item 8: revokes the message; its reactions (the contact\'s and ours) are gone', async () => {
      const chatId = form();
      expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/reactions`, { to: PHONE, messageId: keyIdOf(sentId), emoji: '❤️' })).status).toBe(201);
      expect((await s.api('POST', `/connections/${id}/react`, { chatId, messageId: sentId, emoji: '👍', skipPresence: true })).status).toBe(201);
      const route = `/connections/${id}/messages/${encodeURIComponent(sentId)}?chatId=${encodeURIComponent(chatId)}`;
      await waitFor('both reactions stored', async () => ((await s.api('GET', route)).body.reactions.length === 2 ? true : undefined));

      const revoked = await s.api('DELETE', route);
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      expect(revoked.body).toMatchObject({ id: sentId, kind: 'revoked', reactions: [] });
      expect((await s.api('GET', route)).body).toMatchObject({ kind: 'revoked', text: '', media: null, reactions: [] });
      await waitFor('the revoke at Alice', async () =>
        (await atAlice()).some((m) => m.revoke !== undefined && JSON.stringify(m.revoke).includes(keyIdOf(sentId))) ? true : undefined,
      );
    });
  });

  describe('item 6: bodyless requests sent with Content-Type: application/json', () => {
    const empty = { 'content-type': 'application/json' };

    it('POST restart and DELETE a connection are accepted', async () => {
      const other = await s.api('POST', '/connections', { name: 'to delete' });
      expect(other.status).toBe(201);
      const restarted = await fetch(`${s.apiUrl}/connections/${other.body.id}/restart`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.token}`, ...empty },
        body: '',
      });
      expect(restarted.status).toBe(200);
      const deleted = await fetch(`${s.apiUrl}/connections/${other.body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${s.token}`, ...empty } });
      expect(deleted.status).toBe(200);
      expect(await deleted.json()).toEqual({ success: true });
    });
  });

  describe('item 7: webhooks', () => {
    let hookId: string;
    const deliveries = () => consumer.on('/review').filter((r) => r.verified?.event === 'message');

    it('refuses an unknown event type with a 400 naming it, and accepts * and the documented types', async () => {
      const typo = await s.api('POST', `/connections/${id}/webhooks`, { url: consumer.url('/review'), events: ['message', 'mesage'] });
      expect(typo.status).toBe(400);
      expect(typo.body.message).toMatch(/^body\/events\/1: unknown event type "mesage"/);
      const all = await s.api('POST', `/connections/${id}/webhooks`, { url: consumer.url('/all'), events: ['*'] });
      expect(all.status).toBe(201);
      const hook = await s.api('POST', `/connections/${id}/webhooks`, { url: consumer.url('/review'), events: ['message'] });
      expect(hook.status).toBe(201);
      hookId = hook.body.id as string;
      consumer.secret('/review', hook.body.signingSecret as string);
    });

    it('holds events while paused (log status paused), sends test events anyway, and delivers the held ones in order on resume', async () => {
      expect((await s.api('PUT', `/webhooks/${hookId}`, { active: false })).body.active).toBe(false);
      const held = [await fromAlice({ text: 'held 1' }), await fromAlice({ text: 'held 2' })];
      const logs = async () => (await s.api('GET', `/webhooks/${hookId}/logs`)).body as Array<{ eventType: string; status: string; payload: Json }>;
      await waitFor('two held entries', async () => ((await logs()).filter((l) => l.status === 'paused').length === 2 ? true : undefined));
      expect(deliveries()).toEqual([]);

      const test = await fetch(`${s.apiUrl}/webhooks/${hookId}/test`, { method: 'POST', headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' } });
      expect(test.status).toBe(200);
      await waitFor('the test delivery', () => consumer.on('/review').find((r) => r.verified?.event === 'webhook.test'));
      await waitFor('the test delivery logged as delivered', async () =>
        (await logs()).some((l) => l.eventType === 'webhook.test' && l.status === 'delivered') ? true : undefined,
      );
      expect(deliveries()).toEqual([]); // the held events are still held

      expect((await s.api('PUT', `/webhooks/${hookId}`, { active: true })).body.active).toBe(true);
      await waitFor('the held events delivered', () => (deliveries().length === 2 ? true : undefined));
      expect(deliveries().map((r) => r.verified!.payload.id)).toEqual(held);
      await waitFor('both logged as delivered', async () =>
        (await logs()).filter((l) => l.eventType === 'message' && l.status === 'delivered').length === 2 ? true : undefined,
      );
    });
  });
});
