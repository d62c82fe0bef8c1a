/**
 * Groups end to end (issue 12): the real service in sandbox mode with real Baileys, a connection paired with the
 * sandbox phone (+15550100), the seeded group "Sandbox Team" (the phone as superadmin, Alice and Bob) and groups the
 * contacts create (one of them LID-addressed). Checks at the contacts' phones what the API sent (decrypted with the
 * group's sender keys), and in the store/events what the contacts did: sender, names, mentions, replies, reactions,
 * edits, revokes, member changes (the group cache follows them, so a send reaches a newly added member), renames,
 * the groups API and its 403/404 answers; the same conversation both ways in a LID-addressed group, and an album.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type Frame, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { eventSchemaErrors, loggedEvents } from '../helpers/event-schemas.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const PHONE_JID = '15550100@s.whatsapp.net';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';
const BOB_JID = '15550102@s.whatsapp.net';
const CAROL = '+15550103';
const CAROL_JID = '15550103@s.whatsapp.net';
const DAVE = '+15550104';
const DAVE_JID = '15550104@s.whatsapp.net';

interface PhoneMessage {
  id: string;
  from: string;
  to: string;
  type: string;
  text: string;
  replyTo: string | null;
  groupId?: string;
  mentions?: string[];
  media?: { base64: string | null; mimetype: string; caption?: string };
  reactions: Array<{ from: string; emoji: string }>;
  edits: Array<{ text: string }>;
  revoked: boolean;
  forwarded?: boolean;
}

const pngBytes = () => pngBytesOf(6, 6);

const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

describe('groups end to end through the sandbox', () => {
  let s: SandboxService;
  let id: string;
  let team: string;

  const phoneMessages = async (phone: string) => (await s.sandbox('GET', `/accounts/${enc(phone)}/messages`)).body as PhoneMessage[];
  const atPhone = (phone: string, keyId: string) =>
    waitFor(`message ${keyId} at ${phone}`, async () => (await phoneMessages(phone)).find((m) => m.id === keyId));
  const groupSend = async (groupId: string, body: Record<string, unknown>) => {
    const res = await s.sandbox('POST', `/groups/${enc(groupId)}/messages`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const stored = (chatId: string, keyId: string, fromMe = false) =>
    waitFor(`stored message ${keyId}`, async () => {
      const res = await s.api('GET', `/connections/${id}/messages/${enc(`${fromMe}_${chatId}_${keyId}`)}?chatId=${enc(chatId)}`);
      return res.status === 200 ? (res.body as Json) : undefined;
    });
  const chatNamed = (chatId: string, name: string) =>
    waitFor(`chat ${chatId} named ${name}`, async () => {
      const chats = (await s.api('GET', `/connections/${id}/chats?limit=500`)).body as Json[];
      return chats.find((c) => c.id === chatId && c.name === name);
    });
  const frameOf = (event: string, pred: (p: Json) => boolean) => s.frame(event, (f: Frame) => f.event === event && f.connectionId === id && pred(f.payload));
  const sandboxGroup = async (groupId: string) => (await s.sandbox('GET', `/groups/${enc(groupId)}`)).body as Json;
  const createContactGroup = async (subject: string, participants: string[], addressingMode?: 'lid') => {
    const res = await s.sandbox('POST', '/groups', { creator: ALICE, subject, participants, ...(addressingMode && { addressingMode }) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const groupId = res.body.id as string;
    // The account learns of the group from the creation notification.
    await waitFor(`group ${subject} known to the service`, async () =>
      (await s.api('GET', `/connections/${id}/groups/${enc(groupId)}`)).status === 200 ? true : undefined,
    );
    return groupId;
  };

  beforeAll(async () => {
    s = await startSandboxService();
    for (const [phoneNumber, pushName] of [[CAROL, 'Carol Sandbox'], [DAVE, 'Dave Sandbox']]) {
      expect((await s.sandbox('POST', '/accounts', { phoneNumber, pushName })).status).toBe(201);
    }
    const groups = (await s.sandbox('GET', `/groups?member=${enc(PHONE)}`)).body as Json[];
    team = groups.find((g) => g.subject === 'Sandbox Team').id;
    id = await s.pair(PHONE);
  }, 90_000);

  afterAll(async () => {
    await s?.close();
  });

  it('lists the groups the account is in and names the group chat by its subject', async () => {
    const list = await s.api('GET', `/connections/${id}/groups`);
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(
      expect.objectContaining({ id: team, subject: 'Sandbox Team', participantsCount: 3, addressingMode: 'pn', owner: PHONE_JID }),
    );
    const one = await s.api('GET', `/connections/${id}/groups/${enc(team)}`);
    expect(one.status).toBe(200);
    expect(one.body.description).toBe('Where the sandbox contacts meet.');
    expect(one.body.participants).toContainEqual(
      expect.objectContaining({ jid: PHONE_JID, phoneNumber: PHONE, isAdmin: true, isSuperAdmin: true }),
    );
    expect(one.body.participants).toContainEqual(
      expect.objectContaining({ jid: ALICE_JID, phoneNumber: ALICE, isAdmin: false, isSuperAdmin: false, name: 'Alice Sandbox' }),
    );
    // the digits alone name the group too
    expect((await s.api('GET', `/connections/${id}/groups/${team.split('@')[0]}`)).body.id).toBe(team);
    const chat = await chatNamed(team, 'Sandbox Team');
    expect(chat.isGroup).toBe(true);
  });

  it("stores a contact's group message with the participant as sender, their push name and mentions", async () => {
    const keyId = await groupSend(team, { from: ALICE, text: 'Morning @15550100!', mentions: [PHONE] });
    const frame = await frameOf('message', (p) => p.id === `false_${team}_${keyId}`);
    expect(frame.payload).toMatchObject({ chatId: team, from: ALICE_JID, senderJid: ALICE_JID, senderPushName: 'Alice Sandbox', mentions: [PHONE_JID] });
    const m = await stored(team, keyId);
    expect(m).toMatchObject({ chatId: team, fromMe: false, senderJid: ALICE_JID, senderPushName: 'Alice Sandbox', text: 'Morning @15550100!', mentions: [PHONE_JID] });
    await chatNamed(team, 'Sandbox Team');
  });

  it('sends text with mentions and an image to the group; every member phone decrypts them', async () => {
    const text = await s.api('POST', `/connections/${id}/send`, { chatId: team, text: 'Hi @15550101 and @15550102', mentions: [ALICE, BOB_JID], skipPresence: true });
    expect(text.status, JSON.stringify(text.body)).toBe(201);
    expect(text.body).toMatchObject({ chatId: team, fromMe: true, senderJid: PHONE_JID, mentions: [ALICE_JID, BOB_JID] });
    for (const phone of [ALICE, BOB]) {
      const got = await atPhone(phone, keyIdOf(text.body.id));
      expect(got).toMatchObject({ groupId: team, text: 'Hi @15550101 and @15550102' });
      expect(got.mentions?.map((m) => m.replace(/^\+?/, '+'))).toEqual([ALICE, BOB]);
    }
    const png = pngBytes();
    const image = await s.api('POST', `/connections/${id}/send-image`, {
      chatId: team,
      base64: png.toString('base64'),
      caption: 'the chart',
      skipPresence: true,
    });
    expect(image.status, JSON.stringify(image.body)).toBe(201);
    for (const phone of [ALICE, BOB]) {
      const got = await atPhone(phone, keyIdOf(image.body.id));
      expect(got.groupId).toBe(team);
      expect(got.media?.caption).toBe('the chart');
      expect(Buffer.from(got.media!.base64!, 'base64').equals(png)).toBe(true);
    }
  });

  it('every other send endpoint works on a group chatId; captions carry mentions', async () => {
    const mp4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(6000, 3)]);
    const ogg = Buffer.concat([Buffer.from('OggS\0\x02', 'latin1'), Buffer.alloc(22), Buffer.from('OpusHead'), Buffer.alloc(4000, 5)]);
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n% group\n'), Buffer.alloc(3000, 7), Buffer.from('\n%%EOF\n')]);
    const png = pngBytes();
    const base = { chatId: team, skipPresence: true };
    const sends: Array<[route: string, body: Record<string, unknown>, check: (m: PhoneMessage) => void]> = [
      ['send-video', { ...base, base64: mp4.toString('base64'), caption: 'clip for @15550102', mentions: [BOB] }, (m) => {
        expect(m).toMatchObject({ type: 'video', text: 'clip for @15550102' });
        expect(m.mentions?.map((x) => x.replace(/^\+?/, '+'))).toEqual([BOB]);
      }],
      ['send-document', { ...base, base64: pdf.toString('base64'), filename: 'plan.pdf', caption: 'plan @15550101', mentions: [ALICE_JID] }, (m) => {
        expect(m).toMatchObject({ type: 'document', text: 'plan @15550101' });
        expect(m.mentions?.map((x) => x.replace(/^\+?/, '+'))).toEqual([ALICE]);
        expect(Buffer.from(m.media!.base64!, 'base64').equals(pdf)).toBe(true);
      }],
      ['send-audio', { ...base, base64: ogg.toString('base64'), ptt: true }, (m) => expect(m.type).toBe('audio')],
      ['send-location', { ...base, latitude: 52.37, longitude: 4.89, name: 'Office' }, (m) => expect(m.type).toBe('location')],
      ['send-contact', { ...base, name: 'Carol', phoneNumber: CAROL }, (m) => expect(m.type).toBe('contact')],
      ['send-sticker', { ...base, base64: png.toString('base64') }, (m) => expect(m.type).toBe('sticker')],
      ['send-poll', { ...base, name: 'Pizza or pasta?', options: ['Pizza', 'Pasta'] }, (m) => expect(m.id).toBeTruthy()],
    ];
    for (const [route, body, check] of sends) {
      const res = await s.api('POST', `/connections/${id}/${route}`, body);
      expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBe(201);
      expect(res.body).toMatchObject({ chatId: team, fromMe: true, senderJid: PHONE_JID });
      for (const phone of [ALICE, BOB]) check(await atPhone(phone, keyIdOf(res.body.id)));
    }
    // a forward from a 1:1 chat into the group
    const oneToOne = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'worth sharing', skipPresence: true });
    expect(oneToOne.status).toBe(201);
    const fwd = await s.api('POST', `/connections/${id}/forward`, { chatId: team, messageId: oneToOne.body.id, fromChatId: ALICE_JID });
    expect(fwd.status, JSON.stringify(fwd.body)).toBe(201);
    expect(fwd.body).toMatchObject({ chatId: team, isForwarded: true, text: 'worth sharing' });
    expect(await atPhone(BOB, keyIdOf(fwd.body.id))).toMatchObject({ groupId: team, text: 'worth sharing', forwarded: true });
  });

  it('replies, reacts, edits and revokes inside the group both ways', async () => {
    // ours → Alice replies to it and reacts to it
    const ours = await s.api('POST', `/connections/${id}/send`, { chatId: team, text: 'Ship it today?', skipPresence: true });
    expect(ours.status).toBe(201);
    const reply = await groupSend(team, { from: ALICE, text: 'Yes!', replyTo: keyIdOf(ours.body.id) });
    expect((await stored(team, reply)).quotedMessageId).toBe(ours.body.id);
    await groupSend(team, { from: ALICE, reaction: { messageId: keyIdOf(ours.body.id), emoji: '🎉' } });
    await waitFor('Alice’s reaction stored', async () => {
      const m = await stored(team, keyIdOf(ours.body.id), true);
      return m.reactions.some((r: Json) => r.senderJid === ALICE_JID && r.emoji === '🎉') ? true : undefined;
    });

    // we reply to Alice's, react to it, edit ours
    const answer = await s.api('POST', `/connections/${id}/send`, { chatId: team, text: 'Great', replyTo: `false_${team}_${reply}`, skipPresence: true });
    expect(answer.status).toBe(201);
    expect((await atPhone(BOB, keyIdOf(answer.body.id))).replyTo).toBe(reply);
    const react = await s.api('POST', `/connections/${id}/react`, { chatId: team, messageId: `false_${team}_${reply}`, emoji: '👍' });
    expect(react.status, JSON.stringify(react.body)).toBe(201);
    await waitFor('our reaction at Bob', async () =>
      (await atPhone(BOB, reply)).reactions.some((r) => r.emoji === '👍' && r.from.includes('15550100')) ? true : undefined,
    );
    const edit = await s.api('PUT', `/connections/${id}/messages/${enc(ours.body.id)}`, { chatId: team, text: 'Ship it tomorrow?' });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
    await waitFor('our edit at Bob', async () =>
      (await atPhone(BOB, keyIdOf(ours.body.id))).edits.some((e) => e.text === 'Ship it tomorrow?') ? true : undefined,
    );

    // Alice edits and revokes her own messages
    await groupSend(team, { from: ALICE, edit: { messageId: reply, text: 'Yes, definitely!' } });
    await waitFor('Alice’s edit stored', async () => ((await stored(team, reply)).text === 'Yes, definitely!' ? true : undefined));
    const oops = await groupSend(team, { from: ALICE, text: 'wrong group' });
    await stored(team, oops);
    await groupSend(team, { from: ALICE, revoke: { messageId: oops } });
    await waitFor('Alice’s revoke stored', async () => ((await stored(team, oops)).kind === 'revoked' ? true : undefined));

    // read receipts and typing work on a group chat
    expect((await s.api('POST', `/connections/${id}/typing`, { chatId: team })).status).toBe(200);
    expect((await s.api('POST', `/connections/${id}/mark-read`, { chatId: team })).status).toBe(200);
    const chats = (await s.api('GET', `/connections/${id}/chats?limit=500`)).body as Json[];
    expect(chats.find((c) => c.id === team).unread).toBe(0);
    await waitFor('our read receipt at Alice', async () => {
      const receipts = (await s.sandbox('GET', `/accounts/${enc(ALICE)}/receipts`)).body as Json[];
      return receipts.some((r) => r.type === 'read' && r.messageIds.includes(reply)) ? true : undefined;
    });

    // the account's own phone writes and revokes: fromMe on the service side
    const own = await groupSend(team, { from: PHONE, text: 'from my phone' });
    expect(await stored(team, own, true)).toMatchObject({ fromMe: true, senderJid: PHONE_JID });
    await groupSend(team, { from: PHONE, revoke: { messageId: own } });
    await waitFor('own revoke stored', async () => ((await stored(team, own, true)).kind === 'revoked' ? true : undefined));
  });

  it('a poll sent to the group with send-poll is voted on by two members: counts, voters, two poll.vote events', async () => {
    const sent = await s.api('POST', `/connections/${id}/send-poll`, {
      chatId: team,
      name: 'Release on Friday?',
      options: ['Yes', 'No', 'Later'],
      skipPresence: true,
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(sent.body).toMatchObject({ chatId: team, fromMe: true, kind: 'poll', poll: { name: 'Release on Friday?', selectableCount: 1 } });
    const pollKey = keyIdOf(sent.body.id);
    for (const phone of [ALICE, BOB]) expect((await atPhone(phone, pollKey)).groupId).toBe(team);
    const chatBefore = ((await s.api('GET', `/connections/${id}/chats?limit=500`)).body as Json[]).find((c) => c.id === team);
    const from = s.frames.length;

    for (const [phone, options] of [[ALICE, ['Yes']], [BOB, ['Later']]] as const) {
      const res = await s.sandbox('POST', `/accounts/${enc(phone)}/poll-votes`, { to: team, pollId: pollKey, options });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const aliceVote = await frameOf('poll.vote', (p) => p.id === sent.body.id && p.voter === ALICE_JID);
    const bobVote = await frameOf('poll.vote', (p) => p.id === sent.body.id && p.voter === BOB_JID);
    expect(aliceVote.payload).toMatchObject({ chatId: team, selectedOptions: ['Yes'] });
    expect(bobVote.payload).toMatchObject({ chatId: team, selectedOptions: ['Later'] });
    expect(typeof aliceVote.payload.timestamp).toBe('number');
    expect(s.frames.slice(from).filter((f) => f.event === 'poll.vote' && f.payload.id === sent.body.id)).toHaveLength(2);

    const poll = await waitFor('both votes on the poll', async () => {
      const m = await stored(team, pollKey, true);
      return m.poll.options.reduce((n: number, o: Json) => n + o.votes, 0) === 2 ? m : undefined;
    });
    expect(poll.poll.options).toEqual([
      { name: 'Yes', votes: 1, voters: [ALICE_JID] },
      { name: 'No', votes: 0, voters: [] },
      { name: 'Later', votes: 1, voters: [BOB_JID] },
    ]);
    // votes are not chat messages: no message event, the group's preview and unread unchanged
    expect(s.frames.slice(from).some((f) => (f.event === 'message' || f.event === 'message.sent') && f.payload.chatId === team)).toBe(false);
    const chatAfter = ((await s.api('GET', `/connections/${id}/chats?limit=500`)).body as Json[]).find((c) => c.id === team);
    expect(chatAfter.lastMessage).toEqual(chatBefore.lastMessage);
    expect(chatAfter.unread).toBe(chatBefore.unread);
  });

  it('follows members a contact adds (cache, GET, event) so a send reaches the new member; a rename renames the chat', async () => {
    const club = await createContactGroup("Alice's Club", [PHONE, BOB]);
    await chatNamed(club, "Alice's Club");
    // a first send caches the metadata (and distributes the sender key to Alice and Bob)
    const first = await s.api('POST', `/connections/${id}/send`, { chatId: club, text: 'hello club', skipPresence: true });
    expect(first.status).toBe(201);
    await atPhone(BOB, keyIdOf(first.body.id));

    const added = await s.sandbox('POST', `/groups/${enc(club)}/participants`, { by: ALICE, action: 'add', participants: [CAROL] });
    expect(added.status).toBe(200);
    const event = await frameOf('group.participants', (p) => p.groupId === club && p.action === 'add');
    expect(event.payload).toMatchObject({ participants: [CAROL_JID], by: ALICE_JID });
    const info = await s.api('GET', `/connections/${id}/groups/${enc(club)}`);
    expect(info.body.participants.map((p: Json) => p.jid)).toContain(CAROL_JID);
    const second = await s.api('POST', `/connections/${id}/send`, { chatId: club, text: 'welcome Carol', skipPresence: true });
    expect(second.status).toBe(201);
    expect((await atPhone(CAROL, keyIdOf(second.body.id))).text).toBe('welcome Carol');

    const removed = await s.sandbox('POST', `/groups/${enc(club)}/participants`, { by: ALICE, action: 'remove', participants: [BOB] });
    expect(removed.status).toBe(200);
    await frameOf('group.participants', (p) => p.groupId === club && p.action === 'remove');
    expect((await s.api('GET', `/connections/${id}/groups/${enc(club)}`)).body.participants.map((p: Json) => p.jid)).not.toContain(BOB_JID);

    const renamed = await s.sandbox('PATCH', `/groups/${enc(club)}`, { by: ALICE, subject: 'The Club', description: 'Members only' });
    expect(renamed.status).toBe(200);
    const update = await frameOf('group.update', (p) => p.groupId === club && p.subject === 'The Club');
    expect(update.payload.by).toBe(ALICE_JID);
    await frameOf('group.update', (p) => p.groupId === club && p.description === 'Members only');
    await chatNamed(club, 'The Club');
    expect((await s.api('GET', `/connections/${id}/groups/${enc(club)}`)).body).toMatchObject({ subject: 'The Club', description: 'Members only' });

    // we are a plain member here: admin actions are refused with 403
    const notAdmin = await s.api('POST', `/connections/${id}/groups/${enc(club)}/participants`, { action: 'add', participants: [DAVE] });
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.message).toBe('Not a group admin');
    expect((await sandboxGroup(club)).participants.map((p: Json) => p.phoneNumber)).not.toContain(DAVE);
    const invite = await s.api('GET', `/connections/${id}/groups/${enc(club)}/invite-code`);
    expect(invite.status).toBe(403);
    expect(invite.body.message).toBe('Not a group admin');
  });

  it('creates a group from the API that the contacts see, manages it, and leaves it', async () => {
    const created = await s.api('POST', `/connections/${id}/groups`, { subject: 'API Group', participants: [ALICE, `${BOB.slice(1)}@s.whatsapp.net`] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const gid = created.body.id as string;
    expect(created.body).toMatchObject({ subject: 'API Group', owner: PHONE_JID });
    expect(created.body.participants).toContainEqual(expect.objectContaining({ jid: PHONE_JID, isSuperAdmin: true }));
    const seen = await sandboxGroup(gid);
    expect(seen.subject).toBe('API Group');
    expect(seen.participants.map((p: Json) => p.phoneNumber).sort()).toEqual([PHONE, ALICE, BOB].sort());
    const aliceGroups = (await s.sandbox('GET', `/groups?member=${enc(ALICE)}`)).body as Json[];
    expect(aliceGroups.map((g) => g.id)).toContain(gid);
    await chatNamed(gid, 'API Group');

    const sent = await s.api('POST', `/connections/${id}/send`, { chatId: gid, text: 'first!', skipPresence: true });
    expect(sent.status).toBe(201);
    expect((await atPhone(ALICE, keyIdOf(sent.body.id))).groupId).toBe(gid);

    const patched = await s.api('PATCH', `/connections/${id}/groups/${enc(gid)}`, { subject: 'API Group 2', description: 'made by the API' });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ subject: 'API Group 2', description: 'made by the API' });
    expect((await sandboxGroup(gid)).subject).toBe('API Group 2');
    // WhatsApp tells the account's own devices too: the event names the account as the author
    expect((await frameOf('group.update', (p) => p.groupId === gid && p.subject === 'API Group 2')).payload.by).toBe(PHONE_JID);
    await chatNamed(gid, 'API Group 2');

    const add = await s.api('POST', `/connections/${id}/groups/${enc(gid)}/participants`, { action: 'add', participants: [CAROL, ALICE] });
    expect(add.status, JSON.stringify(add.body)).toBe(200);
    expect(add.body).toEqual(
      expect.arrayContaining([
        { jid: CAROL_JID, phoneNumber: CAROL, status: 200 },
        { jid: ALICE_JID, phoneNumber: ALICE, status: 409 },
      ]),
    );
    const promote = await s.api('POST', `/connections/${id}/groups/${enc(gid)}/participants`, { action: 'promote', participants: [CAROL] });
    expect(promote.body).toEqual([{ jid: CAROL_JID, phoneNumber: CAROL, status: 200 }]);
    const carol = (await s.api('GET', `/connections/${id}/groups/${enc(gid)}`)).body.participants.find((p: Json) => p.jid === CAROL_JID);
    expect(carol).toMatchObject({ isAdmin: true, isSuperAdmin: false });
    expect((await sandboxGroup(gid)).participants.find((p: Json) => p.phoneNumber === CAROL).isAdmin).toBe(true);

    const invite = await s.api('GET', `/connections/${id}/groups/${enc(gid)}/invite-code`);
    expect(invite.status).toBe(200);
    expect(invite.body.code).toBe((await sandboxGroup(gid)).inviteCode);
    expect(invite.body.url).toBe(`https://chat.whatsapp.com/${invite.body.code}`);

    const left = await s.api('POST', `/connections/${id}/groups/${enc(gid)}/leave`);
    expect(left.status, JSON.stringify(left.body)).toBe(200);
    expect((await sandboxGroup(gid)).participants.map((p: Json) => p.phoneNumber)).not.toContain(PHONE);
    expect((await s.api('GET', `/connections/${id}/groups/${enc(gid)}`)).status).toBe(404);
    const after = await s.api('POST', `/connections/${id}/send`, { chatId: gid, text: 'still here?', skipPresence: true });
    expect(after.status).toBe(404);
    expect(after.body.message).toBe('Chat not found');
  });

  it('maps the participants of a LID-addressed group to phone numbers', async () => {
    const crew = await createContactGroup('LID Crew', [PHONE, CAROL], 'lid');
    const info = (await s.api('GET', `/connections/${id}/groups/${enc(crew)}`)).body;
    expect(info.addressingMode).toBe('lid');
    const carol = info.participants.find((p: Json) => p.phoneNumber === CAROL);
    expect(carol).toMatchObject({ jid: CAROL_JID });
    expect(carol.lid).toMatch(/@lid$/);

    const keyId = await groupSend(crew, { from: CAROL, text: 'lid hello', mentions: [ALICE] });
    expect(await stored(crew, keyId)).toMatchObject({ senderJid: CAROL_JID, senderPushName: 'Carol Sandbox', mentions: [ALICE_JID] });
    const sent = await s.api('POST', `/connections/${id}/send`, { chatId: crew, text: 'lid reply @15550103', mentions: [CAROL], skipPresence: true });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    for (const phone of [ALICE, CAROL]) expect((await atPhone(phone, keyIdOf(sent.body.id))).text).toBe('lid reply @15550103');
    expect((await atPhone(CAROL, keyIdOf(sent.body.id))).mentions?.map((m) => m.replace(/^\+?/, '+'))).toEqual([CAROL]);
  });

  it('in a LID-addressed group: replies, reactions, edits, revokes and an image both ways, an album from a member', async () => {
    const crew = await createContactGroup('LID Crew 2', [PHONE, BOB, CAROL], 'lid');
    // Carol (named by LID with participant_pn) writes; we reply and react; she replies, reacts, edits and revokes
    const hers = await groupSend(crew, { from: CAROL, text: 'status update?' });
    expect(await stored(crew, hers)).toMatchObject({ senderJid: CAROL_JID, senderPushName: 'Carol Sandbox' });
    const ours = await s.api('POST', `/connections/${id}/send`, { chatId: crew, text: 'all green', replyTo: `false_${crew}_${hers}`, skipPresence: true });
    expect(ours.status, JSON.stringify(ours.body)).toBe(201);
    expect((await atPhone(CAROL, keyIdOf(ours.body.id))).replyTo).toBe(hers);
    expect((await s.api('POST', `/connections/${id}/react`, { chatId: crew, messageId: `false_${crew}_${hers}`, emoji: '✅' })).status).toBe(201);
    await waitFor('our reaction at Bob', async () =>
      (await atPhone(BOB, hers)).reactions.some((r) => r.emoji === '✅' && r.from.includes('15550100')) ? true : undefined,
    );
    const edit = await s.api('PUT', `/connections/${id}/messages/${enc(ours.body.id)}`, { chatId: crew, text: 'all green, shipping' });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
    await waitFor('our edit at Bob', async () =>
      (await atPhone(BOB, keyIdOf(ours.body.id))).edits.some((e) => e.text === 'all green, shipping') ? true : undefined,
    );
    const png = pngBytes();
    const image = await s.api('POST', `/connections/${id}/send-image`, { chatId: crew, base64: png.toString('base64'), caption: 'lid chart', skipPresence: true });
    expect(image.status, JSON.stringify(image.body)).toBe(201);
    for (const phone of [BOB, CAROL]) expect(Buffer.from((await atPhone(phone, keyIdOf(image.body.id))).media!.base64!, 'base64').equals(png)).toBe(true);
    const revoke = await s.api('DELETE', `/connections/${id}/messages/${enc(image.body.id)}?chatId=${enc(crew)}`);
    expect(revoke.status, JSON.stringify(revoke.body)).toBe(200);
    await waitFor('our revoke at Carol', async () => ((await atPhone(CAROL, keyIdOf(image.body.id))).revoked ? true : undefined));

    const reply = await groupSend(crew, { from: CAROL, text: 'great', replyTo: keyIdOf(ours.body.id) });
    expect(await stored(crew, reply)).toMatchObject({ senderJid: CAROL_JID, quotedMessageId: ours.body.id });
    await groupSend(crew, { from: CAROL, reaction: { messageId: keyIdOf(ours.body.id), emoji: '🚀' } });
    await waitFor('Carol’s reaction stored', async () =>
      (await stored(crew, keyIdOf(ours.body.id), true)).reactions.some((r: Json) => r.senderJid === CAROL_JID && r.emoji === '🚀') ? true : undefined,
    );
    await groupSend(crew, { from: CAROL, edit: { messageId: reply, text: 'great, thanks' } });
    await waitFor('Carol’s edit stored', async () => ((await stored(crew, reply)).text === 'great, thanks' ? true : undefined));
    await groupSend(crew, { from: CAROL, revoke: { messageId: hers } });
    await waitFor('Carol’s revoke stored', async () => ((await stored(crew, hers)).kind === 'revoked' ? true : undefined));

    // an album from Bob: the album message and its items, each naming the album
    const album = await s.sandbox('POST', `/groups/${enc(crew)}/messages`, {
      from: BOB,
      album: [{ image: { base64: png.toString('base64'), mimetype: 'image/png' } }, { image: { base64: png.toString('base64'), mimetype: 'image/png', caption: 'two' } }],
    });
    expect(album.status, JSON.stringify(album.body)).toBe(201);
    const parent = await stored(crew, album.body.id);
    expect(parent).toMatchObject({ kind: 'album', type: 'image', senderJid: BOB_JID, album: { expectedImages: 2, expectedVideos: 0 } });
    for (const key of album.body.itemIds as string[]) {
      expect(await stored(crew, key)).toMatchObject({ kind: 'image', senderJid: BOB_JID, albumId: parent.id });
    }

    // Alice adds Dave: the notification names him by LID with his phone number; the event, the cache and the next
    // send know him by number
    expect((await s.sandbox('POST', `/groups/${enc(crew)}/participants`, { by: ALICE, action: 'add', participants: [DAVE] })).status).toBe(200);
    const added = await frameOf('group.participants', (p) => p.groupId === crew && p.action === 'add');
    expect(added.payload).toMatchObject({ participants: [DAVE_JID], by: ALICE_JID });
    const dave = (await s.api('GET', `/connections/${id}/groups/${enc(crew)}`)).body.participants.find((p: Json) => p.jid === DAVE_JID);
    expect(dave).toMatchObject({ phoneNumber: DAVE, isAdmin: false });
    expect(dave.lid).toMatch(/@lid$/);
    const welcome = await s.api('POST', `/connections/${id}/send`, { chatId: crew, text: 'welcome Dave', skipPresence: true });
    expect(welcome.status).toBe(201);
    expect((await atPhone(DAVE, keyIdOf(welcome.body.id))).text).toBe('welcome Dave');
  });

  it('pages the group list with limit and offset, by subject, without gaps or repeats', async () => {
    // Subjects that sort before and between the others, created out of order.
    for (const subject of ['Paging C', 'Paging A', 'Paging B']) await createContactGroup(subject, [PHONE, BOB]);
    const all = await s.api('GET', `/connections/${id}/groups?limit=500`);
    expect(all.status).toBe(200);
    const list = all.body as Json[];
    expect(list.length).toBeGreaterThanOrEqual(4);
    const subjects = list.map((g) => g.subject as string);
    expect(subjects).toEqual([...subjects].sort((a, b) => a.localeCompare(b)));
    expect(subjects.filter((x) => x.startsWith('Paging '))).toEqual(['Paging A', 'Paging B', 'Paging C']);

    const pages: Json[][] = [];
    for (let offset = 0; ; offset += 2) {
      const page = await s.api('GET', `/connections/${id}/groups?limit=2&offset=${offset}`);
      expect(page.status).toBe(200);
      pages.push(page.body as Json[]);
      if ((page.body as Json[]).length < 2) break;
    }
    expect(pages.slice(0, -1).every((p) => p.length === 2)).toBe(true);
    expect(pages.flat().map((g) => g.id)).toEqual(list.map((g) => g.id));
    // the second group alone, and nothing past the end
    expect(((await s.api('GET', `/connections/${id}/groups?limit=1&offset=1`)).body as Json[]).map((g) => g.id)).toEqual([list[1].id]);
    expect((await s.api('GET', `/connections/${id}/groups?offset=${list.length}`)).body).toEqual([]);
    // the default page is the first 50
    expect(((await s.api('GET', `/connections/${id}/groups`)).body as Json[]).map((g) => g.id)).toEqual(list.slice(0, 50).map((g) => g.id));
    for (const bad of ['limit=0', 'limit=501', 'offset=-1', 'limit=x']) {
      expect((await s.api('GET', `/connections/${id}/groups?${bad}`)).status, bad).toBe(400);
    }
  });

  it('every event of the run, in the log and on the WebSocket, matches its documented payload schema', async () => {
    // a contact typing in the group and in the 1:1 chat, so presence updates are among them
    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/chatstate`, { to: PHONE, state: 'composing' })).status).toBe(200);
    await frameOf('presence.update', (p) => p.presence === 'composing');
    const logged = await loggedEvents((route) => s.api('GET', route));
    const types = new Set(logged.map((e) => e.event));
    for (const t of ['session.status', 'message', 'message.sent', 'message.ack', 'message.reaction', 'message.edited', 'message.revoked',
      'poll.vote', 'group.update', 'group.participants', 'presence.update']) {
      expect(types, t).toContain(t);
    }
    expect(eventSchemaErrors(logged)).toEqual([]);
    expect(s.frames.length).toBeGreaterThan(50);
    expect(eventSchemaErrors(s.frames)).toEqual([]);
  });

  it('answers 404 for unknown groups and 400 for malformed ids and participants', async () => {
    const unknown = '120363999999999999@g.us';
    const send = await s.api('POST', `/connections/${id}/send`, { chatId: unknown, text: 'anyone?', skipPresence: true });
    expect(send.status).toBe(404);
    expect(send.body.message).toBe('Chat not found');
    const get = await s.api('GET', `/connections/${id}/groups/${enc(unknown)}`);
    expect(get.status).toBe(404);
    expect(get.body.message).toBe('Group not found');
    expect((await s.api('GET', `/connections/${id}/groups/not-a-group`)).status).toBe(400);
    const bad = await s.api('POST', `/connections/${id}/groups/${enc(team)}/participants`, { action: 'add', participants: ['nobody'] });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('body/participants/0 is not an international phone number or a user JID');
    const badMention = await s.api('POST', `/connections/${id}/send`, { chatId: team, text: 'x', mentions: ['@@'], skipPresence: true });
    expect(badMention.status).toBe(400);
  });
});
