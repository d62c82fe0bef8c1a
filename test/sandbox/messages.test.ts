/**
 * Every message type in both directions between a real Baileys rc14 client and the sandbox's simulated
 * phones: media through the HTTPS media host (trusted only via per-request agents built from the sandbox
 * CA), location, contact cards, quoted replies, reactions, edits, revokes, read receipts, chatstates and
 * presence, media re-upload after a 404, bulk-seeded chunked history, and the admin API's validation.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { downloadMediaMessage, proto, type WAMessage } from '@whiskeysockets/baileys';
import { startSandbox, type Sandbox } from '../../service/sandbox/index.ts';
import { sandboxTrust, type SandboxTrust } from '../../service/engine/sandbox-trust.ts';
import { connectClient, muteLibsignalNoise, poll, type TestClient } from './baileys-client.ts';

interface ApiResult<T = unknown> {
  status: number;
  body: T;
}

async function api<T = unknown>(base: string, method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

interface View {
  id: string;
  from: string;
  to: string;
  type: string;
  text: string;
  timestamp: number;
  replyTo: string | null;
  media?: { base64: string | null; mimetype: string; filename?: string; caption?: string; ptt?: boolean };
  location?: { latitude: number; longitude: number; name?: string; address?: string };
  contact?: { name: string; phoneNumber: string; vcard: string };
  reaction?: { messageId: string; emoji: string };
  edit?: { messageId: string; text: string };
  revoke?: { messageId: string };
  reactions: Array<{ from: string; emoji: string }>;
  edits: Array<{ text: string; timestamp: number }>;
  revoked: boolean;
}

muteLibsignalNoise();

const PHONE = '15550100';
const ALICE = '15550101';
const ALICE_JID = `${ALICE}@s.whatsapp.net`;

describe('sandbox messaging: every type, both directions', () => {
  let root: string;
  let sandbox: Sandbox;
  let trust: SandboxTrust;
  let c: TestClient;
  const errors: string[] = [];

  const received = (pn: string) => api<View[]>(sandbox.url, 'GET', `/accounts/${pn}/messages`).then((r) => r.body);
  const receivedById = (pn: string, id: string) =>
    poll(async () => (await received(pn)).find((m) => m.id === id), `message ${id} at ${pn}`);
  const upserted = async (id: string): Promise<WAMessage> => {
    const u = await c.waitFor('messages.upsert', (x) => x.messages.some((m) => m.key.id === id));
    return u.messages.find((m) => m.key.id === id)!;
  };
  const download = (msg: WAMessage) =>
    downloadMediaMessage(msg, 'buffer', { options: { dispatcher: trust.dispatcher } } as never) as Promise<Buffer>;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-msg-'));
    const logger = pino(
      { level: 'warn' },
      { write: (l: string) => void (JSON.parse(l).level >= 50 && errors.push(l)) },
    );
    sandbox = await startSandbox({ dataDir: join(root, 'data'), logger, historyMessagesPerChunk: 250 });
    await sandbox.seedDemo();
    trust = sandboxTrust(sandbox.caCertPem);

    // bulk history before pairing: 600 messages with Bob, delivered in 250-message chunks
    const seeded = await api<{ count: number }>(sandbox.url, 'POST', `/accounts/${PHONE}/history`, {
      with: '+15550102',
      count: 600,
    });
    expect(seeded).toEqual({ status: 201, body: { count: 600 } });

    const authFile = join(root, 'auth.json');
    const extra = { fetchAgent: trust.fetchAgent, options: { dispatcher: trust.dispatcher } as never };
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    expect((await api(sandbox.url, 'POST', `/accounts/${PHONE}/scan`, { qr })).status).toBe(200);
    expect(await pairing.closed).toBe(515);
    c = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    await c.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
    await c.waitFor('creds.update', () => c.sock.authState.creds.me?.name === 'Sandbox Phone');
  });

  afterAll(async () => {
    await c?.end();
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('delivers a 600-message bulk history in several chunks', async () => {
    const bobMessages = () =>
      c.events
        .filter((e) => e.name === 'messaging-history.set')
        .flatMap((e) => (e.data as { messages: WAMessage[] }).messages)
        .filter((m) => m.key.remoteJid === '15550102@s.whatsapp.net');
    await poll(async () => (bobMessages().length >= 604 ? true : undefined), 'history', 10_000);
    const texts = new Set(bobMessages().map((m) => m.message?.conversation));
    expect(texts.has('History message 1 of 600')).toBe(true);
    expect(texts.has('History message 600 of 600')).toBe(true);
    const sets = c.events.filter((e) => e.name === 'messaging-history.set');
    expect(sets.length).toBeGreaterThanOrEqual(3);
  });

  it('serves media over HTTPS with the sandbox CA only (no process-wide trust)', async () => {
    expect(sandbox.caCertPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    await expect(fetch(`https://${sandbox.mediaHost}/nothing`)).rejects.toThrow();
    const res = await fetch(`https://${sandbox.mediaHost}/nothing`, {
      dispatcher: trust.dispatcher,
    } as unknown as RequestInit);
    expect(res.status).toBe(404);
    const info = await api<{ caCertPem: string; mediaHost: string }>(sandbox.url, 'GET', '/');
    expect(info.body).toMatchObject({ caCertPem: sandbox.caCertPem, mediaHost: sandbox.mediaHost });
  });

  it('contact → client: image, video, ptt, document decrypt to the same bytes', async () => {
    const cases = [
      { field: 'image', mimetype: 'image/jpeg', caption: 'a picture' },
      { field: 'video', mimetype: 'video/mp4', caption: 'a clip' },
      { field: 'audio', mimetype: 'audio/ogg; codecs=opus', ptt: true },
      { field: 'document', mimetype: 'application/pdf', filename: 'notes.pdf', caption: 'the notes' },
    ] as const;
    for (const { field, ...meta } of cases) {
      const bytes = randomBytes(3000 + Math.floor(Math.random() * 100));
      const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
        to: `+${PHONE}`,
        [field]: { base64: bytes.toString('base64'), ...meta },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      const msg = await upserted(sent.body.id);
      const content = msg.message?.[`${field}Message`] as {
        mimetype?: string;
        caption?: string;
        ptt?: boolean;
        fileName?: string;
        fileSha256?: Uint8Array;
      };
      expect(content?.mimetype).toBe(meta.mimetype);
      if ('caption' in meta) expect(content.caption).toBe(meta.caption);
      if ('ptt' in meta) expect(content.ptt).toBe(true);
      if ('filename' in meta) expect(content.fileName).toBe(meta.filename);
      const got = await download(msg);
      expect(got.equals(bytes)).toBe(true);
      expect(Buffer.from(content.fileSha256!).equals(createHash('sha256').update(bytes).digest())).toBe(true);
      const view = await receivedById(PHONE, sent.body.id);
      expect(view.type).toBe(field);
      expect(Buffer.from(view.media!.base64!, 'base64').equals(bytes)).toBe(true);
    }
  });

  it('contact → client: location, contact card, quoted reply', async () => {
    const loc = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      location: { latitude: 52.52, longitude: 13.405, name: 'Berlin', address: 'Alexanderplatz' },
    });
    expect(loc.status).toBe(201);
    const locMsg = await upserted(loc.body.id);
    expect(locMsg.message?.locationMessage).toMatchObject({
      degreesLatitude: 52.52,
      degreesLongitude: 13.405,
      name: 'Berlin',
    });

    const card = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      contact: { name: 'Carol Example', phoneNumber: '+1 555 0199' },
    });
    const cardMsg = await upserted(card.body.id);
    expect(cardMsg.message?.contactMessage?.displayName).toBe('Carol Example');
    expect(cardMsg.message?.contactMessage?.vcard).toContain('waid=15550199');

    const reply = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      text: 'replying to the location',
      replyTo: loc.body.id,
    });
    const replyMsg = await upserted(reply.body.id);
    const ctx = replyMsg.message?.extendedTextMessage?.contextInfo;
    expect(replyMsg.message?.extendedTextMessage?.text).toBe('replying to the location');
    expect(ctx?.stanzaId).toBe(loc.body.id);
    expect(ctx?.quotedMessage?.locationMessage?.name).toBe('Berlin');
    const view = await receivedById(PHONE, reply.body.id);
    expect(view.replyTo).toBe(loc.body.id);
    const cardView = await receivedById(PHONE, card.body.id);
    expect(cardView.contact).toMatchObject({ name: 'Carol Example', phoneNumber: '+15550199' });
  });

  it('client → contact: media, location, contact, reply, reaction, edit, revoke are recorded', async () => {
    const doc = randomBytes(5000);
    const sentDoc = await c.sock.sendMessage(ALICE_JID, {
      document: doc,
      mimetype: 'application/octet-stream',
      fileName: 'data.bin',
      caption: 'raw data',
    });
    const docView = await receivedById(`+${ALICE}`, sentDoc!.key.id!);
    expect(docView).toMatchObject({ type: 'document', from: `+${PHONE}`, text: 'raw data' });
    expect(docView.media).toMatchObject({
      mimetype: 'application/octet-stream',
      filename: 'data.bin',
      caption: 'raw data',
    });
    expect(Buffer.from(docView.media!.base64!, 'base64').equals(doc)).toBe(true);

    const img = randomBytes(2000);
    const sentImg = await c.sock.sendMessage(ALICE_JID, { image: img, mimetype: 'image/jpeg', caption: 'pic' });
    const imgView = await receivedById(ALICE, sentImg!.key.id!);
    expect(imgView.type).toBe('image');
    expect(Buffer.from(imgView.media!.base64!, 'base64').equals(img)).toBe(true);

    const ptt = randomBytes(1500);
    const sentPtt = await c.sock.sendMessage(ALICE_JID, { audio: ptt, ptt: true, mimetype: 'audio/ogg; codecs=opus' });
    const pttView = await receivedById(ALICE, sentPtt!.key.id!);
    expect(pttView.media).toMatchObject({ ptt: true });
    expect(Buffer.from(pttView.media!.base64!, 'base64').equals(ptt)).toBe(true);

    const loc = await c.sock.sendMessage(ALICE_JID, {
      location: { degreesLatitude: 48.85, degreesLongitude: 2.35, name: 'Paris' },
    });
    expect((await receivedById(ALICE, loc!.key.id!)).location).toMatchObject({
      latitude: 48.85,
      longitude: 2.35,
      name: 'Paris',
    });

    const vcard = 'BEGIN:VCARD\nVERSION:3.0\nFN:Dan\nTEL;type=CELL;waid=15550177:+15550177\nEND:VCARD';
    const card = await c.sock.sendMessage(ALICE_JID, { contacts: { displayName: 'Dan', contacts: [{ vcard }] } });
    expect((await receivedById(ALICE, card!.key.id!)).contact).toMatchObject({ name: 'Dan', phoneNumber: '+15550177' });

    const text = await c.sock.sendMessage(ALICE_JID, { text: 'original text' });
    const reply = await c.sock.sendMessage(ALICE_JID, { text: 'a reply' }, { quoted: text! });
    expect((await receivedById(ALICE, reply!.key.id!)).replyTo).toBe(text!.key.id);

    const react = await c.sock.sendMessage(ALICE_JID, { react: { text: '👍', key: text!.key } });
    await receivedById(ALICE, react!.key.id!);
    const edit = await c.sock.sendMessage(ALICE_JID, { text: 'edited text', edit: text!.key });
    const editView = await receivedById(ALICE, edit!.key.id!);
    expect(editView).toMatchObject({ type: 'edit', edit: { messageId: text!.key.id, text: 'edited text' } });
    const original = await receivedById(ALICE, text!.key.id!);
    expect(original.reactions).toEqual([{ from: `+${PHONE}`, emoji: '👍' }]);
    expect(original.edits.map((e) => e.text)).toEqual(['edited text']);
    expect(original.text).toBe('original text');

    const unreact = await c.sock.sendMessage(ALICE_JID, { react: { text: '', key: text!.key } });
    await receivedById(ALICE, unreact!.key.id!);
    expect((await receivedById(ALICE, text!.key.id!)).reactions).toEqual([]);

    const del = await c.sock.sendMessage(ALICE_JID, { delete: reply!.key });
    expect((await receivedById(ALICE, del!.key.id!)).revoke).toEqual({ messageId: reply!.key.id });
    expect((await receivedById(ALICE, reply!.key.id!)).revoked).toBe(true);
  });

  it('contact → client: reactions (and removal), edits and revokes arrive as Baileys events', async () => {
    const mine = await c.sock.sendMessage(ALICE_JID, { text: 'react to me' });
    await receivedById(ALICE, mine!.key.id!);
    const r = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/reactions`, {
      to: PHONE,
      messageId: mine!.key.id,
      emoji: '❤️',
    });
    expect(r.status).toBe(201);
    const ev = await c.waitFor('messages.reaction', (rs) =>
      rs.some((x) => x.key.id === mine!.key.id && x.reaction.text === '❤️'),
    );
    expect(ev.find((x) => x.key.id === mine!.key.id)!.key.fromMe).toBe(true);
    await api(sandbox.url, 'POST', `/accounts/${ALICE}/reactions`, { to: PHONE, messageId: mine!.key.id, emoji: '' });
    await c.waitFor('messages.reaction', (rs) => rs.some((x) => x.key.id === mine!.key.id && x.reaction.text === ''));

    const hers = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      text: 'typo',
    });
    await upserted(hers.body.id);
    const ed = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/edits`, {
      to: PHONE,
      messageId: hers.body.id,
      text: 'fixed',
    });
    expect(ed.status).toBe(201);
    const upd = await c.waitFor('messages.update', (us) =>
      us.some((u) => u.key.id === hers.body.id && !!u.update.message?.editedMessage),
    );
    const edited = upd.find((u) => u.key.id === hers.body.id)!.update.message!.editedMessage!.message;
    expect(edited?.conversation).toBe('fixed');
    // only that phone's own text messages can be edited
    const bad = await api<{ message: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/edits`, {
      to: PHONE,
      messageId: mine!.key.id,
      text: 'nope',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('messageId');

    // a contact deletes one of its messages for everyone: Baileys gets the REVOKE naming it
    const rv = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/revokes`, { to: PHONE, messageId: hers.body.id });
    expect(rv.status).toBe(201);
    const revoke = await upserted(rv.body.id);
    expect(revoke.message?.protocolMessage).toMatchObject({ type: proto.Message.ProtocolMessage.Type.REVOKE, key: { id: hers.body.id } });
    // only that phone's own messages to `to`
    const notHers = await api<{ message: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/revokes`, { to: PHONE, messageId: mine!.key.id });
    expect(notHers.status).toBe(400);
    expect(notHers.body.message).toContain('messageId');
  });

  it('reads both ways: status 4 on the client, read receipts seen by the phone', async () => {
    const mine = await c.sock.sendMessage(ALICE_JID, { text: 'please read' });
    await receivedById(ALICE, mine!.key.id!);
    const read = await api(sandbox.url, 'POST', `/accounts/${ALICE}/reads`, { to: PHONE, messageIds: [mine!.key.id] });
    expect(read.status).toBe(200);
    await Promise.race([
      c.waitFor('messages.update', (us) => us.some((u) => u.key.id === mine!.key.id && u.update.status === 4)),
      c.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === mine!.key.id && m.status === 4)),
    ]);
    expect((await receivedById(ALICE, mine!.key.id!)) as unknown).toMatchObject({ readBy: [`+${ALICE}`] });

    const hers = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      text: 'read me',
    });
    const msg = await upserted(hers.body.id);
    await c.sock.readMessages([msg.key]);
    const receipts = await poll(async () => {
      const r = await api<Array<{ from: string; messageIds: string[]; type: string }>>(
        sandbox.url,
        'GET',
        `/accounts/${ALICE}/receipts`,
      );
      return r.body.find((x) => x.type === 'read' && x.messageIds.includes(hers.body.id));
    }, 'read receipt');
    expect(receipts.from).toBe(`+${PHONE}`);
    const delivered = await api<Array<{ type: string; messageIds: string[] }>>(
      sandbox.url,
      'GET',
      `/accounts/${ALICE}/receipts`,
    );
    expect(delivered.body.some((x) => x.type === 'delivery' && x.messageIds.includes(hers.body.id))).toBe(true);
  });

  it('chatstates and presence both ways', async () => {
    await c.sock.sendPresenceUpdate('composing', ALICE_JID);
    await c.sock.sendPresenceUpdate('paused', ALICE_JID);
    await c.sock.sendPresenceUpdate('available');
    const seen = await poll(async () => {
      const r = await api<Array<{ from: string; state: string }>>(sandbox.url, 'GET', `/accounts/${ALICE}/chatstates`);
      const states = r.body.map((x) => x.state);
      return states.includes('composing') && states.includes('paused') && states.includes('available')
        ? r.body
        : undefined;
    }, 'chatstates');
    expect(seen.every((x) => x.from === `+${PHONE}`)).toBe(true);

    for (const state of ['composing', 'recording'] as const) {
      expect((await api(sandbox.url, 'POST', `/accounts/${ALICE}/chatstate`, { to: PHONE, state })).status).toBe(200);
      const expected = state;
      await c.waitFor(
        'presence.update',
        (p) => p.id === ALICE_JID && p.presences[ALICE_JID]?.lastKnownPresence === expected,
      );
    }
    expect((await api(sandbox.url, 'POST', `/accounts/${ALICE}/presence`, { type: 'unavailable' })).status).toBe(200);
    await c.waitFor(
      'presence.update',
      (p) => p.id === ALICE_JID && p.presences[ALICE_JID]?.lastKnownPresence === 'unavailable',
    );
  });

  it('expired media: 404 → updateMediaMessage (phone re-uploads) → download OK', async () => {
    const bytes = randomBytes(4096);
    const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      image: { base64: bytes.toString('base64'), mimetype: 'image/jpeg' },
    });
    const msg = await upserted(sent.body.id);
    const expire = await fetch(`${sandbox.url}/accounts/${ALICE}/messages/${sent.body.id}/expire-media`, {
      method: 'POST',
    });
    expect(expire.status).toBe(204);
    const err = await download(msg).catch((e: unknown) => e as { output?: { statusCode?: number } });
    expect((err as { output?: { statusCode?: number } }).output?.statusCode).toBe(404);
    await c.sock.refreshMediaConn(true);
    await c.sock.updateMediaMessage(msg);
    expect((await download(msg)).equals(bytes)).toBe(true);

    // the client's own upload too: its phone re-uploads it
    const own = randomBytes(3000);
    const mine = await c.sock.sendMessage(ALICE_JID, {
      document: own,
      mimetype: 'application/octet-stream',
      fileName: 'x.bin',
    });
    await receivedById(ALICE, mine!.key.id!);
    expect(
      (await fetch(`${sandbox.url}/accounts/${PHONE}/messages/${mine!.key.id}/expire-media`, { method: 'POST' }))
        .status,
    ).toBe(204);
    await expect(download(mine!)).rejects.toThrow();
    await c.sock.updateMediaMessage(mine!);
    expect((await download(mine!)).equals(own)).toBe(true);
    expect(errors).toEqual([]);
  });
});

describe('sandbox admin API validation (messaging)', () => {
  let root: string;
  let sandbox: Sandbox;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-msgapi-'));
    sandbox = await startSandbox({ dataDir: root, logger: pino({ level: 'silent' }) });
    await sandbox.seedDemo();
  });

  afterAll(async () => {
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('names the offending field in 400s', async () => {
    const b64 = Buffer.from('hello').toString('base64');
    const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: PHONE,
      text: 'x',
    });
    const cases: Array<[string, unknown, string]> = [
      ['messages', { to: PHONE }, 'text'],
      ['messages', { to: PHONE, text: 'a', image: { base64: b64, mimetype: 'image/png' } }, 'exactly one'],
      ['messages', { to: PHONE, image: { mimetype: 'image/png' } }, 'image.base64'],
      ['messages', { to: PHONE, image: { base64: '!!!', mimetype: 'image/png' } }, 'image.base64'],
      ['messages', { to: PHONE, video: { base64: b64 } }, 'video.mimetype'],
      ['messages', { to: PHONE, image: { base64: b64, mimetype: 'image/png', ptt: true } }, 'ptt'],
      ['messages', { to: PHONE, document: 'nope' }, 'document'],
      ['messages', { to: PHONE, location: { latitude: 91, longitude: 0 } }, 'location.latitude'],
      ['messages', { to: PHONE, location: { latitude: 1 } }, 'location.longitude'],
      ['messages', { to: PHONE, contact: { name: 'A' } }, 'contact.phoneNumber'],
      ['messages', { to: PHONE, contact: { phoneNumber: '+15550111' } }, 'contact.name'],
      ['messages', { to: PHONE, text: 'a', replyTo: 'NOPE' }, 'replyTo'],
      ['reactions', { to: PHONE, messageId: sent.body.id }, 'emoji'],
      ['reactions', { to: PHONE, messageId: 'NOPE', emoji: '👍' }, 'messageId'],
      ['reactions', { messageId: sent.body.id, emoji: '👍' }, 'to'],
      ['edits', { to: PHONE, messageId: sent.body.id }, 'text'],
      ['edits', { to: PHONE, messageId: 'NOPE', text: 'x' }, 'messageId'],
      ['reads', { to: PHONE, messageIds: [] }, 'messageIds'],
      ['reads', { to: PHONE, messageIds: ['NOPE'] }, 'messageIds'],
      ['chatstate', { to: PHONE, state: 'dancing' }, 'state'],
      ['presence', { type: 'away' }, 'type'],
      ['history', { with: 'abc', count: 5 }, 'with'],
      ['history', { with: '+15550102', count: 0 }, 'count'],
      ['history', { with: '+15550102', count: 5, startAt: 'x' }, 'startAt'],
    ];
    for (const [sub, body, field] of cases) {
      const res = await api<{ message: string; statusCode: number; error: string }>(
        sandbox.url,
        'POST',
        `/accounts/${ALICE}/${sub}`,
        body,
      );
      expect(res.status, `${sub} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.body.message, `${sub} ${JSON.stringify(body)}`).toContain(field);
    }
    const unknown = await api(sandbox.url, 'POST', `/accounts/${ALICE}/reactions`, {
      to: '+15559999',
      messageId: 'x',
      emoji: '',
    });
    expect(unknown).toEqual({
      status: 404,
      body: { message: 'Account not found', statusCode: 404, error: 'Not Found' },
    });
    const noMedia = await api(sandbox.url, 'POST', `/accounts/${ALICE}/messages/${sent.body.id}/expire-media`);
    expect(noMedia.status).toBe(404);
  });

  it('keeps the original message fields and records phone-to-phone media', async () => {
    const bytes = randomBytes(100);
    const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: '+15550102',
      audio: { base64: bytes.toString('base64'), mimetype: 'audio/ogg', ptt: true },
    });
    expect(sent.status).toBe(201);
    const got = await api<View[]>(sandbox.url, 'GET', '/accounts/15550102/messages');
    const m = got.body.find((x) => x.id === sent.body.id)!;
    expect(m).toMatchObject({ from: '+15550101', to: '+15550102', text: '', type: 'audio', reactions: [], edits: [] });
    expect(typeof m.timestamp).toBe('number');
    expect(Buffer.from(m.media!.base64!, 'base64').equals(bytes)).toBe(true);
  });
});
