/**
 * Groups at protocol level between a real, unmodified Baileys rc14 client and the sandbox: sender keys both ways
 * (Baileys → phones through `w:g2` metadata, usync, SKDM `pkmsg` and `skmsg`; phones → Baileys through SKDM +
 * `skmsg`), mentions, replies, reactions, edits and revokes in a group, every `w:g2` IQ Baileys has a helper for,
 * `w:gp2` notifications as Baileys events, a LID-addressed group, the seeded group in the pairing history sync,
 * and the admin API's group routes and its Host/Origin/JSON guard.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { downloadMediaMessage, type GroupMetadata, type WAMessage } from '@whiskeysockets/baileys';
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
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** A raw HTTP request (fetch cannot set Host). */
function raw(url: string, method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url + path, { method, headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The status of a WebSocket upgrade request to the protocol endpoint. */
function rawUpgrade(url: string, headers: Record<string, string>) {
  return new Promise<number>((resolve, reject) => {
    const req = request(`${url}/ws/chat`, { headers });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

interface View {
  id: string;
  from: string;
  to: string;
  type: string;
  text: string;
  replyTo: string | null;
  groupId?: string;
  mentions?: string[];
  media?: { base64: string | null; mimetype: string; caption?: string };
  readBy: string[];
  reactions: Array<{ from: string; emoji: string }>;
  edits: Array<{ text: string }>;
  revoked: boolean;
}

interface GroupView {
  id: string;
  subject: string;
  description: string | null;
  owner: string;
  addressingMode: string;
  inviteCode: string;
  announce: boolean;
  locked: boolean;
  ephemeral: number;
  participants: Array<{ phoneNumber: string; jid: string; lid: string; role: string; isAdmin: boolean }>;
}

muteLibsignalNoise();

const PHONE = '15550100';
const ALICE = '15550101';
const BOB = '15550102';
const CAROL = '15550103';
const ALICE_JID = `${ALICE}@s.whatsapp.net`;

describe('sandbox groups with a real Baileys client', () => {
  let root: string;
  let sandbox: Sandbox;
  let c: TestClient;
  let trust: SandboxTrust;
  let team: string; // the seeded group's JID
  let authFile: string;
  let extra: Parameters<typeof connectClient>[3];
  /** Group metadata the client uses instead of asking (Baileys' `cachedGroupMetadata`), to make it stale. */
  const staleMetadata = new Map<string, GroupMetadata>();
  const errors: string[] = [];

  const received = (pn: string) => api<View[]>(sandbox.url, 'GET', `/accounts/${pn}/messages`).then((r) => r.body);
  const receivedById = (pn: string, id: string) =>
    poll(async () => (await received(pn)).find((m) => m.id === id), `message ${id} at ${pn}`);
  const upserted = async (id: string): Promise<WAMessage> => {
    const u = await c.waitFor('messages.upsert', (x) => x.messages.some((m) => m.key.id === id));
    return u.messages.find((m) => m.key.id === id)!;
  };
  const groupSend = (groupJid: string, body: Record<string, unknown>) =>
    api<{ id: string }>(sandbox.url, 'POST', `/groups/${encodeURIComponent(groupJid)}/messages`, body);
  /** Who read message `id` as `pn`'s phone sees it (read receipts it got). */
  const readersOf = async (pn: string, id: string) =>
    (await api<Array<{ from: string; messageIds: string[]; type: string }>>(sandbox.url, 'GET', `/accounts/${pn}/receipts`)).body
      .filter((r) => r.type === 'read' && r.messageIds.includes(id))
      .map((r) => r.from);
  const group = (groupJid: string) =>
    api<GroupView>(sandbox.url, 'GET', `/groups/${encodeURIComponent(groupJid)}`).then((r) => r.body);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-groups-'));
    const logger = pino(
      { level: 'warn' },
      { write: (l: string) => void (JSON.parse(l).level >= 50 && errors.push(l)) },
    );
    sandbox = await startSandbox({ dataDir: join(root, 'data'), logger });
    await sandbox.seedDemo();
    expect((await api(sandbox.url, 'POST', '/accounts', { phoneNumber: `+${CAROL}`, pushName: 'Carol' })).status).toBe(201);

    trust = sandboxTrust(sandbox.caCertPem);
    extra = {
      fetchAgent: trust.fetchAgent,
      options: { dispatcher: trust.dispatcher } as never,
      cachedGroupMetadata: async (jid: string) => staleMetadata.get(jid),
    };
    authFile = join(root, 'auth.json');
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    expect((await api(sandbox.url, 'POST', `/accounts/${PHONE}/scan`, { qr })).status).toBe(200);
    expect(await pairing.closed).toBe(515);
    c = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    await c.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
  });

  afterAll(async () => {
    await c?.end();
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('syncs the seeded group "Sandbox Team" and its history at pairing', async () => {
    const history = await c.waitFor('messaging-history.set', (h) =>
      h.chats.some((chat) => !!chat.id?.endsWith('@g.us') && chat.name === 'Sandbox Team'),
    );
    team = history.chats.find((chat) => chat.name === 'Sandbox Team')!.id!;
    const msgs = history.messages.filter((m) => m.key.remoteJid === team);
    expect(msgs.map((m) => m.message?.conversation)).toContain('Standup moves to 10:30 tomorrow.');
    expect(msgs).toHaveLength(4);
    const fromAlice = msgs.find((m) => m.message?.conversation === 'Hi all!')!;
    expect(fromAlice.key).toMatchObject({ fromMe: false, participant: ALICE_JID });
    expect(msgs.find((m) => m.key.fromMe)?.message?.conversation).toBe('Welcome to the Sandbox Team group 👋');
  });

  it('answers groupMetadata and groupFetchAllParticipating, and counts the metadata queries', async () => {
    const queries = async () =>
      (await api<{ total: number; byPhone: Record<string, number> }>(sandbox.url, 'GET', `/groups/${encodeURIComponent(team)}/metadata-queries`)).body;
    const before = await queries();
    const meta = await c.sock.groupMetadata(team);
    const after = await queries();
    expect(after.total).toBe(before.total + 1);
    expect(after.byPhone[`+${PHONE}`]).toBe((before.byPhone[`+${PHONE}`] ?? 0) + 1);
    expect(meta).toMatchObject({ id: team, subject: 'Sandbox Team', addressingMode: 'pn', size: 3 });
    expect(meta.desc).toBe('Where the sandbox contacts meet.');
    expect(meta.owner).toBe(`${PHONE}@s.whatsapp.net`);
    const byId = Object.fromEntries(meta.participants.map((p) => [p.id, p]));
    expect(byId[`${PHONE}@s.whatsapp.net`]?.admin).toBe('superadmin');
    expect(byId[ALICE_JID]?.admin).toBeNull();
    expect(byId[ALICE_JID]?.lid).toMatch(/@lid$/);
    const all = await c.sock.groupFetchAllParticipating();
    expect(Object.keys(all)).toContain(team);
    expect((await queries()).total).toBe(after.total); // the participating list is another query
    // Baileys' query() throws Boom(text, { data: code }) for an <error> answer
    await expect(c.sock.groupMetadata('120363999999999999@g.us')).rejects.toMatchObject({
      message: 'item-not-found',
      data: 404,
    });
  });

  it('Baileys → group: both contacts’ phones decrypt it (sender keys), twice', async () => {
    const first = await c.sock.sendMessage(team, { text: 'hello team from Baileys' });
    const second = await c.sock.sendMessage(team, { text: 'second message, sender key already known' });
    for (const pn of [ALICE, BOB]) {
      const v1 = await receivedById(pn, first!.key.id!);
      expect(v1).toMatchObject({ text: 'hello team from Baileys', from: `+${PHONE}`, groupId: team, to: team });
      expect((await receivedById(pn, second!.key.id!)).text).toBe('second message, sender key already known');
    }
    expect((await received(CAROL)).some((m) => m.id === first!.key.id)).toBe(false);
  });

  it('contact → group: Baileys decrypts text, a mention and a reply', async () => {
    const text = await groupSend(team, { from: `+${ALICE}`, text: 'hello from Alice' });
    expect(text.status, JSON.stringify(text.body)).toBe(201);
    const m1 = await upserted(text.body.id);
    expect(m1.key).toMatchObject({ remoteJid: team, participant: ALICE_JID, fromMe: false });
    expect(m1.message?.conversation).toBe('hello from Alice');
    expect(m1.pushName).toBe('Alice Sandbox');
    // Bob's phone got it too, through the same sender key
    expect((await receivedById(BOB, text.body.id)).text).toBe('hello from Alice');

    const mention = await groupSend(team, { from: `+${BOB}`, text: '@15550100 have a look', mentions: [`+${PHONE}`] });
    const m2 = await upserted(mention.body.id);
    expect(m2.key.participant).toBe(`${BOB}@s.whatsapp.net`);
    expect(m2.message?.extendedTextMessage?.contextInfo?.mentionedJid).toEqual([`${PHONE}@s.whatsapp.net`]);

    const reply = await groupSend(team, { from: `+${ALICE}`, text: 'replying', replyTo: mention.body.id });
    const m3 = await upserted(reply.body.id);
    const ctx = m3.message?.extendedTextMessage?.contextInfo;
    expect(ctx?.stanzaId).toBe(mention.body.id);
    expect(ctx?.participant).toBe(`${BOB}@s.whatsapp.net`);
    expect(ctx?.quotedMessage?.extendedTextMessage?.text).toBe('@15550100 have a look');
    expect((await receivedById(PHONE, reply.body.id)).replyTo).toBe(mention.body.id);
    expect((await receivedById(ALICE, mention.body.id)).mentions).toEqual([`+${PHONE}`]);

    // the client's own phone writes into the group: the client shows it as its own message
    const own = await groupSend(team, { from: `+${PHONE}`, text: 'typed on the phone itself' });
    const ownWa = await upserted(own.body.id);
    expect(ownWa.key).toMatchObject({ remoteJid: team, fromMe: true });
    expect(ownWa.message?.conversation).toBe('typed on the phone itself');
    expect((await receivedById(ALICE, own.body.id)).from).toBe(`+${PHONE}`);

    // Baileys mentions Alice; her phone sees the mention, and Baileys' read receipt reaches Bob's record
    const out = await c.sock.sendMessage(team, { text: '@15550101 thanks', mentions: [ALICE_JID] });
    expect((await receivedById(ALICE, out!.key.id!)).mentions).toEqual([`+${ALICE}`]);
    await c.sock.readMessages([m2.key]);
    await poll(
      async () => ((await receivedById(PHONE, mention.body.id)) && (await readersOf(BOB, mention.body.id)).length ? true : undefined),
      'read receipt in the group',
    );
    expect(await readersOf(BOB, mention.body.id)).toEqual([`+${PHONE}`]);
  });

  it('a contact’s phone reads the client’s group messages: read receipts with the participant', async () => {
    const mine = await c.sock.sendMessage(team, { text: 'please read me' });
    await receivedById(BOB, mine!.key.id!);
    const read = await api(sandbox.url, 'POST', `/groups/${encodeURIComponent(team)}/reads`, {
      by: `+${BOB}`,
      messageIds: [mine!.key.id],
    });
    expect(read.status).toBe(200);
    const update = await c.waitFor('message-receipt.update', (us) =>
      us.some((u) => u.key.id === mine!.key.id && !!u.receipt.readTimestamp),
    );
    expect(update.find((u) => u.key.id === mine!.key.id)?.receipt.userJid).toBe(`${BOB}@s.whatsapp.net`);
    const own = await api(sandbox.url, 'POST', `/groups/${encodeURIComponent(team)}/reads`, {
      by: `+${PHONE}`,
      messageIds: [mine!.key.id],
    });
    expect(own.status).toBe(400); // one does not read one's own message
  });

  it('media both ways in a group: the phones download and verify, Baileys downloads and decrypts', async () => {
    const img = randomBytes(4000);
    const sent = await c.sock.sendMessage(team, { image: img, mimetype: 'image/jpeg', caption: 'group picture' });
    for (const pn of [ALICE, BOB]) {
      const v = await receivedById(pn, sent!.key.id!);
      expect(v).toMatchObject({ type: 'image', text: 'group picture', groupId: team });
      expect(Buffer.from(v.media!.base64!, 'base64').equals(img)).toBe(true);
    }
    const doc = randomBytes(3000);
    const fromBob = await groupSend(team, {
      from: `+${BOB}`,
      document: { base64: doc.toString('base64'), mimetype: 'application/pdf', filename: 'plan.pdf' },
    });
    expect(fromBob.status).toBe(201);
    const wa = await upserted(fromBob.body.id);
    expect(wa.message?.documentMessage?.fileName).toBe('plan.pdf');
    const got = (await downloadMediaMessage(wa, 'buffer', {
      options: { dispatcher: trust.dispatcher },
    } as never)) as Buffer;
    expect(got.equals(doc)).toBe(true);
  });

  it('reactions, edits and revokes inside the group, both ways', async () => {
    const aliceMsg = await groupSend(team, { from: `+${ALICE}`, text: 'react to this' });
    const aliceWa = await upserted(aliceMsg.body.id);
    // Baileys reacts to Alice's message: Alice's and Bob's phones see the reaction
    const react = await c.sock.sendMessage(team, { react: { text: '🎉', key: aliceWa.key } });
    await receivedById(BOB, react!.key.id!);
    await poll(
      async () => ((await receivedById(BOB, aliceMsg.body.id)).reactions.length ? true : undefined),
      'reaction at Bob',
    );
    expect((await receivedById(BOB, aliceMsg.body.id)).reactions).toEqual([{ from: `+${PHONE}`, emoji: '🎉' }]);

    // Baileys edits and revokes its own group messages
    const mine = await c.sock.sendMessage(team, { text: 'typo heer' });
    const edit = await c.sock.sendMessage(team, { text: 'typo here', edit: mine!.key });
    await receivedById(ALICE, edit!.key.id!);
    expect((await receivedById(ALICE, mine!.key.id!)).edits.map((e) => e.text)).toEqual(['typo here']);
    const del = await c.sock.sendMessage(team, { delete: mine!.key });
    await receivedById(BOB, del!.key.id!);
    expect((await receivedById(BOB, mine!.key.id!)).revoked).toBe(true);

    // a contact reacts to, edits and revokes in the group: Baileys gets the events
    const r = await groupSend(team, { from: `+${BOB}`, reaction: { messageId: mine!.key.id, emoji: '👀' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await c.waitFor('messages.reaction', (rs) =>
      rs.some((x) => x.key.id === mine!.key.id && x.reaction.text === '👀'),
    );
    const e = await groupSend(team, { from: `+${ALICE}`, edit: { messageId: aliceMsg.body.id, text: 'react to this!' } });
    expect(e.status).toBe(201);
    const editWa = await upserted(e.body.id);
    expect(editWa.message?.protocolMessage?.editedMessage?.conversation).toBe('react to this!');
    const v = await groupSend(team, { from: `+${ALICE}`, revoke: { messageId: aliceMsg.body.id } });
    expect(v.status).toBe(201);
    await c.waitFor('messages.update', (us) =>
      us.some((u) => u.key.id === aliceMsg.body.id && u.update.messageStubType !== undefined),
    );
    // only the sender may edit or revoke
    const refused = await groupSend(team, { from: `+${BOB}`, revoke: { messageId: aliceMsg.body.id } });
    expect(refused.status).toBe(400);
  });

  it('w:g2 from Baileys: create, subject, participants, invite code, leave', async () => {
    const created = await c.sock.groupCreate('Made by Baileys', [ALICE_JID, `${CAROL}@s.whatsapp.net`]);
    expect(created.subject).toBe('Made by Baileys');
    expect(created.participants).toHaveLength(3);
    const view = await group(created.id);
    expect(view.participants.find((p) => p.phoneNumber === `+${PHONE}`)?.role).toBe('superadmin');
    expect(view.participants.map((p) => p.phoneNumber).sort()).toEqual([`+${PHONE}`, `+${ALICE}`, `+${CAROL}`]);

    await c.sock.groupUpdateSubject(created.id, 'Renamed by Baileys');
    expect((await group(created.id)).subject).toBe('Renamed by Baileys');
    await c.sock.groupUpdateDescription(created.id, 'a description');
    expect((await group(created.id)).description).toBe('a description');

    const added = await c.sock.groupParticipantsUpdate(created.id, [`${BOB}@s.whatsapp.net`, '15559999@s.whatsapp.net'], 'add');
    expect(added.map((a) => a.status)).toEqual(['200', '404']);
    const promoted = await c.sock.groupParticipantsUpdate(created.id, [ALICE_JID], 'promote');
    expect(promoted[0]?.status).toBe('200');
    expect((await group(created.id)).participants.find((p) => p.phoneNumber === `+${ALICE}`)?.role).toBe('admin');
    await c.sock.groupParticipantsUpdate(created.id, [ALICE_JID], 'demote');
    const before = await groupSend(created.id, { from: `+${ALICE}`, text: 'before the removal' });
    expect((await upserted(before.body.id)).message?.conversation).toBe('before the removal');
    const aliceKeyId = () => {
      const db = new Database(join(root, 'data', 'sandbox.db'), { readonly: true });
      try {
        const row = db
          .prepare("SELECT record FROM sender_keys WHERE pn = ? AND group_id = ? AND sender = ''")
          .get(ALICE, created.id.replace('@g.us', '')) as { record: string } | undefined;
        return row && (JSON.parse(row.record) as { states: Array<{ keyId: number }> }).states[0]?.keyId;
      } finally {
        db.close();
      }
    };
    const keyBefore = aliceKeyId();
    expect(keyBefore).toBeTypeOf('number');
    const removed = await c.sock.groupParticipantsUpdate(created.id, [`${CAROL}@s.whatsapp.net`], 'remove');
    expect(removed[0]?.status).toBe('200');
    expect((await group(created.id)).participants.map((p) => p.phoneNumber).sort()).toEqual([
      `+${PHONE}`,
      `+${ALICE}`,
      `+${BOB}`,
    ]);

    // the phones rotated their sender keys: Alice's next message carries a new key, which the client gets
    const after = await groupSend(created.id, { from: `+${ALICE}`, text: 'after the removal' });
    expect((await upserted(after.body.id)).message?.conversation).toBe('after the removal');
    expect(aliceKeyId()).not.toBe(keyBefore);
    expect((await received(CAROL)).some((m) => m.id === after.body.id)).toBe(false);

    const code = await c.sock.groupInviteCode(created.id);
    expect(code).toBe((await group(created.id)).inviteCode);

    // messages into the new group reach the members' phones (new sender key after the removal)
    const sent = await c.sock.sendMessage(created.id, { text: 'in the new group' });
    expect((await receivedById(BOB, sent!.key.id!)).groupId).toBe(created.id);

    await c.sock.groupLeave(created.id);
    expect((await group(created.id)).participants.map((p) => p.phoneNumber)).not.toContain(`+${PHONE}`);
    await expect(c.sock.groupMetadata(created.id)).rejects.toMatchObject({ data: 403 });
  });

  it('w:gp2 notifications reach Baileys as groups.update and group-participants.update', async () => {
    const subject = await api(sandbox.url, 'PATCH', `/groups/${encodeURIComponent(team)}`, {
      by: `+${ALICE}`,
      subject: 'Sandbox Team (renamed)',
    });
    expect(subject.status, JSON.stringify(subject.body)).toBe(200);
    await c.waitFor('groups.update', (us) => us.some((u) => u.id === team && u.subject === 'Sandbox Team (renamed)'));

    // Alice is no admin: 403; the phone (superadmin) promotes her, then she adds Carol
    const denied = await api(sandbox.url, 'POST', `/groups/${encodeURIComponent(team)}/participants`, {
      by: `+${ALICE}`,
      action: 'add',
      participants: [`+${CAROL}`],
    });
    expect(denied).toMatchObject({ status: 403, body: { message: 'Not a group admin' } });
    const promote = await c.sock.groupParticipantsUpdate(team, [ALICE_JID], 'promote');
    expect(promote[0]?.status).toBe('200');
    const add = await api(sandbox.url, 'POST', `/groups/${encodeURIComponent(team)}/participants`, {
      by: `+${ALICE}`,
      action: 'add',
      participants: [`+${CAROL}`, `+${BOB}`],
    });
    expect(add).toMatchObject({
      status: 200,
      body: [
        { phoneNumber: `+${CAROL}`, status: 200 },
        { phoneNumber: `+${BOB}`, status: 409 },
      ],
    });
    const ev = await c.waitFor('group-participants.update', (u) => u.id === team && u.action === 'add');
    expect(ev.participants.map((p) => p.id)).toEqual([`${CAROL}@s.whatsapp.net`]);
    expect(ev.author).toBe(ALICE_JID);

    // Carol, now a member, sends into the group: Baileys decrypts it
    const hi = await groupSend(team, { from: `+${CAROL}`, text: 'thanks for adding me' });
    expect((await upserted(hi.body.id)).message?.conversation).toBe('thanks for adding me');
  });

  it('settings: announcement, locked and disappearing messages, from Baileys and the admin API', async () => {
    const patch = (body: Record<string, unknown>) => api(sandbox.url, 'PATCH', `/groups/${encodeURIComponent(team)}`, body);
    await c.sock.groupSettingUpdate(team, 'announcement');
    await c.waitFor('groups.update', (us) => us.some((u) => u.id === team && u.announce === true));
    expect((await group(team)).announce).toBe(true);
    expect((await c.sock.groupMetadata(team)).announce).toBe(true);
    const muted = await groupSend(team, { from: `+${BOB}`, text: 'may I?' });
    expect(muted).toMatchObject({ status: 403, body: { message: 'Only admins can send to this group' } });
    const admin = await groupSend(team, { from: `+${ALICE}`, text: 'admins only for a while' });
    expect((await upserted(admin.body.id)).message?.conversation).toBe('admins only for a while');
    expect((await patch({ by: `+${BOB}`, announce: false })).status).toBe(403);
    await c.sock.groupSettingUpdate(team, 'not_announcement');
    expect((await groupSend(team, { from: `+${BOB}`, text: 'open again' })).status).toBe(201);

    expect((await patch({ by: `+${ALICE}`, locked: true })).status).toBe(200);
    await c.waitFor('groups.update', (us) => us.some((u) => u.id === team && u.restrict === true));
    expect((await patch({ by: `+${BOB}`, subject: 'Bob was here' })).body).toMatchObject({ message: 'Not a group admin' });
    await c.sock.groupSettingUpdate(team, 'unlocked');
    expect((await group(team)).locked).toBe(false);

    // disappearing messages: the phones wrap their messages (ephemeralMessage, contextInfo.expiration)
    await c.sock.groupToggleEphemeral(team, 86400);
    expect((await c.sock.groupMetadata(team)).ephemeralDuration).toBe(86400);
    expect((await group(team)).ephemeral).toBe(86400);
    const first = await groupSend(team, { from: `+${BOB}`, text: 'this will disappear' });
    const wrapped = (await upserted(first.body.id)).message?.ephemeralMessage?.message?.extendedTextMessage;
    expect(wrapped?.text).toBe('this will disappear');
    expect(wrapped?.contextInfo?.expiration).toBe(86400);
    const reply = await groupSend(team, { from: `+${ALICE}`, text: 'so will this', replyTo: first.body.id });
    const replyCtx = (await upserted(reply.body.id)).message?.ephemeralMessage?.message?.extendedTextMessage?.contextInfo;
    expect(replyCtx).toMatchObject({ stanzaId: first.body.id, expiration: 86400 });
    expect((await receivedById(PHONE, reply.body.id))).toMatchObject({ text: 'so will this', replyTo: first.body.id });
    const mine = await c.sock.sendMessage(team, { text: 'mine too' }, { ephemeralExpiration: 86400 });
    expect((await receivedById(BOB, mine!.key.id!)).text).toBe('mine too');
    expect((await patch({ by: `+${BOB}`, ephemeral: 0 })).status).toBe(200);
    await c.waitFor('messages.upsert', (u) =>
      u.messages.some((m) => m.key.remoteJid === team && m.message?.protocolMessage?.ephemeralExpiration === 0),
    );
    expect((await patch({ by: `+${BOB}`, ephemeral: -1 })).status).toBe(400);
    expect((await patch({ by: `+${BOB}`, announce: 'yes' })).status).toBe(400);
    expect((await patch({ by: `+${BOB}` })).status).toBe(400);
  });

  it('a stale member list (cachedGroupMetadata): once the client’s list is current, the new member gets the key', async () => {
    const created = await api<{ id: string }>(sandbox.url, 'POST', '/groups', {
      creator: `+${ALICE}`,
      subject: 'Stale cache',
      participants: [`+${PHONE}`],
    });
    const gid = created.body.id;
    staleMetadata.set(gid, await c.sock.groupMetadata(gid)); // Alice and the phone only
    const added = await api(sandbox.url, 'POST', `/groups/${encodeURIComponent(gid)}/participants`, {
      by: `+${ALICE}`,
      action: 'add',
      participants: [`+${BOB}`],
    });
    expect(added.status).toBe(200);
    await c.waitFor('group-participants.update', (u) => u.id === gid && u.action === 'add');
    // Bob's phone gets the skmsg without the sender key: it asks for a retry (twice at most), and Baileys re-sends
    // to the member list it has (whether that still lacks Bob depends on when the re-send runs)
    const first = await c.sock.sendMessage(gid, { text: 'sent with a stale member list' });
    expect((await receivedById(ALICE, first!.key.id!)).text).toBe('sent with a stale member list');
    // once the client's metadata is current again (as a service updates it from the w:gp2 add), Bob gets the key
    staleMetadata.delete(gid);
    const second = await c.sock.sendMessage(gid, { text: 'sent with the current member list' });
    expect((await receivedById(BOB, second!.key.id!)).text).toBe('sent with the current member list');
  });

  it('a notification made while the client is offline arrives at its next login', async () => {
    await c.end();
    const renamed = await api(sandbox.url, 'PATCH', `/groups/${encodeURIComponent(team)}`, {
      by: `+${BOB}`,
      subject: 'Renamed while you were away',
      description: 'and described',
    });
    expect(renamed.status).toBe(200);
    c = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    await c.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
    const ev = await c.waitFor('groups.update', (us) =>
      us.some((u) => u.id === team && u.subject === 'Renamed while you were away'),
    );
    expect(ev.find((u) => u.subject)?.author).toBe(`${BOB}@s.whatsapp.net`);
    // (Baileys' event buffer folds the description change into that update; its stub message shows it)
    await c.waitFor('messages.upsert', (u) =>
      u.messages.some((m) => m.key.remoteJid === team && m.messageStubParameters?.[0] === 'and described'),
    );
    // acknowledged notifications leave the queue: a further reconnect does not replay them
    await c.end();
    c = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    await c.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
    const probe = await groupSend(team, { from: `+${BOB}`, text: 'after the second reconnect' });
    await upserted(probe.body.id);
    expect(c.events.filter((e) => e.name === 'groups.update')).toEqual([]);
  });

  it('a LID-addressed group: participant LIDs with participant_pn, both directions', async () => {
    const created = await api<{ id: string }>(sandbox.url, 'POST', '/groups', {
      creator: `+${ALICE}`,
      subject: 'LID group',
      participants: [`+${PHONE}`, `+${BOB}`],
      addressingMode: 'lid',
    });
    expect(created.status).toBe(201);
    const lidGroup = created.body.id;
    const upsert = await c.waitFor('groups.upsert', (gs) => gs.some((g) => g.id === lidGroup));
    expect(upsert.find((g) => g.id === lidGroup)?.addressingMode).toBe('lid');
    const alice = await api<{ lid: string }>(sandbox.url, 'GET', `/accounts/${ALICE}`);

    const meta = await c.sock.groupMetadata(lidGroup);
    expect(meta.addressingMode).toBe('lid');
    expect(meta.participants.every((p) => p.id.endsWith('@lid'))).toBe(true);
    expect(meta.participants.find((p) => p.id === alice.body.lid)?.phoneNumber).toBe(ALICE_JID);

    const fromAlice = await groupSend(lidGroup, { from: `+${ALICE}`, text: 'hello LID group' });
    const wa = await upserted(fromAlice.body.id);
    expect(wa.key).toMatchObject({ remoteJid: lidGroup, participant: alice.body.lid, addressingMode: 'lid' });
    expect(wa.key.participantAlt).toBe(ALICE_JID);
    expect(wa.message?.conversation).toBe('hello LID group');

    const mine = await c.sock.sendMessage(lidGroup, { text: 'hello from Baileys in LID mode' });
    for (const pn of [ALICE, BOB]) {
      expect((await receivedById(pn, mine!.key.id!)).text).toBe('hello from Baileys in LID mode');
    }
  });

  it('fans group messages out between the linked clients of two members, both ways', async () => {
    const aliceAuth = join(root, 'alice.json');
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, aliceAuth);
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    expect((await api(sandbox.url, 'POST', `/accounts/${ALICE}/scan`, { qr })).status).toBe(200);
    expect(await pairing.closed).toBe(515);
    const alice = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, aliceAuth);
    try {
      await alice.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
      const history = await alice.waitFor('messaging-history.set', (h) => h.chats.some((chat) => chat.id === team));
      expect(history.messages.some((m) => m.key.remoteJid === team)).toBe(true);
      const aliceUpsert = async (id: string) =>
        (await alice.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === id))).messages.find(
          (m) => m.key.id === id,
        )!;

      // the phone's client → group: Alice's client decrypts the relayed SKDM + skmsg
      const sent = await c.sock.sendMessage(team, { text: 'to every device of every member' });
      const relayed = await aliceUpsert(sent!.key.id!);
      expect(relayed.message?.conversation ?? relayed.message?.extendedTextMessage?.text).toBe(
        'to every device of every member',
      );
      expect(relayed.key).toMatchObject({ remoteJid: team, fromMe: false });
      expect(relayed.key.participant).toMatch(new RegExp(`^${PHONE}(:\\d+)?@s\\.whatsapp\\.net$`));

      // Alice's client → group: the phone's client and Bob's phone get it; Alice's own phone keeps it as sent
      const back = await alice.sock.sendMessage(team, { text: 'from Alice’s laptop' });
      const got = await upserted(back!.key.id!);
      expect(got.message?.conversation ?? got.message?.extendedTextMessage?.text).toBe('from Alice’s laptop');
      expect((await receivedById(BOB, back!.key.id!)).from).toBe(`+${ALICE}`);

      // Bob's phone → group: both linked clients decrypt it
      const fromBob = await groupSend(team, { from: `+${BOB}`, text: 'Bob to both clients' });
      expect((await aliceUpsert(fromBob.body.id)).message?.conversation).toBe('Bob to both clients');
      expect((await upserted(fromBob.body.id)).message?.conversation).toBe('Bob to both clients');
      expect(alice.logs.filter((l) => /failed to decrypt|sender key|Bad MAC|No session/i.test(l))).toEqual([]);
    } finally {
      await alice.end();
    }
  });

  it('admin API: group validation, router 404/405, Host/Origin guard and JSON only', async () => {
    const url = new URL(sandbox.url);
    const ownHost = url.host;
    const all = await api<GroupView[]>(sandbox.url, 'GET', '/groups');
    expect(all.body.map((g) => g.id)).toContain(team);
    const bobs = await api<GroupView[]>(sandbox.url, 'GET', `/groups?member=${encodeURIComponent(`+${BOB}`)}`);
    expect(bobs.body.every((g) => g.participants.some((p) => p.phoneNumber === `+${BOB}`))).toBe(true);
    expect(bobs.body.length).toBeGreaterThan(0);
    expect((await api(sandbox.url, 'GET', '/groups?member=%2B15550188')).body).toEqual([]);
    expect((await api(sandbox.url, 'GET', '/groups?member=abc')).status).toBe(400);
    expect((await api(sandbox.url, 'GET', '/groups/not-a-group')).status).toBe(400);
    expect((await api(sandbox.url, 'GET', '/groups/120363999999999999%40g.us')).body).toMatchObject({
      message: 'Group not found',
    });
    expect((await api(sandbox.url, 'POST', '/groups', { creator: '+15559999', subject: 'x', participants: [] })).status).toBe(404);
    expect((await api(sandbox.url, 'POST', '/groups', { creator: `+${ALICE}`, subject: '', participants: [] })).status).toBe(400);
    expect(
      (await api(sandbox.url, 'POST', '/groups', { creator: `+${ALICE}`, subject: 's', participants: [], addressingMode: 'x' }))
        .status,
    ).toBe(400);
    expect((await groupSend(team, { from: '+15559999', text: 'x' })).status).toBe(404);
    const outsider = await api(sandbox.url, 'POST', '/groups', { creator: `+${CAROL}`, subject: 'Carol only', participants: [] });
    expect(
      (await groupSend((outsider.body as { id: string }).id, { from: `+${BOB}`, text: 'x' })).status,
    ).toBe(403);
    // joining by invite code (groupGetInviteInfo, groupAcceptInvite)
    const carolOnly = await group((outsider.body as { id: string }).id);
    const info = await c.sock.groupGetInviteInfo(carolOnly.inviteCode);
    expect(info).toMatchObject({ id: carolOnly.id, subject: 'Carol only', size: 1 });
    expect(await c.sock.groupAcceptInvite(carolOnly.inviteCode)).toBe(carolOnly.id);
    expect((await group(carolOnly.id)).participants.map((p) => p.phoneNumber)).toContain(`+${PHONE}`);
    await expect(c.sock.groupAcceptInvite(carolOnly.inviteCode)).rejects.toMatchObject({ data: 409 });
    await expect(c.sock.groupAcceptInvite('nonexistent-code')).rejects.toMatchObject({ data: 404 });

    expect((await api(sandbox.url, 'GET', '/nowhere')).status).toBe(404);
    expect((await api(sandbox.url, 'DELETE', '/accounts')).status).toBe(405);
    expect((await api(sandbox.url, 'GET', '/accounts/')).status).toBe(200); // trailing slash

    const body = JSON.stringify({ phoneNumber: '+15550199', pushName: 'Eve' });
    const json = { 'content-type': 'application/json' };
    const evil = await raw(sandbox.url, 'POST', '/accounts', { ...json, host: 'evil.example' }, body);
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body)).toMatchObject({ message: 'Host not allowed' });
    const rebound = await raw(sandbox.url, 'GET', '/accounts', { host: `evil.example:${url.port}` });
    expect(rebound.status).toBe(403);
    const otherPort = await raw(sandbox.url, 'GET', '/accounts', { host: `127.0.0.1:${Number(url.port) + 1}` });
    expect(otherPort.status).toBe(403);
    const page = await raw(sandbox.url, 'POST', '/accounts', { ...json, host: ownHost, origin: 'https://evil.example' }, body);
    expect(page.status).toBe(403);
    expect(JSON.parse(page.body)).toMatchObject({ message: 'Origin not allowed' });
    const pageGet = await raw(sandbox.url, 'GET', '/accounts', { host: ownHost, origin: 'http://localhost:1' });
    expect(pageGet.status).toBe(403);
    const textPlain = await raw(sandbox.url, 'POST', '/accounts', { 'content-type': 'text/plain', host: ownHost }, body);
    expect(textPlain.status).toBe(415);
    const noType = await raw(sandbox.url, 'POST', '/accounts', { host: ownHost }, body);
    expect(noType.status).toBe(415);
    expect((await api(sandbox.url, 'GET', '/accounts')).body).not.toContainEqual(
      expect.objectContaining({ phoneNumber: '+15550199' }),
    );
    const own = await raw(sandbox.url, 'POST', '/accounts', { ...json, host: ownHost, origin: `http://${ownHost}` }, body);
    expect(own.status).toBe(201);
    const localhost = await raw(sandbox.url, 'GET', '/', { host: `localhost:${url.port}` });
    expect(localhost.status).toBe(200);
    // the protocol WebSocket's upgrade checks Host too (a rebound page cannot open it)
    const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    const wsEvil = await rawUpgrade(sandbox.url, { ...upgrade, host: `evil.example:${url.port}` });
    expect(wsEvil).toBe(403);
    expect(await rawUpgrade(sandbox.url, { ...upgrade, host: ownHost, origin: 'https://web.whatsapp.com' })).toBe(101);
  });

  it('logged no errors', () => {
    // Baileys logs a decryption or sender-key failure at error level; none may have happened
    expect(c.logs.filter((l) => /failed to decrypt|sender key|Bad MAC|No session/i.test(l))).toEqual([]);
    expect(errors).toEqual([]);
  });
});
