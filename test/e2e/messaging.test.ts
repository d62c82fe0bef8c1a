/**
 * Messaging end to end (issue #3): the real service in sandbox mode (in-process, for its injectable clock and a
 * test CA for URL fetches), a connection paired with the sandbox phone after a ≥ 500-message history was seeded,
 * then every send type checked at the contact's phone (decrypted, media bytes identical), every received type
 * stored, streamed and downloadable through the media proxy (with Range), media re-upload after the CDN lost the
 * blob, reactions and edits both ways, the 15-minute edit window, mark-read, typing, presence, and 404s.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { URL_FETCH_FAILED } from '../../service/engine/outgoing.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const CAROL = '+15550107';
const CAROL_JID = '15550107@s.whatsapp.net';
const HISTORY = 520;

const pngBytes = () => pngBytesOf(8, 8);

const pdfBytes = () => Buffer.concat([Buffer.from('%PDF-1.4\n% switchboard test\n'), Buffer.alloc(3000, 7), Buffer.from('\n%%EOF\n')]);
const mp4Bytes = () => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(6000, 3)]);
// An Ogg page whose first packet is an Opus header (file-type tells Ogg Opus from other Ogg streams by it).
const oggBytes = () => Buffer.concat([Buffer.from('OggS\0\x02', 'latin1'), Buffer.alloc(22), Buffer.from('OpusHead'), Buffer.alloc(4000, 5)]);

interface PhoneMessage {
  id: string;
  from: string;
  to: string;
  type: string;
  text: string;
  replyTo: string | null;
  media?: { base64: string | null; mimetype: string; filename?: string; caption?: string; ptt?: boolean };
  location?: { latitude: number; longitude: number; name?: string; address?: string };
  contact?: { name: string; phoneNumber: string };
  reaction?: unknown;
  reactions: Array<{ from: string; emoji: string }>;
  edits: Array<{ text: string }>;
}

const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

describe('messaging end to end through the sandbox', () => {
  let s: SandboxService;
  let id: string;
  let clockOffsetMs = 0;
  let tlsDir: string;
  let fileServer: https.Server;
  let fileUrl: string;
  const served = pngBytes();

  const phoneMessages = async (phone: string) => (await s.sandbox('GET', `/accounts/${enc(phone)}/messages`)).body as PhoneMessage[];
  const atAlice = (keyId: string) =>
    waitFor(`message ${keyId} at Alice's phone`, async () => (await phoneMessages(ALICE)).find((m) => m.id === keyId));

  beforeAll(async () => {
    // An HTTPS file server with its own CA, trusted only through the engine's URL-fetch TLS options.
    tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-tls-'));
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1',
      '-keyout', path.join(tlsDir, 'key.pem'), '-out', path.join(tlsDir, 'cert.pem'),
    ], { stdio: 'ignore' });
    const cert = fs.readFileSync(path.join(tlsDir, 'cert.pem'), 'utf8');
    fileServer = https.createServer({ key: fs.readFileSync(path.join(tlsDir, 'key.pem')), cert }, (req, res) => {
      if (req.url === '/pic.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(served);
      if (req.url === '/big.bin') return res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(17 * 1024 * 1024));
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => fileServer.listen(0, '127.0.0.1', r));
    fileUrl = `https://127.0.0.1:${(fileServer.address() as AddressInfo).port}`;

    // The file server is on loopback: LAN targets allowed (the outbound URL policy refuses them by default).
    s = await startSandboxService({ now: () => Date.now() + clockOffsetMs, urlFetchTls: { ca: cert }, allowLan: true });
    // A long history with Carol, synced at pairing.
    const seeded = await s.sandbox('POST', `/accounts/${enc(PHONE)}/history`, { with: CAROL, count: HISTORY });
    expect(seeded.status).toBe(201);
    id = await s.pair(PHONE);
  }, 90_000);

  afterAll(async () => {
    await s?.close();
    fileServer?.close();
    if (tlsDir) fs.rmSync(tlsDir, { recursive: true, force: true });
  });

  it(`pages a synced history of ${HISTORY} messages with before/nextBefore/historyStartsAt`, async () => {
    // Chunks after the initial bootstrap may still be arriving once the connection is online.
    let pages = 0;
    const walk = async () => {
      const seen: Array<{ id: string; timestamp: number }> = [];
      let before: string | null = null;
      let last: Json;
      for (let i = 0; i < 40; i++) {
        const page = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?limit=50${before ? `&before=${before}` : ''}`);
        expect(page.status).toBe(200);
        last = page.body;
        pages++;
        seen.push(...last.messages);
        if (!last.nextBefore) break;
        expect(last.historyStartsAt).toBeNull();
        before = last.nextBefore;
      }
      return { seen, last };
    };
    const { seen, last } = await waitFor('the whole history', async () => {
      const w = await walk();
      return w.seen.length >= HISTORY ? w : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 });
    expect(pages).toBeGreaterThan(HISTORY / 50);
    expect(seen.length).toBe(HISTORY);
    expect(new Set(seen.map((m) => m.id)).size).toBe(HISTORY);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.timestamp).toBeLessThanOrEqual(seen[i - 1]!.timestamp);
    expect(last.nextBefore).toBeNull();
    expect(last.historyStartsAt).toBe(seen.at(-1)!.timestamp);
  });

  describe('sending', () => {
    it('answers a send once the server has the message: ack 2 in the answer, in the store and as a message.ack event', async () => {
      const res = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'server has it', skipPresence: true });
      expect(res.status).toBe(201);
      // the contact's delivery receipt may already have moved it on
      expect(res.body.ack).toBeGreaterThanOrEqual(2);
      // the sandbox acknowledges only after it committed what the phone received (sandbox/messaging.ts)
      const atPhone = ((await s.sandbox('GET', `/accounts/${enc(ALICE)}/messages`)).body as Array<{ id: string }>).some(
        (m) => m.id === keyIdOf(res.body.id),
      );
      expect(atPhone).toBe(true);
      await s.frame('server ack', (f) => f.event === 'message.ack' && f.payload.id === res.body.id && f.payload.ack === 2);
      const stored = await s.api('GET', `/connections/${id}/messages/${encodeURIComponent(res.body.id)}?chatId=${ALICE_JID}`);
      expect(stored.body.ack).toBeGreaterThanOrEqual(2);
    });

    it('sends an image (base64) whose bytes arrive identical, and keeps a local copy', async () => {
      const res = await s.api('POST', `/connections/${id}/send-image`, { chatId: ALICE, base64: served.toString('base64'), caption: 'a pic', skipPresence: true });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ type: 'image', text: 'a pic', fromMe: true, media: { mimetype: 'image/png' } });
      expect(res.body.media.url).toMatch(new RegExp(`^${s.apiUrl}/connections/${id}/media/[A-Za-z0-9_-]+\\.png$`));
      const got = await atAlice(keyIdOf(res.body.id));
      expect(got).toMatchObject({ type: 'image', media: { mimetype: 'image/png', caption: 'a pic' } });
      expect(Buffer.from(got.media!.base64!, 'base64').equals(served)).toBe(true);
      const local = await s.raw(res.body.media.url);
      expect(local.status).toBe(200);
      expect(local.bytes.equals(served)).toBe(true);
    });

    it('sends an image fetched from an https URL; http:// and oversized files are 400', async () => {
      const res = await s.api('POST', `/connections/${id}/send-image`, { chatId: ALICE, url: `${fileUrl}/pic.png`, skipPresence: true });
      expect(res.status).toBe(201);
      const got = await atAlice(keyIdOf(res.body.id));
      expect(Buffer.from(got.media!.base64!, 'base64').equals(served)).toBe(true);

      const http = await s.api('POST', `/connections/${id}/send-image`, { chatId: ALICE, url: 'http://127.0.0.1/pic.png' });
      expect(http).toMatchObject({ status: 400, body: { message: 'body/url must be an https:// URL' } });
      const big = await s.api('POST', `/connections/${id}/send-image`, { chatId: ALICE, url: `${fileUrl}/big.bin`, skipPresence: true });
      expect(big.status).toBe(400);
      expect(big.body.message).toMatch(/larger than 16 MiB/);
      const missing = await s.api('POST', `/connections/${id}/send-image`, { chatId: ALICE, url: `${fileUrl}/nope.png`, skipPresence: true });
      expect(missing).toMatchObject({ status: 400, body: { message: URL_FETCH_FAILED } });
    });

    it('refuses bad media requests with clear 400s, sending nothing', async () => {
      const b64 = served.toString('base64');
      const noise = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251));
      const cases: Array<[string, unknown, RegExp]> = [
        ['send-image', { chatId: ALICE, base64: b64, url: `${fileUrl}/pic.png` }, /exactly one of url or base64/],
        ['send-image', { chatId: ALICE }, /exactly one of url or base64/],
        ['send-image', { chatId: ALICE, base64: b64, mimetype: 'image/gif' }, /image\/gif is not accepted for images/],
        ['send-image', { chatId: ALICE, base64: pdfBytes().toString('base64') }, /the image data is application\/pdf/],
        ['send-image', { chatId: ALICE, base64: b64, mimetype: 'image/jpeg' }, /image data is image\/png, not image\/jpeg/],
        ['send-image', { chatId: ALICE, base64: '***' }, /not valid base64/],
        ['send-video', { chatId: ALICE, base64: Buffer.alloc(100, 1).toString('base64') }, /could not recognise the video format/],
        // Bytes that are no file of the kind, whatever type is declared (issue 17: random bytes sent as fake.png).
        ['send-image', { chatId: ALICE, base64: noise.toString('base64'), mimetype: 'image/png' }, /could not recognise the image format/],
        ['send-video', { chatId: ALICE, base64: noise.toString('base64'), mimetype: 'video/mp4' }, /could not recognise the video format/],
        ['send-audio', { chatId: ALICE, base64: noise.toString('base64'), mimetype: 'audio/ogg', ptt: true }, /could not recognise the audio format/],
        ['send-location', { chatId: ALICE, latitude: 91, longitude: 0 }, /latitude must be <= 90/],
        ['send-contact', { chatId: ALICE, name: 'X', phoneNumber: 'abc' }, /phoneNumber must be a phone number/],
        ['react', { chatId: ALICE, messageId: 'x', emoji: 'hello' }, /single emoji/],
      ];
      const before = (await phoneMessages(ALICE)).length;
      for (const [route, body, message] of cases) {
        const res = await s.api('POST', `/connections/${id}/${route}`, body);
        expect(res.status, `${route} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
        expect(res.body.message).toMatch(message);
      }
      // Nothing reached the contact. (A later send arriving first proves nothing was still on its way.)
      const after = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'after the refusals', skipPresence: true });
      await atAlice(keyIdOf(after.body.id));
      expect((await phoneMessages(ALICE)).slice(before).map((m) => m.text)).toEqual(['after the refusals']);
    });

    it('sends a document, a video and a voice note with identical bytes', async () => {
      const doc = pdfBytes();
      const d = await s.api('POST', `/connections/${id}/send-document`, { chatId: ALICE, base64: doc.toString('base64'), filename: 'report.pdf', caption: 'the report', skipPresence: true });
      expect(d.status).toBe(201);
      expect(d.body).toMatchObject({ type: 'document', media: { mimetype: 'application/pdf', filename: 'report.pdf' } });
      const dAt = await atAlice(keyIdOf(d.body.id));
      expect(dAt.media).toMatchObject({ mimetype: 'application/pdf', filename: 'report.pdf' });
      expect(Buffer.from(dAt.media!.base64!, 'base64').equals(doc)).toBe(true);

      const video = mp4Bytes();
      const v = await s.api('POST', `/connections/${id}/send-video`, { chatId: ALICE, base64: video.toString('base64'), caption: 'clip', skipPresence: true });
      expect(v.status).toBe(201);
      expect(v.body).toMatchObject({ type: 'video', media: { mimetype: 'video/mp4' } });
      const vAt = await atAlice(keyIdOf(v.body.id));
      expect(Buffer.from(vAt.media!.base64!, 'base64').equals(video)).toBe(true);

      const voice = oggBytes();
      const a = await s.api('POST', `/connections/${id}/send-audio`, { chatId: ALICE, base64: voice.toString('base64'), ptt: true, skipPresence: true });
      expect(a.status).toBe(201);
      expect(a.body).toMatchObject({ type: 'audio', media: { mimetype: 'audio/ogg; codecs=opus' } });
      const aAt = await atAlice(keyIdOf(a.body.id));
      expect(aAt.media).toMatchObject({ ptt: true });
      expect(Buffer.from(aAt.media!.base64!, 'base64').equals(voice)).toBe(true);
    });

    it('sends a location and a contact card (with the default presence pause)', async () => {
      const l = await s.api('POST', `/connections/${id}/send-location`, { chatId: ALICE, latitude: 52.52, longitude: 13.405, name: 'Berlin', address: 'Mitte' });
      expect(l.status).toBe(201);
      expect(l.body).toMatchObject({ type: 'location', text: 'Berlin, Mitte', media: null });
      expect((await atAlice(keyIdOf(l.body.id))).location).toMatchObject({ latitude: 52.52, longitude: 13.405, name: 'Berlin', address: 'Mitte' });

      const c = await s.api('POST', `/connections/${id}/send-contact`, { chatId: ALICE_JID, name: 'Dora Example', phoneNumber: '+15550199' });
      expect(c.status).toBe(201);
      expect(c.body).toMatchObject({ type: 'contact', text: 'Dora Example' });
      expect((await atAlice(keyIdOf(c.body.id))).contact).toMatchObject({ name: 'Dora Example', phoneNumber: '+15550199' });
    });
  });

  describe('receiving', () => {
    const receive = async (body: Record<string, unknown>) => {
      const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, ...body });
      expect(sent.status).toBe(201);
      const messageId = `false_${ALICE_JID}_${sent.body.id}`;
      const frame = await s.frame(`message ${messageId}`, (f) => f.event === 'message' && f.payload.id === messageId);
      return { messageId, keyId: sent.body.id as string, frame };
    };
    const mediaFile = (url: string) => path.join(s.dataDir, 'media', id, decodeURIComponent(url.slice(url.lastIndexOf('/') + 1)));

    it('stores and streams received media, downloadable through the proxy with Range', async () => {
      const image = pngBytes();
      const { messageId, frame } = await receive({ image: { base64: image.toString('base64'), mimetype: 'image/png', caption: 'from alice' } });
      expect(frame.payload).toMatchObject({ from: ALICE_JID, body: 'from alice', type: 'image', hasMedia: true, media: { mimetype: 'image/png' } });
      const url = (frame.payload.media as { url: string }).url;
      expect(url).toMatch(new RegExp(`^${s.apiUrl}/connections/${id}/media/`));

      const stored = await s.api('GET', `/connections/${id}/messages/${messageId}?chatId=${ALICE_JID}`);
      expect(stored.body).toMatchObject({ id: messageId, type: 'image', text: 'from alice', media: { url, mimetype: 'image/png', size: image.length } });

      // Eagerly downloaded to <dataDir>/media/<connectionId>/ (no temp file left behind).
      await waitFor('the eager download', () => (fs.existsSync(mediaFile(url)) ? true : undefined));
      expect(fs.readdirSync(path.dirname(mediaFile(url))).filter((f) => f.endsWith('.part'))).toEqual([]);

      const full = await s.raw(url);
      expect(full.status).toBe(200);
      expect(full.headers.get('content-type')).toBe('image/png');
      expect(full.headers.get('content-length')).toBe(String(image.length));
      expect(full.headers.get('accept-ranges')).toBe('bytes');
      expect(full.bytes.equals(image)).toBe(true);

      const part = await s.raw(url, { range: 'bytes=10-19' });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 10-19/${image.length}`);
      expect(part.bytes.equals(image.subarray(10, 20))).toBe(true);
      expect((await s.raw(url, { range: `bytes=${image.length}-` })).status).toBe(416);

      const viaMessage = await s.raw(`/connections/${id}/messages/${messageId}/media?chatId=${ALICE_JID}`);
      expect(viaMessage.status).toBe(200);
      expect(viaMessage.bytes.equals(image)).toBe(true);
    });

    it('receives video, audio, document, location and contact messages', async () => {
      const video = mp4Bytes();
      const v = await receive({ video: { base64: video.toString('base64'), mimetype: 'video/mp4', caption: 'vid' } });
      expect(v.frame.payload).toMatchObject({ type: 'video', hasMedia: true, media: { mimetype: 'video/mp4' } });
      expect((await s.raw(`/connections/${id}/messages/${v.messageId}/media?chatId=${ALICE_JID}`)).bytes.equals(video)).toBe(true);

      const voice = oggBytes();
      const a = await receive({ audio: { base64: voice.toString('base64'), mimetype: 'audio/ogg; codecs=opus', ptt: true } });
      expect(a.frame.payload).toMatchObject({ type: 'audio', hasMedia: true });
      expect((await s.raw(`/connections/${id}/messages/${a.messageId}/media?chatId=${ALICE_JID}`)).bytes.equals(voice)).toBe(true);

      const doc = pdfBytes();
      const d = await receive({ document: { base64: doc.toString('base64'), mimetype: 'application/pdf', filename: 'in.pdf' } });
      expect(d.frame.payload).toMatchObject({ type: 'document', media: { mimetype: 'application/pdf', filename: 'in.pdf' } });
      const dl = await s.raw(`/connections/${id}/messages/${d.messageId}/media?chatId=${ALICE_JID}`);
      expect(dl.bytes.equals(doc)).toBe(true);
      expect(dl.headers.get('content-disposition')).toContain('in.pdf');

      const l = await receive({ location: { latitude: 48.85, longitude: 2.35, name: 'Paris' } });
      expect(l.frame.payload).toMatchObject({ type: 'location', body: 'Paris', hasMedia: false });
      const c = await receive({ contact: { name: 'Eve', phoneNumber: '+15550188' } });
      expect(c.frame.payload).toMatchObject({ type: 'contact', body: 'Eve' });
    });

    it('re-downloads lost media, asking the phone to re-upload when the CDN blob expired', async () => {
      const image = pngBytes().subarray(0);
      const { messageId, keyId, frame } = await receive({ image: { base64: image.toString('base64'), mimetype: 'image/png' } });
      const url = (frame.payload.media as { url: string }).url;
      await waitFor('the eager download', () => (fs.existsSync(mediaFile(url)) ? true : undefined));
      fs.rmSync(mediaFile(url));
      const expired = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages/${keyId}/expire-media`);
      expect(expired.status).toBe(204);
      const again = await s.raw(`/connections/${id}/messages/${messageId}/media?chatId=${ALICE_JID}`);
      expect(again.status).toBe(200);
      expect(again.bytes.equals(image)).toBe(true);
      expect(fs.existsSync(mediaFile(url))).toBe(true);
    });

    it('answers 404 for unknown messages and media, and refuses unsafe file names', async () => {
      const text = await receive({ text: 'no media here' });
      expect((await s.api('GET', `/connections/${id}/messages/${text.messageId}/media?chatId=${ALICE_JID}`)).body).toMatchObject({ statusCode: 404, message: 'Media not found' });
      expect((await s.api('GET', `/connections/${id}/messages/false_${ALICE_JID}_NOPE/media?chatId=${ALICE_JID}`)).body).toMatchObject({ statusCode: 404, message: 'Message not found' });
      expect((await s.api('GET', `/connections/${id}/messages/false_${ALICE_JID}_NOPE?chatId=${ALICE_JID}`)).status).toBe(404);
      expect((await s.api('GET', `/connections/${id}/media/NOPE.jpg`)).body).toMatchObject({ statusCode: 404, message: 'Media not found' });
      expect((await s.api('GET', `/connections/${id}/media/..%2F..%2Fswitchboard.db`)).status).toBe(400);
      const noAuth = await fetch(`${s.apiUrl}/connections/${id}/media/NOPE.jpg`);
      expect(noAuth.status).toBe(401);
    });
  });

  describe('reactions and edits', () => {
    let incoming: string;
    let incomingKey: string;
    let own: Json;

    beforeAll(async () => {
      const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'react to me' });
      incomingKey = sent.body.id;
      incoming = `false_${ALICE_JID}_${incomingKey}`;
      await s.frame('incoming text', (f) => f.event === 'message' && f.payload.id === incoming);
      own = (await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'first version', skipPresence: true })).body;
      await atAlice(keyIdOf(own.id));
    });

    it('reacts to a contact message and removes the reaction', async () => {
      const r = await s.api('POST', `/connections/${id}/react`, { chatId: ALICE, messageId: incoming, emoji: '👍' });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ id: incoming, reactions: [{ senderJid: '15550100@s.whatsapp.net', emoji: '👍' }] });
      await waitFor('reaction at Alice', async () =>
        (await phoneMessages(ALICE)).find((m) => m.reaction !== undefined && JSON.stringify(m).includes(incomingKey) && JSON.stringify(m).includes('👍')),
      );
      await s.frame('own reaction event', (f) => f.event === 'message.reaction' && f.payload.id === incoming && f.payload.emoji === '👍');
      const removed = await s.api('POST', `/connections/${id}/react`, { chatId: ALICE, messageId: incoming, emoji: '' });
      expect(removed.body.reactions).toEqual([]);
      expect((await s.api('POST', `/connections/${id}/react`, { chatId: ALICE, messageId: `false_${ALICE_JID}_NOPE`, emoji: '👍' })).status).toBe(404);
    });

    it('ingests a reaction from the contact', async () => {
      const res = await s.sandbox('POST', `/accounts/${enc(ALICE)}/reactions`, { to: PHONE, messageId: keyIdOf(own.id), emoji: '❤️' });
      expect(res.status).toBe(201);
      const f = await s.frame('message.reaction', (x) => x.event === 'message.reaction' && x.payload.id === own.id && x.payload.emoji === '❤️');
      expect(f.payload).toMatchObject({ chatId: ALICE_JID, from: ALICE_JID, fromMe: false, removed: false });
      const m = await s.api('GET', `/connections/${id}/messages/${own.id}?chatId=${ALICE_JID}`);
      expect(m.body.reactions).toEqual([expect.objectContaining({ senderJid: ALICE_JID, emoji: '❤️' })]);
    });

    it('edits an own text message; the contact sees the new text', async () => {
      const e = await s.api('PUT', `/connections/${id}/messages/${own.id}`, { chatId: ALICE, text: 'second version' });
      expect(e.status).toBe(200);
      expect(e.body).toMatchObject({ id: own.id, text: 'second version', editedAt: expect.any(Number) });
      await waitFor('edit at Alice', async () => {
        const m = (await phoneMessages(ALICE)).find((x) => x.id === keyIdOf(own.id));
        return m && (m.text === 'second version' || m.edits.some((x) => x.text === 'second version')) ? m : undefined;
      });
      await s.frame('message.edited', (f) => f.event === 'message.edited' && f.payload.id === own.id && f.payload.body === 'second version');
      expect((await s.api('GET', `/connections/${id}/messages/${own.id}?chatId=${ALICE_JID}`)).body.text).toBe('second version');
    });

    it("refuses to edit someone else's message (400, 403 is for another user's resource) and edits after 15 minutes (400)", async () => {
      const other = await s.api('PUT', `/connections/${id}/messages/${incoming}`, { chatId: ALICE_JID, text: 'mine now' });
      expect(other).toMatchObject({ status: 400, body: { message: 'Only your own messages can be edited' } });
      clockOffsetMs = 16 * 60 * 1000;
      try {
        const late = await s.api('PUT', `/connections/${id}/messages/${own.id}`, { chatId: ALICE_JID, text: 'too late' });
        expect(late).toMatchObject({ status: 400, body: { message: 'Messages can only be edited within 15 minutes of sending' } });
      } finally {
        clockOffsetMs = 0;
      }
      expect((await s.api('PUT', `/connections/${id}/messages/true_${ALICE_JID}_NOPE`, { chatId: ALICE_JID, text: 'x' })).status).toBe(404);
    });

    it('ingests an edit from the contact', async () => {
      const res = await s.sandbox('POST', `/accounts/${enc(ALICE)}/edits`, { to: PHONE, messageId: incomingKey, text: 'react to me, edited' });
      expect(res.status).toBe(201);
      const f = await s.frame('contact edit', (x) => x.event === 'message.edited' && x.payload.id === incoming);
      expect(f.payload).toMatchObject({ body: 'react to me, edited', previousBody: 'react to me', fromMe: false });
      const m = await s.api('GET', `/connections/${id}/messages/${incoming}?chatId=${ALICE_JID}`);
      expect(m.body).toMatchObject({ text: 'react to me, edited', editedAt: expect.any(Number) });
    });
  });

  describe('connection management', () => {
    it('renames with PATCH and refuses unknown fields', async () => {
      const renamed = await s.api('PATCH', `/connections/${id}`, { name: 'Work phone' });
      expect(renamed).toMatchObject({ status: 200, body: { id, name: 'Work phone', status: 'online' } });
      const unknown = await s.api('PATCH', `/connections/${id}`, { name: 'x', colour: 'red' });
      expect(unknown.status).toBe(400);
      expect(unknown.body.message).toMatch(/colour/);
    });

    it('restarts a linked connection back to online without a scan, keeping its data', async () => {
      const res = await s.api('POST', `/connections/${id}/restart`);
      expect(res.status).toBe(200);
      await waitFor('online after restart', async () => ((await s.api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), {
        timeoutMs: 30_000,
      });
      const sent = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'after restart', skipPresence: true });
      expect(sent.status).toBe(201);
      await atAlice(keyIdOf(sent.body.id));
    });
  });

  describe('presence', () => {
    it('marks a chat read: the contact gets read receipts and unread drops to 0', async () => {
      const keys: string[] = [];
      for (const text of ['unread one', 'unread two']) {
        const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text });
        keys.push(sent.body.id);
        await s.frame(text, (f) => f.event === 'message' && f.payload.body === text);
      }
      const unread = await s.api('GET', `/connections/${id}/chats?unread_only=true`);
      expect(unread.body.find((c: { id: string }) => c.id === ALICE_JID)?.unread).toBeGreaterThanOrEqual(2);

      const res = await s.api('POST', `/connections/${id}/mark-read`, { chatId: ALICE });
      expect(res).toMatchObject({ status: 200, body: { success: true } });
      await waitFor('read receipts at Alice', async () => {
        const receipts = (await s.sandbox('GET', `/accounts/${enc(ALICE)}/receipts`)).body as Array<{ from: string; type: string; messageIds: string[] }>;
        const read = receipts.filter((r) => r.type === 'read' && r.from === PHONE).flatMap((r) => r.messageIds);
        return keys.every((k) => read.includes(k)) ? true : undefined;
      });
      const after = await s.api('GET', `/connections/${id}/chats?unread_only=true`);
      expect(after.body.find((c: { id: string }) => c.id === ALICE_JID)).toBeUndefined();
    });

    it('shows and stops the typing indicator at the contact', async () => {
      expect((await s.api('POST', `/connections/${id}/typing`, { chatId: ALICE })).body).toEqual({ success: true });
      expect((await s.api('POST', `/connections/${id}/typing/stop`, { chatId: ALICE })).body).toEqual({ success: true });
      await waitFor('chatstates at Alice', async () => {
        const states = ((await s.sandbox('GET', `/accounts/${enc(ALICE)}/chatstates`)).body as Array<{ from: string; state: string }>)
          .filter((c) => c.from === PHONE)
          .map((c) => c.state);
        return states.includes('composing') && states.includes('paused') ? true : undefined;
      });
    });

    it('emits presence.update when the contact types', async () => {
      const res = await s.sandbox('POST', `/accounts/${enc(ALICE)}/chatstate`, { to: PHONE, state: 'composing' });
      expect(res.status).toBe(200);
      const f = await s.frame('presence.update', (x) => x.event === 'presence.update' && x.payload.presence === 'composing');
      expect(f.payload).toMatchObject({ chatId: ALICE_JID, participant: ALICE_JID, presence: 'composing' });
    });

    it('sees read receipts from the contact as acks', async () => {
      const own = (await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'read me', skipPresence: true })).body;
      await atAlice(keyIdOf(own.id));
      await s.sandbox('POST', `/accounts/${enc(ALICE)}/reads`, { to: PHONE, messageIds: [keyIdOf(own.id)] });
      await s.frame('read ack', (f) => f.event === 'message.ack' && f.payload.id === own.id && f.payload.ack === 4);
    });
  });
});
