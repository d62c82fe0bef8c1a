/**
 * Profiles (issue 14 item 4) through real Baileys and the sandbox: a contact's about and picture (bytes identical
 * through the media proxy, Bearer auth), the 24 h cache and `?refresh=true`, a picture change noticed at once, a
 * contact's new push name arriving with its messages; the account's own push name, about and picture changed through
 * the API and seen by a contact (a second connection linked to that contact's phone); bad pictures refused with 400.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const PHONE_JID = '15550100@s.whatsapp.net';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';

/** A JPEG of `width`×`height` in one colour. */
const jpeg = (width: number, height: number, r: number) =>
  sharp({ create: { width, height, channels: 3, background: { r, g: 120, b: 200 } } }).jpeg({ quality: 85 }).toBuffer();
const png = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 4, background: { r: 10, g: 200, b: 90, alpha: 1 } } }).png().toBuffer();

describe('profiles', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let id: string;
  let aliceId: string;
  /** Added to the engine's clock (ms): the cache's 24 h pass without waiting. */
  let clockOffset = 0;
  const profile = (connectionId: string, jid: string, refresh = false) =>
    s.api('GET', `/connections/${connectionId}/contacts/${encodeURIComponent(jid)}/profile${refresh ? '?refresh=true' : ''}`);
  const sandboxPicture = async (phone: string) => {
    const res = await fetch(`${s.sandboxUrl}/accounts/${enc(phone)}/profile/picture`);
    return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : undefined;
  };

  beforeAll(async () => {
    s = await startSandboxService({ now: () => Date.now() + clockOffset });
    id = await s.pair(PHONE);
  });
  afterAll(() => s?.close());

  describe("a contact's profile", () => {
    let aliceJpeg: Buffer;
    let firstUrl: string;

    it('answers name, about and a picture whose bytes are identical through the media proxy', async () => {
      aliceJpeg = await jpeg(320, 320, 30);
      const set = await s.sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { about: 'Out hiking', picture: { base64: aliceJpeg.toString('base64') } });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ about: 'Out hiking', picture: { size: aliceJpeg.length } });

      const res = await profile(id, ALICE);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ jid: ALICE_JID, name: 'Alice Sandbox', about: 'Out hiking' });
      firstUrl = res.body.pictureUrl;
      expect(firstUrl.slice(0, firstUrl.lastIndexOf('/'))).toBe(`${s.apiUrl}/connections/${id}/media`);
      expect(firstUrl).toMatch(/\/media\/profile-15550101-[0-9a-f]{16}\.jpg$/);
      const proxied = await s.raw(firstUrl);
      expect(proxied.status).toBe(200);
      expect(proxied.headers.get('content-type')).toBe('image/jpeg');
      expect(proxied.bytes.equals(aliceJpeg)).toBe(true);
      expect((await sandboxPicture(ALICE))!.equals(aliceJpeg)).toBe(true);
      // the proxy wants the usual Bearer auth
      const anonymous = await fetch(firstUrl);
      expect(anonymous.status).toBe(401);
      // every spelling of the contact answers the same profile
      for (const spelling of [ALICE_JID, '15550101@c.us', '15550101']) {
        expect((await profile(id, spelling)).body).toMatchObject({ jid: ALICE_JID, pictureUrl: firstUrl });
      }
    });

    it('answers from the 24 h cache until ?refresh=true or the 24 h have passed', async () => {
      expect((await s.sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { about: 'Back home' })).status).toBe(200);
      expect((await profile(id, ALICE)).body.about).toBe('Out hiking');
      const refreshed = await profile(id, ALICE, true);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ about: 'Back home', pictureUrl: firstUrl });
      expect((await profile(id, ALICE)).body.about).toBe('Back home');

      expect((await s.sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { about: 'Gone fishing' })).status).toBe(200);
      clockOffset += 23 * 3600_000;
      expect((await profile(id, ALICE)).body.about).toBe('Back home');
      clockOffset += 3600_000 + 1000;
      expect((await profile(id, ALICE)).body).toMatchObject({ about: 'Gone fishing', pictureUrl: firstUrl });
    });

    it('notices a picture change at once (the server’s picture notification), and a removal', async () => {
      const next = await jpeg(200, 200, 220);
      expect((await s.sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { picture: { base64: next.toString('base64') } })).status).toBe(200);
      const changed = await waitFor('the new picture', async () => {
        const res = await profile(id, ALICE);
        return res.body.pictureUrl !== firstUrl ? res.body : undefined;
      });
      expect((await s.raw(changed.pictureUrl)).bytes.equals(next)).toBe(true);
      // the replaced file is gone from the media folder
      expect((await s.raw(firstUrl)).status).toBe(404);

      expect((await s.sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { picture: null })).status).toBe(200);
      await waitFor('no picture', async () => ((await profile(id, ALICE)).body.pictureUrl === null ? true : undefined));
      expect((await s.raw(changed.pictureUrl)).status).toBe(404);
    });

    it("learns a contact's new push name from its next message (the saved name stays the name)", async () => {
      expect((await s.sandbox('PATCH', `/accounts/${enc(ALICE)}/profile`, { pushName: 'Alice Renamed' })).status).toBe(200);
      const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'new name, same me' });
      expect(sent.status).toBe(201);
      const frame = await s.frame('message with the new name', (f) => f.event === 'message' && String(f.payload.id).endsWith(sent.body.id as string));
      expect(frame.payload.pushName).toBe('Alice Renamed');
      expect((await profile(id, ALICE)).body).toMatchObject({ name: 'Alice Sandbox', pushName: 'Alice Renamed' });
    });

    it('answers null about and picture for a contact without them', async () => {
      const res = await profile(id, BOB);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ jid: '15550102@s.whatsapp.net', name: 'Bob Sandbox', about: null, pictureUrl: null });
    });

    it('refuses groups and malformed ids with 400, and numbers not on WhatsApp with 400', async () => {
      for (const bad of ['120363000000000001@g.us', 'not a jid', 'status@broadcast']) {
        const res = await profile(id, bad);
        expect(res.status, bad).toBe(400);
        expect(res.body.message).toMatch(/jid must be a user JID/);
      }
      const unknown = await profile(id, '+15559999');
      expect(unknown.status).toBe(400);
      expect(unknown.body.message).toBe('+15559999 is not on WhatsApp');
    });
  });

  it('sandbox admin: a bad picture, about or field is 400 and changes nothing; no picture is 404', async () => {
    const before = (await s.sandbox('GET', `/accounts/${enc(BOB)}/profile`)).body;
    for (const body of [
      { picture: { base64: Buffer.from('GIF89a not really').toString('base64') } },
      { picture: { base64: Buffer.concat([(await png(8, 8)).subarray(0, 30), Buffer.alloc(20)]).toString('base64') }, about: 'not applied' },
      { about: 'z'.repeat(140) },
      { pushName: '' },
      { nickname: 'Bobby' },
    ]) {
      const res = await s.sandbox('PATCH', `/accounts/${enc(BOB)}/profile`, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
    }
    expect((await s.sandbox('GET', `/accounts/${enc(BOB)}/profile`)).body).toEqual(before);
    expect((await fetch(`${s.sandboxUrl}/accounts/${enc(BOB)}/profile/picture`)).status).toBe(404);
  });

  describe('the account’s own profile', () => {
    it('GET /me answers id, push name, about and picture', async () => {
      const me = await s.api('GET', `/connections/${id}/me`);
      expect(me.status).toBe(200);
      expect(me.body).toEqual({ id: PHONE_JID, pushName: 'Sandbox Phone', about: null, pictureUrl: null });
    });

    it('changes push name and about: the server keeps them and a contact sees them', async () => {
      const res = await s.api('PATCH', `/connections/${id}/me`, { pushName: 'Switchboard Desk', about: 'Answering on weekdays' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: PHONE_JID, pushName: 'Switchboard Desk', about: 'Answering on weekdays' });
      expect((await s.api('GET', `/connections/${id}/me`)).body).toMatchObject({ pushName: 'Switchboard Desk', about: 'Answering on weekdays' });
      expect((await s.api('GET', `/connections/${id}`)).body.status).toBe('online');
      const atServer = await s.sandbox('GET', `/accounts/${enc(PHONE)}/profile`);
      expect(atServer.body).toMatchObject({ pushName: 'Switchboard Desk', about: 'Answering on weekdays' });

      // Alice's own linked device: the about through her profile query, the name on the next message she gets
      aliceId = await s.pair(ALICE);
      const seen = await profile(aliceId, PHONE);
      expect(seen.status).toBe(200);
      expect(seen.body).toMatchObject({ jid: PHONE_JID, about: 'Answering on weekdays' });
      const sent = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'hello from the desk', skipPresence: true });
      expect(sent.status).toBe(201);
      const keyId = (sent.body.id as string).split('_').pop()!;
      const atAlice = await s.frame('message at Alice', (f) => f.connectionId === aliceId && f.event === 'message' && String(f.payload.id).endsWith(keyId));
      expect(atAlice.payload.pushName).toBe('Switchboard Desk');
      expect((await profile(aliceId, PHONE)).body.pushName).toBe('Switchboard Desk');
    });

    it('sets the picture from a PNG: 640×640 JPEG at the server, identical bytes for the account and for a contact', async () => {
      const res = await s.api('PUT', `/connections/${id}/me/picture`, { base64: (await png(300, 200)).toString('base64') });
      expect(res.status).toBe(200);
      expect(res.body.pictureUrl.slice(0, res.body.pictureUrl.lastIndexOf('/'))).toBe(`${s.apiUrl}/connections/${id}/media`);
      expect(res.body.pictureUrl).toMatch(/\/media\/profile-15550100-[0-9a-f]{16}\.jpg$/);
      const atServer = (await sandboxPicture(PHONE))!;
      const meta = await sharp(atServer).metadata();
      expect(meta).toMatchObject({ format: 'jpeg', width: 640, height: 640 });
      expect((await s.raw(res.body.pictureUrl)).bytes.equals(atServer)).toBe(true);
      const seen = await waitFor('the picture at Alice', async () => {
        const p = await profile(aliceId, PHONE);
        return p.body.pictureUrl ? p.body : undefined;
      });
      expect((await s.raw(seen.pictureUrl)).bytes.equals(atServer)).toBe(true);
    });

    it('refuses a bad picture with 400 and changes nothing', async () => {
      const before = (await s.sandbox('GET', `/accounts/${enc(PHONE)}/profile`)).body.picture.id;
      const webp = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#333' } }).webp().toBuffer();
      const brokenPng = Buffer.concat([(await png(16, 16)).subarray(0, 40), Buffer.alloc(64, 7)]);
      const cases: Array<[unknown, RegExp]> = [
        [{ base64: Buffer.from('just some text').toString('base64') }, /must be a JPEG or PNG image/],
        [{ base64: webp.toString('base64') }, /must be a JPEG or PNG image, not image\/webp/],
        [{ base64: brokenPng.toString('base64') }, /could not be decoded/],
        [{ base64: 'not base64 at all!' }, /base64/],
        [{ url: 'https://127.0.0.1:1/picture.png' }, /could not be fetched/],
        [{ url: 'http://example.com/picture.png' }, /https/],
        [{}, /exactly one of url or base64/],
        [{ base64: 'AAAA', url: 'https://example.com/a.png' }, /exactly one of url or base64/],
      ];
      for (const [body, message] of cases) {
        const res = await s.api('PUT', `/connections/${id}/me/picture`, body);
        expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
        expect(res.body.message).toMatch(message);
      }
      expect((await s.sandbox('GET', `/accounts/${enc(PHONE)}/profile`)).body.picture.id).toBe(before);
    });

    it('refuses bad names and abouts with 400, and a connection that is not online with 409', async () => {
      for (const body of [{}, { pushName: '' }, { pushName: 'x'.repeat(26) }, { about: 'y'.repeat(140) }, { pushName: '   ' }, { nickname: 'z' }]) {
        const res = await s.api('PATCH', `/connections/${id}/me`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
      expect((await s.sandbox('GET', `/accounts/${enc(PHONE)}/profile`)).body.pushName).toBe('Switchboard Desk');

      const created = await s.api('POST', '/connections', { name: 'not linked' });
      const idle = created.body.id as string;
      expect((await s.api('GET', `/connections/${idle}/me`)).status).toBe(409);
      expect((await s.api('PATCH', `/connections/${idle}/me`, { about: 'nope' })).status).toBe(409);
      expect((await s.api('PUT', `/connections/${idle}/me/picture`, { base64: (await png(8, 8)).toString('base64') })).status).toBe(409);
      expect((await profile(idle, ALICE)).status).toBe(409);
      expect((await s.api('DELETE', `/connections/${idle}`)).status).toBe(200);
    });
  });
});
