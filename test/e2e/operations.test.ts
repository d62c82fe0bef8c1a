/**
 * Everyday operations (issue 14 items 2, 5, 6, 7, 8) through real Baileys and the sandbox: delete for everyone (own
 * message revoked at the contact's phone, someone else's refused in a 1:1 chat, another member's as group admin),
 * forward of a text and of an image (the contact decrypts identical bytes, both marked forwarded, incoming forwarded
 * messages marked too), stickers (a PNG arrives as a 512×512 WebP, a WebP as is) and the block list (kept by the
 * sandbox server, which refuses a blocked contact's messages) and calls (events, rejection by API and automatic with
 * a text to the caller).
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { eventSchemaErrors, loggedEvents } from '../helpers/event-schemas.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';
const BOB_JID = '15550102@s.whatsapp.net';

const pngBytes = (width = 20, height = 10) => pngBytesOf(width, height);

describe('operations', { timeout: 90_000 }, () => {
  let s: SandboxService;
  let id: string;
  const phoneMessages = async (phone: string) => (await s.sandbox<Json[]>('GET', `/accounts/${enc(phone)}/messages`)).body;
  const atPhone = (phone: string, keyId: string) =>
    waitFor(`message ${keyId} at ${phone}`, async () => (await phoneMessages(phone)).find((m: Json) => m.id === keyId));
  const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

  /** A message from `phone` to the connection, once the service stored it; its Message id. */
  async function incoming(phone: string, body: Json): Promise<string> {
    const sent = await s.sandbox('POST', `/accounts/${enc(phone)}/messages`, { to: PHONE, ...body });
    expect(sent.status).toBe(201);
    const messageId = `false_${phone.slice(1)}@s.whatsapp.net_${sent.body.id as string}`;
    await s.frame('incoming message', (f) => f.event === 'message' && f.payload.id === messageId);
    return messageId;
  }

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
  });
  afterAll(() => s?.close());

  describe('delete for everyone', () => {
    it('revokes an own message: 200 type revoked, a message.revoked event, the contact sees it revoked', async () => {
      const sent = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'oops', skipPresence: true });
      expect(sent.status).toBe(201);
      await atPhone(ALICE, keyIdOf(sent.body.id));
      const res = await s.api('DELETE', `/connections/${id}/messages/${sent.body.id}?chatId=${encodeURIComponent(ALICE)}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: sent.body.id, kind: 'revoked', text: '', media: null, fromMe: true });
      await s.frame('message.revoked', (f) => f.event === 'message.revoked' && f.payload.id === sent.body.id);
      await waitFor('revoked at the phone', async () => ((await atPhone(ALICE, keyIdOf(sent.body.id))).revoked ? true : undefined));
      const again = await s.api('DELETE', `/connections/${id}/messages/${sent.body.id}?chatId=${ALICE_JID}`);
      expect(again.status).toBe(200);
      expect(again.body.kind).toBe('revoked');
      expect((await s.api('GET', `/connections/${id}/messages/${sent.body.id}?chatId=${ALICE_JID}`)).body.kind).toBe('revoked');
    });

    it("refuses someone else's message in a 1:1 chat with 403, and an unknown message with 404", async () => {
      const theirs = await incoming(ALICE, { text: 'mine, not yours' });
      const res = await s.api('DELETE', `/connections/${id}/messages/${theirs}?chatId=${ALICE_JID}`);
      expect(res.status).toBe(403);
      expect(res.body.message).toBe('Only your own messages can be deleted for everyone in a 1:1 chat');
      expect((await s.api('GET', `/connections/${id}/messages/${theirs}?chatId=${ALICE_JID}`)).body.type).toBe('text');
      const unknown = await s.api('DELETE', `/connections/${id}/messages/true_${ALICE_JID}_NOPE?chatId=${ALICE_JID}`);
      expect(unknown.status).toBe(404);
      const wrongChat = await s.api('DELETE', `/connections/${id}/messages/${theirs}?chatId=${BOB_JID}`);
      expect(wrongChat.status).toBe(404);
    });

    it("as group admin revokes another member's message; the other members see it revoked", async () => {
      const groups = (await s.sandbox<Json[]>('GET', `/groups?member=${enc(PHONE)}`)).body;
      const group = groups.find((g: Json) => g.participants.some((p: Json) => p.phoneNumber === PHONE && p.isAdmin));
      expect(group).toBeDefined();
      const sent = await s.sandbox('POST', `/groups/${encodeURIComponent(group.id)}/messages`, { from: ALICE, text: 'spam' });
      expect(sent.status).toBe(201);
      const messageId = `false_${group.id}_${sent.body.id as string}`;
      await s.frame('group message', (f) => f.event === 'message' && f.payload.id === messageId);
      const res = await s.api('DELETE', `/connections/${id}/messages/${messageId}?chatId=${encodeURIComponent(group.id)}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: messageId, kind: 'revoked', fromMe: false });
      await waitFor('revoked at a member', async () =>
        (await phoneMessages(BOB)).find((m: Json) => m.id === sent.body.id)?.revoked ? true : undefined,
      );
      // the revoked Message keeps the spec's type (`text`); `kind` says it was deleted
      expect(res.body.type).toBe('text');
    });

    it("refuses another member's message in a group where the account is not admin with 403; nothing is revoked", async () => {
      // Alice creates the group: the account is a plain member.
      const created = await s.sandbox('POST', '/groups', { creator: ALICE, subject: 'Alice only admin', participants: [PHONE, BOB] });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const groupId = created.body.id as string;
      const sent = await s.sandbox('POST', `/groups/${encodeURIComponent(groupId)}/messages`, { from: BOB, text: 'keep me' });
      expect(sent.status).toBe(201);
      const messageId = `false_${groupId}_${sent.body.id as string}`;
      await s.frame('group message', (f) => f.event === 'message' && f.payload.id === messageId);
      const from = s.frames.length;
      const res = await s.api('DELETE', `/connections/${id}/messages/${messageId}?chatId=${encodeURIComponent(groupId)}`);
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body.message).toBe("Only a group admin can delete another member's message");
      expect((await s.api('GET', `/connections/${id}/messages/${messageId}?chatId=${encodeURIComponent(groupId)}`)).body.kind).toBe('text');
      expect((await phoneMessages(ALICE)).find((m: Json) => m.id === sent.body.id)?.revoked).toBe(false);
      expect(s.frames.slice(from).some((f) => f.event === 'message.revoked' && f.payload.id === messageId)).toBe(false);
      // the account's own message in the same group is still its to delete
      const ours = await s.api('POST', `/connections/${id}/send`, { chatId: groupId, text: 'mine to delete', skipPresence: true });
      expect(ours.status, JSON.stringify(ours.body)).toBe(201);
      const own = await s.api('DELETE', `/connections/${id}/messages/${ours.body.id}?chatId=${encodeURIComponent(groupId)}`);
      expect(own.status, JSON.stringify(own.body)).toBe(200);
      expect(own.body).toMatchObject({ kind: 'revoked', type: 'text' });
    });
  });

  describe('forward', () => {
    it('forwards a text: 201 isForwarded, the contact sees it forwarded', async () => {
      const original = await incoming(ALICE, { text: 'pass it on' });
      const res = await s.api('POST', `/connections/${id}/forward`, { chatId: BOB, messageId: original, fromChatId: ALICE });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ chatId: BOB_JID, fromMe: true, text: 'pass it on', isForwarded: true });
      const atBob = await atPhone(BOB, keyIdOf(res.body.id));
      expect(atBob).toMatchObject({ text: 'pass it on', forwarded: true });
    });

    it('forwards an image without re-uploading: identical bytes at the contact and through the media proxy', async () => {
      const png = pngBytes();
      const original = await incoming(ALICE, { image: { base64: png.toString('base64'), mimetype: 'image/png', caption: 'look' } });
      const stored = (await s.api('GET', `/connections/${id}/messages/${original}?chatId=${ALICE_JID}`)).body;
      await waitFor('original media on disk', async () => ((await s.raw(stored.media.url)).status === 200 ? true : undefined));
      const res = await s.api('POST', `/connections/${id}/forward`, { chatId: BOB, messageId: original, fromChatId: ALICE_JID });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ type: 'image', text: 'look', isForwarded: true, media: { mimetype: 'image/png' } });
      const atBob = await atPhone(BOB, keyIdOf(res.body.id));
      expect(atBob.forwarded).toBe(true);
      expect(Buffer.from(atBob.media.base64, 'base64').equals(png)).toBe(true);
      const proxied = await s.raw(res.body.media.url);
      expect(proxied.status).toBe(200);
      expect(proxied.bytes.equals(png)).toBe(true);
    });

    it('marks incoming forwarded messages, and only those', async () => {
      const forwarded = await incoming(ALICE, { text: 'heard this?', forwarded: true });
      const plain = await incoming(ALICE, { text: 'my own words' });
      expect((await s.api('GET', `/connections/${id}/messages/${forwarded}?chatId=${ALICE_JID}`)).body.isForwarded).toBe(true);
      expect((await s.api('GET', `/connections/${id}/messages/${plain}?chatId=${ALICE_JID}`)).body.isForwarded).toBe(false);
    });

    it('refuses a revoked or unknown source', async () => {
      const sent = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'gone soon', skipPresence: true });
      await s.api('DELETE', `/connections/${id}/messages/${sent.body.id}?chatId=${ALICE_JID}`);
      const revoked = await s.api('POST', `/connections/${id}/forward`, { chatId: BOB, messageId: sent.body.id, fromChatId: ALICE_JID });
      expect(revoked.status).toBe(400);
      expect(revoked.body.message).toBe('A message deleted for everyone cannot be forwarded');
      const unknown = await s.api('POST', `/connections/${id}/forward`, { chatId: BOB, messageId: 'true_x_y', fromChatId: ALICE_JID });
      expect(unknown.status).toBe(404);
    });
  });

  describe('stickers', () => {
    it('converts a PNG to a 512×512 WebP the contact receives as a sticker', async () => {
      const res = await s.api('POST', `/connections/${id}/send-sticker`, { chatId: ALICE, base64: pngBytes().toString('base64'), skipPresence: true });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ kind: 'sticker', media: { mimetype: 'image/webp' } });
      const atAlice = await atPhone(ALICE, keyIdOf(res.body.id));
      expect(atAlice.type).toBe('sticker');
      const webp = Buffer.from(atAlice.media.base64, 'base64');
      expect(webp.subarray(8, 12).toString('latin1')).toBe('WEBP');
      const meta = await sharp(webp).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['webp', 512, 512]);
      const proxied = await s.raw(res.body.media.url);
      expect(proxied.bytes.equals(webp)).toBe(true);
    });

    it('sends a WebP as is', async () => {
      const webp = await sharp(pngBytes(64, 64)).webp().toBuffer();
      const res = await s.api('POST', `/connections/${id}/send-sticker`, { chatId: ALICE, base64: webp.toString('base64'), skipPresence: true });
      expect(res.status).toBe(201);
      const atAlice = await atPhone(ALICE, keyIdOf(res.body.id));
      expect(Buffer.from(atAlice.media.base64, 'base64').equals(webp)).toBe(true);
    });

    it.each([
      [{ chatId: ALICE }, 'body must have exactly one of url or base64'],
      [{ chatId: ALICE, base64: Buffer.from('%PDF-1.4 hello').toString('base64') }, 'the image data is application/pdf; accepted: image/jpeg, image/png, image/webp'],
    ])('refuses %j with 400', async (body, message) => {
      const res = await s.api('POST', `/connections/${id}/send-sticker`, { ...body, skipPresence: true });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(message);
    });
  });

  describe('block list', () => {
    it("blocks a contact on the server: its messages are refused, the list shows it; unblocking lets them through", async () => {
      const blocked = await s.api('POST', `/connections/${id}/contacts/${encodeURIComponent(BOB)}/block`);
      expect(blocked.status).toBe(200);
      expect(blocked.body).toEqual({ jid: BOB_JID, blocked: true });
      expect((await s.api('GET', `/connections/${id}/blocklist`)).body).toEqual([BOB_JID]);
      expect((await s.sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body).toEqual([BOB]);
      const refused = await s.sandbox('POST', `/accounts/${enc(BOB)}/messages`, { to: PHONE, text: 'let me in' });
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe('Blocked by the recipient');

      const unblocked = await s.api('POST', `/connections/${id}/contacts/${BOB_JID}/unblock`);
      expect(unblocked.body).toEqual({ jid: BOB_JID, blocked: false });
      expect((await s.api('GET', `/connections/${id}/blocklist`)).body).toEqual([]);
      await incoming(BOB, { text: 'thanks' });
    });

    it('refuses a group with 400', async () => {
      const res = await s.api('POST', `/connections/${id}/contacts/${encodeURIComponent('123-456@g.us')}/block`);
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('A group cannot be blocked (leave it instead)');
    });
  });

  describe('calls', () => {
    it('an incoming call is a call.received event; rejecting it by API reaches the caller, then call.ended', async () => {
      const call = await s.sandbox('POST', `/accounts/${enc(ALICE)}/calls`, { to: PHONE, isVideo: true });
      expect(call.status).toBe(201);
      expect(call.body.offeredTo).toBeGreaterThan(0);
      const received = await s.frame('call.received', (f) => f.event === 'call.received' && f.payload.callId === call.body.id);
      expect(received.payload).toEqual({ callId: call.body.id, from: ALICE_JID, isVideo: true, isGroup: false, timestamp: expect.any(Number) });
      const res = await s.api('POST', `/connections/${id}/calls/${call.body.id}/reject`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ callId: call.body.id, rejected: true });
      const ended = await s.frame('call.ended', (f) => f.event === 'call.ended' && f.payload.callId === call.body.id);
      expect(ended.payload).toEqual({ callId: call.body.id, from: ALICE_JID, reason: 'rejected' });
      const atAlice = (await s.sandbox('GET', `/accounts/${enc(ALICE)}/calls`)).body.find((c: Json) => c.id === call.body.id);
      expect(atAlice).toMatchObject({ status: 'rejected', rejected: true, isVideo: true, to: PHONE });
      expect((await s.api('POST', `/connections/${id}/calls/${call.body.id}/reject`)).status).toBe(404);
    });

    it('a call the caller hangs up ends with reason ended', async () => {
      const call = await s.sandbox('POST', `/accounts/${enc(BOB)}/calls`, { to: PHONE });
      await s.frame('call.received', (f) => f.event === 'call.received' && f.payload.callId === call.body.id);
      expect((await s.sandbox('POST', `/accounts/${enc(BOB)}/calls/${call.body.id}/end`)).status).toBe(200);
      const ended = await s.frame('call.ended', (f) => f.event === 'call.ended' && f.payload.callId === call.body.id);
      expect(ended.payload).toMatchObject({ from: BOB_JID, reason: 'ended' });
    });

    it('with rejectCalls every call is rejected automatically and the caller gets the configured text', async () => {
      const patched = await s.api('PATCH', `/connections/${id}`, { rejectCalls: true, rejectCallsMessage: 'Calls are not answered here; please write.' });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ rejectCalls: true, rejectCallsMessage: 'Calls are not answered here; please write.' });
      const call = await s.sandbox('POST', `/accounts/${enc(ALICE)}/calls`, { to: PHONE });
      await waitFor('the call rejected at the caller', async () =>
        (await s.sandbox('GET', `/accounts/${enc(ALICE)}/calls`)).body.find((c: Json) => c.id === call.body.id && c.rejected) ? true : undefined,
      );
      await waitFor('the text at the caller', async () =>
        (await phoneMessages(ALICE)).find((m: Json) => m.text === 'Calls are not answered here; please write.'),
      );
      const ended = await s.frame('call.ended', (f) => f.event === 'call.ended' && f.payload.callId === call.body.id);
      expect(ended.payload.reason).toBe('rejected');
      const off = await s.api('PATCH', `/connections/${id}`, { rejectCalls: false });
      expect(off.body).toMatchObject({ rejectCalls: false, rejectCallsMessage: 'Calls are not answered here; please write.' });
    });
  });

  it('every event of the run (calls, revokes, sends, acks…) matches its documented payload schema', async () => {
    const logged = await loggedEvents((route) => s.api('GET', route));
    const types = new Set(logged.map((e) => e.event));
    for (const t of ['session.status', 'message', 'message.sent', 'message.ack', 'message.revoked', 'call.received', 'call.ended']) expect(types, t).toContain(t);
    expect(eventSchemaErrors(logged)).toEqual([]);
    expect(eventSchemaErrors(s.frames)).toEqual([]);
  });
});
