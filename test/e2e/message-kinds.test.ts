/**
 * Message kinds end to end through the sandbox (issue #13): real Baileys receives what the simulated phones send.
 * Votes cast before pairing, carried by the history sync on their polls, aggregated onto the stored polls.
 * A poll created by a contact and voted on twice (one vote changed): aggregated counts on the poll message,
 * `poll.vote` events, chat preview and unread unchanged by votes; a poll sent with send-poll and voted on by two
 * contacts; a list reply with its selection; a live location with coordinates and caption; a two-card contact array;
 * an album (its album message, items naming it); a status post (author, not in chats, no eager download); an undecryptable message replaced in place after its retry; a re-login where the sandbox withholds the offline-delivered marker still goes online (the fallback timer) and logs
 * the fallback's warning.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { eventSchemaErrors, loggedEvents } from '../helpers/event-schemas.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';
const BOB_JID = '15550102@s.whatsapp.net';
const OWN_JID = '15550100@s.whatsapp.net';

const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

describe('message kinds end to end through the sandbox', () => {
  let s: SandboxService;
  let id: string;
  let historyPoll: string;
  let ownHistoryPoll: string;
  const logLines: string[] = [];

  const fromPhone = async (phone: string, body: Json) => {
    const res = await s.sandbox('POST', `/accounts/${enc(phone)}/messages`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return (res.body as { id: string }).id;
  };
  const vote = async (phone: string, to: string, pollId: string, options: string[]) => {
    const res = await s.sandbox('POST', `/accounts/${enc(phone)}/poll-votes`, { to, pollId, options });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };
  const stored = (chatJid: string, keyId: string, fromMe = false) =>
    waitFor(`message ${keyId}`, async () => {
      const res = await s.api('GET', `/connections/${id}/messages/${encodeURIComponent(`${fromMe}_${chatJid}_${keyId}`)}?chatId=${chatJid}`);
      return res.status === 200 ? res.body : undefined;
    });
  const chat = async (jid: string) => ((await s.api('GET', `/connections/${id}/chats`)).body as Json[]).find((c) => c.id === jid);

  beforeAll(async () => {
    // A short fallback, so the withheld-marker case below does not wait the default 20 s.
    // The service's log is captured (warnings and up, as the harness logs by default) to see the fallback's warning.
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) });
    s = await startSandboxService({ config: { onlineFallbackMs: 3000 }, logger });
    for (const [phoneNumber, pushName] of [[ALICE, 'Alice'], [BOB, 'Bob']]) {
      const res = await s.sandbox('POST', '/accounts', { phoneNumber, pushName });
      expect([201, 409]).toContain(res.status);
    }
    // Before pairing: polls with votes (one changed, one by the account's own phone, several options at once), which
    // the history sync carries on their polls (pollUpdates), not as messages.
    historyPoll = await fromPhone(ALICE, { to: PHONE, poll: { name: 'Offsite where?', options: ['Lisbon', 'Oslo', 'Rome'] } });
    await vote(ALICE, PHONE, historyPoll, ['Lisbon']);
    await vote(ALICE, PHONE, historyPoll, ['Oslo']);
    await vote(PHONE, ALICE, historyPoll, ['Rome']);
    ownHistoryPoll = await fromPhone(PHONE, { to: BOB, poll: { name: 'Coffee or tea?', options: ['Coffee', 'Tea'], selectableCount: 2 } });
    await vote(BOB, PHONE, ownHistoryPoll, ['Coffee', 'Tea']);
    id = await s.pair(PHONE);
  }, 90_000);

  afterAll(async () => {
    await s?.close();
  });

  it('aggregates the votes a history sync carries on its polls, and stores no vote as a message', async () => {
    const poll = await stored(ALICE_JID, historyPoll);
    expect(poll).toMatchObject({ kind: 'poll', text: 'Offsite where?' });
    expect(poll.poll.options).toEqual([
      { name: 'Lisbon', votes: 0, voters: [] },
      { name: 'Oslo', votes: 1, voters: [ALICE_JID] },
      { name: 'Rome', votes: 1, voters: [OWN_JID] },
    ]);
    const own = await stored(BOB_JID, ownHistoryPoll, true);
    expect(own).toMatchObject({ fromMe: true, kind: 'poll', poll: { name: 'Coffee or tea?', selectableCount: 2 } });
    expect(own.poll.options).toEqual([
      { name: 'Coffee', votes: 1, voters: [BOB_JID] },
      { name: 'Tea', votes: 1, voters: [BOB_JID] },
    ]);
    for (const chatJid of [ALICE_JID, BOB_JID]) {
      const page = await s.api('GET', `/connections/${id}/chats/${chatJid}/messages?limit=100`);
      expect((page.body.messages as Json[]).filter((m) => m.text === '' && m.kind !== 'poll')).toEqual([]);
    }
  });

  it('aggregates votes on a contact’s poll, announces poll.vote, and leaves the chat preview and unread alone', async () => {
    const pollKey = await fromPhone(ALICE, { to: PHONE, poll: { name: 'Lunch?', options: ['Pizza', 'Sushi', 'Tacos'] } });
    const poll = await stored(ALICE_JID, pollKey);
    expect(poll).toMatchObject({ type: 'text', kind: 'poll', text: 'Lunch?', poll: { name: 'Lunch?', selectableCount: 1 } });
    const before = await chat(ALICE_JID);
    expect(before.lastMessage.body).toBe('Lunch?');

    await vote(ALICE, PHONE, pollKey, ['Pizza']);
    await s.frame('first vote', (f) => f.event === 'poll.vote' && f.payload.id === poll.id && (f.payload.selectedOptions as string[])[0] === 'Pizza');
    await vote(ALICE, PHONE, pollKey, ['Sushi']); // changed
    const changed = await s.frame('changed vote', (f) => f.event === 'poll.vote' && f.payload.id === poll.id && (f.payload.selectedOptions as string[])[0] === 'Sushi');
    expect(changed.payload).toMatchObject({ chatId: ALICE_JID, voter: ALICE_JID, selectedOptions: ['Sushi'] });
    expect(typeof changed.payload.timestamp).toBe('number');

    const after = await stored(ALICE_JID, pollKey);
    expect(after.poll.options).toEqual([
      { name: 'Pizza', votes: 0, voters: [] },
      { name: 'Sushi', votes: 1, voters: [ALICE_JID] },
      { name: 'Tacos', votes: 0, voters: [] },
    ]);
    const now = await chat(ALICE_JID);
    expect(now.lastMessage).toEqual(before.lastMessage);
    expect(now.unread).toBe(before.unread);
    // a vote is never a chat message
    const page = await s.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=50`);
    expect((page.body.messages as Json[]).filter((m) => m.kind !== 'poll' && m.text === '')).toEqual([]);
    expect(s.frames.some((f) => f.event === 'message' && f.payload.chatId === ALICE_JID && f.payload.body === '')).toBe(false);
  });

  it('a poll sent with send-poll is voted on by two contacts', async () => {
    const bad = await s.api('POST', `/connections/${id}/send-poll`, { chatId: ALICE, name: 'x', options: ['a', 'a'], skipPresence: true });
    expect(bad.status).toBe(400);
    const sent = await s.api('POST', `/connections/${id}/send-poll`, { chatId: ALICE, name: 'Ship it?', options: ['Yes', 'No'], skipPresence: true });
    expect(sent.status).toBe(201);
    expect(sent.body).toMatchObject({ fromMe: true, kind: 'poll', type: 'text', poll: { name: 'Ship it?', selectableCount: 1 } });
    const sentBob = await s.api('POST', `/connections/${id}/send-poll`, { chatId: BOB, name: 'Ship it?', options: ['Yes', 'No'], skipPresence: true });
    expect(sentBob.status).toBe(201);
    const aliceKey = keyIdOf(sent.body.id);
    const bobKey = keyIdOf(sentBob.body.id);
    await waitFor('poll at Alice', async () =>
      ((await s.sandbox('GET', `/accounts/${enc(ALICE)}/messages`)).body as Json[]).some((m) => m.id === aliceKey) || undefined,
    );
    await waitFor('poll at Bob', async () =>
      ((await s.sandbox('GET', `/accounts/${enc(BOB)}/messages`)).body as Json[]).some((m) => m.id === bobKey) || undefined,
    );
    await vote(ALICE, PHONE, aliceKey, ['Yes']);
    await vote(BOB, PHONE, bobKey, ['No']);
    await s.frame('Alice voted', (f) => f.event === 'poll.vote' && f.payload.id === sent.body.id && f.payload.voter === ALICE_JID);
    await s.frame('Bob voted', (f) => f.event === 'poll.vote' && f.payload.id === sentBob.body.id && f.payload.voter === BOB_JID);
    expect((await stored(ALICE_JID, aliceKey, true)).poll.options).toEqual([
      { name: 'Yes', votes: 1, voters: [ALICE_JID] },
      { name: 'No', votes: 0, voters: [] },
    ]);
    expect((await stored(BOB_JID, bobKey, true)).poll.options).toEqual([
      { name: 'Yes', votes: 0, voters: [] },
      { name: 'No', votes: 1, voters: [BOB_JID] },
    ]);
    expect(sent.body.senderJid).toBe(OWN_JID);
  });

  it('a list reply keeps the selected row', async () => {
    const key = await fromPhone(ALICE, { to: PHONE, listReply: { id: 'pizza_l', title: 'Large pizza' } });
    expect(await stored(ALICE_JID, key)).toMatchObject({ type: 'text', kind: 'list_response', text: 'Large pizza', selection: { id: 'pizza_l', title: 'Large pizza' } });
    const ev = await s.frame('list reply event', (f) => f.event === 'message' && f.payload.id === `false_${ALICE_JID}_${key}`);
    expect(ev.payload).toMatchObject({ kind: 'list_response', selection: { id: 'pizza_l', title: 'Large pizza' } });
  });

  it('a buttons reply keeps the chosen button', async () => {
    const key = await fromPhone(BOB, { to: PHONE, buttonsReply: { id: 'confirm_yes', text: 'Yes, confirm' } });
    expect(await stored(BOB_JID, key)).toMatchObject({
      type: 'text',
      kind: 'buttons_response',
      text: 'Yes, confirm',
      selection: { id: 'confirm_yes', title: 'Yes, confirm' },
    });
  });

  it('a live location keeps its coordinates and caption', async () => {
    const key = await fromPhone(ALICE, { to: PHONE, liveLocation: { latitude: 51.5072, longitude: -0.1276, caption: 'On my way' } });
    expect(await stored(ALICE_JID, key)).toMatchObject({
      type: 'location',
      kind: 'location',
      text: 'On my way',
      location: { latitude: 51.5072, longitude: -0.1276, isLive: true },
    });
  });

  it('a contact array keeps both cards with their numbers', async () => {
    const key = await fromPhone(ALICE, { to: PHONE, contacts: [{ name: 'Bob', phoneNumber: BOB }, { name: 'Carol', phoneNumber: '+15550107' }] });
    const m = await stored(ALICE_JID, key);
    expect(m).toMatchObject({ type: 'contact', kind: 'contact', text: '2 contacts' });
    expect(m.contacts.map((c: Json) => [c.name, c.phoneNumbers])).toEqual([
      ['Bob', [BOB]],
      ['Carol', ['+15550107']],
    ]);
  });

  it('an album arrives as its album message with the expected counts, and each item names its album', async () => {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    const clip = Buffer.from('not really an mp4, but bytes the phone uploads and the service downloads');
    const res = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, {
      to: PHONE,
      album: [
        { image: { base64: png.toString('base64'), mimetype: 'image/png', caption: 'first' } },
        { video: { base64: clip.toString('base64'), mimetype: 'video/mp4' } },
        { image: { base64: png.toString('base64'), mimetype: 'image/png' } },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { id: albumKey, itemIds } = res.body as { id: string; itemIds: string[] };
    expect(itemIds).toHaveLength(3);
    const album = await stored(ALICE_JID, albumKey);
    expect(album).toMatchObject({ type: 'image', kind: 'album', text: '', media: null, album: { expectedImages: 2, expectedVideos: 1 }, albumId: null });
    const items: Json[] = [];
    for (const key of itemIds) items.push(await stored(ALICE_JID, key));
    expect(items.map((m) => [m.kind, m.type, m.text, m.albumId])).toEqual([
      ['image', 'image', 'first', album.id],
      ['video', 'video', '', album.id],
      ['image', 'image', '', album.id],
    ]);
    expect(items.every((m) => m.album === null)).toBe(true);
    const ev = await s.frame('album event', (f) => f.event === 'message' && f.payload.id === album.id);
    expect(ev.payload).toMatchObject({ kind: 'album', album: { expectedImages: 2, expectedVideos: 1 } });
    await s.frame('item event', (f) => f.event === 'message' && f.payload.id === items[1].id && f.payload.albumId === album.id);
    // the items' media are the bytes the phone sent
    const video = await s.raw(`/connections/${id}/messages/${encodeURIComponent(items[1].id)}/media?chatId=${ALICE_JID}`);
    expect(video.status).toBe(200);
    expect(video.bytes.equals(clip)).toBe(true);
    const bad = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, album: [{ image: { base64: png.toString('base64'), mimetype: 'image/png' } }] });
    expect(bad.status).toBe(400);
  });

  it('a status post is attributed to its author, hidden from chats, never unread, and its media not fetched eagerly', async () => {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    const key = await fromPhone(BOB, { to: PHONE, status: true, image: { base64: png.toString('base64'), mimetype: 'image/png', caption: 'Sunset' } });
    const m = await stored('status@broadcast', key);
    expect(m).toMatchObject({ chatId: 'status@broadcast', senderJid: BOB_JID, fromMe: false, type: 'image', kind: 'image', text: 'Sunset' });
    const chats = (await s.api('GET', `/connections/${id}/chats`)).body as Json[];
    expect(chats.map((c) => c.id)).not.toContain('status@broadcast');
    const withStatus = (await s.api('GET', `/connections/${id}/chats?include_status=true`)).body as Json[];
    expect(withStatus.find((c) => c.id === 'status@broadcast')).toMatchObject({ unread: 0, lastMessage: { body: 'Sunset' } });
    // Not downloaded at arrival: a chat image sent after it is downloaded eagerly (the download queue is FIFO), and
    // by then the status media would have been fetched too; it is not, until it is requested.
    const onDisk = (url: string) => fs.existsSync(path.join(s.dataDir, 'media', id, decodeURIComponent(url.slice(url.lastIndexOf('/') + 1))));
    const chatKey = await fromPhone(BOB, { to: PHONE, image: { base64: png.toString('base64'), mimetype: 'image/png' } });
    const chatImage = await stored(BOB_JID, chatKey);
    await waitFor('the chat image downloaded eagerly', async () => onDisk(chatImage.media.url) || undefined);
    expect(onDisk(m.media.url)).toBe(false);
    const media = await s.raw(`/connections/${id}/messages/${encodeURIComponent(m.id)}/media?chatId=status@broadcast`);
    expect(media.status).toBe(200);
    expect(media.bytes.equals(png)).toBe(true);
  });

  it('an undecryptable message is stored as a placeholder and replaced in place when its retry arrives', async () => {
    const from = s.frames.length;
    const key = await fromPhone(ALICE, { to: PHONE, undecryptable: true, text: 'decrypted on retry' });
    const messageId = `false_${ALICE_JID}_${key}`;
    const real = await s.frame('the real message', (f) => f.event === 'message' && f.payload.id === messageId, 30_000);
    expect(real.payload).toMatchObject({ kind: 'text', body: 'decrypted on retry' });
    const mine = s.frames.slice(from).filter((f) => f.payload?.id === messageId).map((f) => f.event);
    expect(mine).toEqual(['message.waiting', 'message']); // the placeholder first, then one message event, no duplicate
    expect(s.frames.slice(from).find((f) => f.event === 'message.waiting')?.payload).toMatchObject({ id: messageId, kind: 'undecryptable', body: '' });
    const page = await s.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=5`);
    const copies = (page.body.messages as Json[]).filter((m) => m.id === messageId);
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({ kind: 'text', type: 'text', text: 'decrypted on retry' });
  });

  it('a re-login without the offline-delivered marker still goes online, and sends work', async () => {
    expect((await s.sandbox('PUT', '/faults/offline-marker', { withhold: true })).status).toBe(204);
    try {
      const from = s.frames.length;
      const restarted = await s.api('POST', `/connections/${id}/restart`);
      expect(restarted.status).toBe(200);
      const statuses = await waitFor('connected, then online without the marker', async () => {
        const frames = s.frames.slice(from).filter((f) => f.event === 'session.status');
        return frames.some((f) => f.payload.status === 'connected') && frames.at(-1)?.payload.status === 'online' ? frames : undefined;
      }, { timeoutMs: 30_000 });
      // The fallback timer did it: online came the configured 3 s after the login (the marker never arrived), well
      // within the default 20 s.
      const connectedAt = Date.parse(statuses.findLast((f) => f.payload.status === 'connected')!.timestamp);
      const onlineAt = Date.parse(statuses.at(-1)!.timestamp);
      expect(onlineAt - connectedAt).toBeGreaterThanOrEqual(2990);
      expect(onlineAt - connectedAt).toBeLessThan(20_000);
      // ... and said so in the log, as a warning naming the connection and the time it waited
      const warnings = logLines
        .map((line) => JSON.parse(line) as Json)
        .filter((r) => r.msg === 'no offline-delivered marker from the server; going online without it');
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      expect(warnings.at(-1)).toMatchObject({ level: 40, waitedMs: 3000, connectionId: id });
      const sent = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'still here', skipPresence: true });
      expect(sent.status).toBe(201);
    } finally {
      await s.sandbox('PUT', '/faults/offline-marker', { withhold: false });
    }
  });

  it('every event of the run (polls, votes, waiting messages, kinds with structured content) matches its documented payload schema', async () => {
    const logged = await loggedEvents((route) => s.api('GET', route));
    const types = new Set(logged.map((e) => e.event));
    for (const t of ['session.status', 'message', 'message.sent', 'message.waiting', 'poll.vote']) expect(types, t).toContain(t);
    const kinds = new Set(logged.filter((e) => e.event === 'message').map((e) => (e.payload as Json).kind));
    for (const k of ['poll', 'list_response', 'buttons_response', 'location', 'contact', 'album']) expect(kinds, k).toContain(k);
    expect(eventSchemaErrors(logged)).toEqual([]);
    expect(eventSchemaErrors(s.frames)).toEqual([]);
  });
});

describe('status media with serve --download-status-media', () => {
  let s: SandboxService;
  let id: string;

  beforeAll(async () => {
    s = await startSandboxService({ config: { downloadStatusMedia: true } });
    id = await s.pair(PHONE);
  }, 90_000);

  afterAll(async () => {
    await s?.close();
  });

  it('downloads a status post’s media as it arrives', async () => {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    const res = await s.sandbox('POST', `/accounts/${enc(BOB)}/messages`, { to: PHONE, status: true, image: { base64: png.toString('base64'), mimetype: 'image/png' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const m = await waitFor('the status post', async () => {
      const r = await s.api('GET', `/connections/${id}/messages/${encodeURIComponent(`false_status@broadcast_${res.body.id}`)}?chatId=status@broadcast`);
      return r.status === 200 ? r.body : undefined;
    });
    const file = path.join(s.dataDir, 'media', id, decodeURIComponent(m.media.url.slice(m.media.url.lastIndexOf('/') + 1)));
    // Not requested through the API: on disk only because the setting downloads status media eagerly.
    const bytes = await waitFor('the status media on disk', async () => (fs.existsSync(file) ? fs.readFileSync(file) : undefined));
    expect(bytes.equals(png)).toBe(true);
  });
});
