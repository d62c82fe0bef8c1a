/**
 * Status posts (issue 25 item 5): `POST /connections/:id/status/text` and `/status/image` through real Baileys
 * (`sendMessage('status@broadcast', …, { statusJidList, backgroundColor, font })`) and the sandbox, whose phones
 * decrypt the post with the author's sender key and show it on their status list (admin `GET /accounts/:phone/statuses`).
 * By default every contact of the connection sees it; `contacts` narrows it; a contact's own linked device (another
 * connection, paired to Alice) receives it as a status post from the author. Bad input is a 400 that sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const BOB = '+15550102';
const OWN_JID = '15550100@s.whatsapp.net';

const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

const pngBytes = (width = 16, height = 12) => pngBytesOf(width, height);

describe('status posts', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let id: string;
  let aliceConnection: string;
  const statusesOf = async (phone: string) =>
    (await s.sandbox<Json[]>('GET', `/accounts/${enc(phone)}/statuses`)).body as Json[];
  const seenBy = (phone: string, keyId: string) =>
    waitFor(`status ${keyId} at ${phone}`, async () => (await statusesOf(phone)).find((p) => p.id === keyId));

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
    // Alice's phone also links a device of its own (another connection of this service): it gets her status list too.
    aliceConnection = await s.pair(ALICE);
  }, 90_000);
  afterAll(() => s?.close());

  it('a text status reaches every contact, with its background and font', async () => {
    const res = await s.api('POST', `/connections/${id}/status/text`, {
      text: 'Out of office today',
      backgroundColor: '#336699',
      font: 2,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      chatId: 'status@broadcast',
      fromMe: true,
      senderJid: OWN_JID,
      type: 'text',
      text: 'Out of office today',
    });
    expect(res.body.ack).toBeGreaterThanOrEqual(2); // the server has it
    const keyId = keyIdOf(res.body.id);
    for (const phone of [ALICE, BOB]) {
      expect(await seenBy(phone, keyId)).toEqual({
        id: keyId,
        from: PHONE,
        timestamp: expect.any(Number),
        type: 'text',
        text: 'Out of office today',
        backgroundColor: '#FF336699',
        font: 2,
      });
    }
    // Stored as the account's own status post: readable by id, listed only with include_status.
    const stored = await s.api(
      'GET',
      `/connections/${id}/messages/${encodeURIComponent(res.body.id)}?chatId=status@broadcast`,
    );
    expect(stored).toMatchObject({ status: 200, body: { id: res.body.id, text: 'Out of office today' } });
    const chats = (await s.api('GET', `/connections/${id}/chats`)).body as Json[];
    expect(chats.map((c) => c.id)).not.toContain('status@broadcast');

    // Alice's linked device got it from status@broadcast, the author as sender.
    const atAliceDevice = await waitFor('the status on Alice’s linked device', async () => {
      const r = await s.api(
        'GET',
        `/connections/${aliceConnection}/messages/${encodeURIComponent(`false_status@broadcast_${keyId}`)}?chatId=status@broadcast`,
      );
      return r.status === 200 ? r.body : undefined;
    });
    expect(atAliceDevice).toMatchObject({
      chatId: 'status@broadcast',
      fromMe: false,
      senderJid: OWN_JID,
      text: 'Out of office today',
    });
  });

  it('an image status goes to the contacts named, and only to them', async () => {
    const png = pngBytes();
    const res = await s.api('POST', `/connections/${id}/status/image`, {
      base64: png.toString('base64'),
      caption: 'Sunrise',
      contacts: [ALICE],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      chatId: 'status@broadcast',
      fromMe: true,
      type: 'image',
      text: 'Sunrise',
      media: { mimetype: 'image/png' },
    });
    const keyId = keyIdOf(res.body.id);
    const post = await seenBy(ALICE, keyId);
    expect(post).toMatchObject({
      from: PHONE,
      type: 'image',
      text: 'Sunrise',
      media: { mimetype: 'image/png', caption: 'Sunrise' },
    });
    expect(Buffer.from(post.media.base64 as string, 'base64').equals(png)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect((await statusesOf(BOB)).map((p) => p.id)).not.toContain(keyId);
    // The posted image is kept locally like any sent media.
    const media = await s.raw(res.body.media.url as string);
    expect(media.status).toBe(200);
    expect(media.bytes.equals(png)).toBe(true);
  });

  it('takes an Idempotency-Key like the sends', async () => {
    const key = `status-${Date.now()}`;
    const post = () =>
      s.api(
        'POST',
        `/connections/${id}/status/text`,
        { text: 'Posted once', contacts: [BOB] },
        { 'idempotency-key': key },
      );
    const first = await post();
    expect(first.status).toBe(201);
    const second = await post();
    expect(second).toMatchObject({ status: 201, body: first.body });
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    await seenBy(BOB, keyIdOf(first.body.id));
    await new Promise((r) => setTimeout(r, 500));
    expect((await statusesOf(BOB)).filter((p) => p.text === 'Posted once')).toHaveLength(1);
  });

  it('refuses bad input with a 400 and posts nothing', async () => {
    const before = (await statusesOf(ALICE)).length;
    const cases: Array<[string, Json, RegExp]> = [
      ['text', { text: '' }, /^body\/text must not be empty/],
      ['text', { text: 'x'.repeat(701) }, /^body\/text must be at most 700 characters long/],
      ['text', { text: 'hi', backgroundColor: 'blue' }, /^body\/backgroundColor must match pattern/],
      ['text', { text: 'hi', font: 3 }, /^body\/font must be/],
      [
        'text',
        { text: 'hi', contacts: ['not a number'] },
        /^body\/contacts\/0 is not an international phone number or a user JID/,
      ],
      ['text', { text: 'hi', contacts: [PHONE] }, /^body\/contacts names no one but this account/],
      ['image', { caption: 'no image' }, /^body must have exactly one of url or base64/],
      ['image', { base64: Buffer.from('not an image').toString('base64') }, /image/],
    ];
    for (const [kind, body, message] of cases) {
      const res = await s.api('POST', `/connections/${id}/status/${kind}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message, JSON.stringify(body)).toMatch(message);
    }
    // status@broadcast is still no chat for the send routes.
    const send = await s.api('POST', `/connections/${id}/send`, {
      chatId: 'status@broadcast',
      text: 'x',
      skipPresence: true,
    });
    expect(send.status).toBe(400);
    expect(send.body.message).toMatch(/status\/text/);
    await new Promise((r) => setTimeout(r, 300));
    expect((await statusesOf(ALICE)).length).toBe(before);
  });
});
