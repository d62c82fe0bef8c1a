/**
 * A chat's preview (`GET /connections/:id/chats` → `lastMessage`) follows edits and revokes of the chat's last message
 * (issue 25 item 2) through real Baileys and the sandbox: by us (the edit and delete routes) and by a contact (the
 * sandbox phones), in a 1:1 chat and in a group; an edit or revoke of an older message leaves the preview alone; the
 * previews stay right across a service restart, and follow a message stored before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const BOB = '+15550102';
const BOB_JID = '15550102@s.whatsapp.net';

interface Preview {
  body: string;
  timestamp: number;
  fromMe: boolean;
  id: string | null;
  kind: string | null;
}

describe('the chat preview follows edits and revokes', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let restarted: SandboxService | undefined;
  let id: string;
  let team: string;
  /** The running service (the restarted one once restarted). */
  const svc = () => restarted ?? s;

  const preview = async (chatId: string): Promise<Preview> => {
    const chats = (await svc().api('GET', `/connections/${id}/chats?limit=500`)).body as Array<{ id: string; lastMessage: Preview }>;
    const chat = chats.find((c) => c.id === chatId);
    if (!chat) throw new Error(`chat ${chatId} not listed`);
    return chat.lastMessage;
  };
  const send = async (chatId: string, text: string): Promise<Json> => {
    const res = await svc().api('POST', `/connections/${id}/send`, { chatId, text, skipPresence: true });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  const edit = async (m: Json, text: string) => {
    const res = await svc().api('PUT', `/connections/${id}/messages/${enc(m.id)}`, { chatId: m.chatId, text });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };
  const revoke = async (m: Json) => {
    const res = await svc().api('DELETE', `/connections/${id}/messages/${enc(m.id)}?chatId=${enc(m.chatId)}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };
  /** Waits for the frame of `event` naming message `messageId` (the change is committed with it). */
  const applied = (event: string, messageId: string) =>
    svc().frame(`${event} ${messageId}`, (f) => f.event === event && f.connectionId === id && f.payload.id === messageId);
  /** A contact's message to the account (1:1), once stored: its Message id. */
  const fromContact = async (phone: string, text: string): Promise<string> => {
    const res = await svc().sandbox('POST', `/accounts/${enc(phone)}/messages`, { to: PHONE, text });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const messageId = `false_${phone.slice(1)}@s.whatsapp.net_${res.body.id as string}`;
    await applied('message', messageId);
    return messageId;
  };
  /** A member's message to the group, once stored: its Message id. */
  const fromMember = async (phone: string, body: Json): Promise<string> => {
    const res = await svc().sandbox('POST', `/groups/${enc(team)}/messages`, { from: phone, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return `false_${team}_${res.body.id as string}`;
  };
  const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

  beforeAll(async () => {
    s = await startSandboxService();
    const groups = (await s.sandbox('GET', `/groups?member=${enc(PHONE)}`)).body as Json[];
    team = groups.find((g) => g.subject === 'Sandbox Team').id;
    id = await s.pair(PHONE);
  }, 90_000);

  afterAll(async () => {
    if (restarted) await restarted.close();
    else await s?.close();
  });

  it('by us in a 1:1 chat: an edit of the last message shows its new text, its revoke no text and kind revoked', async () => {
    const first = await send(ALICE_JID, 'ours, first');
    const second = await send(ALICE_JID, 'ours, second');
    expect(await preview(ALICE_JID)).toEqual({ body: 'ours, second', timestamp: second.timestamp, fromMe: true, id: second.id, kind: 'text' });

    await edit(first, 'ours, first (edited)');
    await revoke(first);
    expect(await preview(ALICE_JID)).toEqual({ body: 'ours, second', timestamp: second.timestamp, fromMe: true, id: second.id, kind: 'text' });

    await edit(second, 'ours, second (edited)');
    expect(await preview(ALICE_JID)).toEqual({ body: 'ours, second (edited)', timestamp: second.timestamp, fromMe: true, id: second.id, kind: 'text' });
    await revoke(second);
    expect(await preview(ALICE_JID)).toEqual({ body: '', timestamp: second.timestamp, fromMe: true, id: second.id, kind: 'revoked' });
  });

  it('by a contact in a 1:1 chat: the same, older messages leaving it alone', async () => {
    const older = await fromContact(BOB, 'bob, first');
    const last = await fromContact(BOB, 'bob, second');
    const timestamp = (await preview(BOB_JID)).timestamp;
    expect(await preview(BOB_JID)).toEqual({ body: 'bob, second', timestamp, fromMe: false, id: last, kind: 'text' });

    expect((await s.sandbox('POST', `/accounts/${enc(BOB)}/edits`, { to: PHONE, messageId: keyIdOf(older), text: 'bob, first (edited)' })).status).toBe(201);
    await applied('message.edited', older);
    expect((await s.sandbox('POST', `/accounts/${enc(BOB)}/revokes`, { to: PHONE, messageId: keyIdOf(older) })).status).toBe(201);
    await applied('message.revoked', older);
    expect(await preview(BOB_JID)).toEqual({ body: 'bob, second', timestamp, fromMe: false, id: last, kind: 'text' });

    expect((await s.sandbox('POST', `/accounts/${enc(BOB)}/edits`, { to: PHONE, messageId: keyIdOf(last), text: 'bob, second (edited)' })).status).toBe(201);
    await applied('message.edited', last);
    expect(await preview(BOB_JID)).toEqual({ body: 'bob, second (edited)', timestamp, fromMe: false, id: last, kind: 'text' });
    expect((await s.sandbox('POST', `/accounts/${enc(BOB)}/revokes`, { to: PHONE, messageId: keyIdOf(last) })).status).toBe(201);
    await applied('message.revoked', last);
    expect(await preview(BOB_JID)).toEqual({ body: '', timestamp, fromMe: false, id: last, kind: 'revoked' });
  });

  it('by a member and by us in a group', async () => {
    const older = await fromMember(ALICE, { text: 'team, first' });
    await applied('message', older);
    const last = await fromMember(ALICE, { text: 'team, second' });
    await applied('message', last);
    const timestamp = (await preview(team)).timestamp;
    expect(await preview(team)).toEqual({ body: 'team, second', timestamp, fromMe: false, id: last, kind: 'text' });

    await fromMember(ALICE, { edit: { messageId: keyIdOf(older), text: 'team, first (edited)' } });
    await applied('message.edited', older);
    await fromMember(ALICE, { revoke: { messageId: keyIdOf(older) } });
    await applied('message.revoked', older);
    expect(await preview(team)).toEqual({ body: 'team, second', timestamp, fromMe: false, id: last, kind: 'text' });

    await fromMember(ALICE, { edit: { messageId: keyIdOf(last), text: 'team, second (edited)' } });
    await applied('message.edited', last);
    expect(await preview(team)).toEqual({ body: 'team, second (edited)', timestamp, fromMe: false, id: last, kind: 'text' });
    await fromMember(ALICE, { revoke: { messageId: keyIdOf(last) } });
    await applied('message.revoked', last);
    expect(await preview(team)).toEqual({ body: '', timestamp, fromMe: false, id: last, kind: 'revoked' });

    // ours: edited, then deleted for everyone
    const ours = await send(team, 'ours in the team');
    await edit(ours, 'ours in the team (edited)');
    expect(await preview(team)).toEqual({ body: 'ours in the team (edited)', timestamp: ours.timestamp, fromMe: true, id: ours.id, kind: 'text' });
    await revoke(ours);
    expect(await preview(team)).toEqual({ body: '', timestamp: ours.timestamp, fromMe: true, id: ours.id, kind: 'revoked' });
  });

  it('after a restart: the previews are as they were, and follow messages stored before it', async () => {
    const hers = await fromContact(ALICE, 'alice, before the restart');
    const ours = await send(team, 'ours, before the restart');
    const before = { alice: await preview(ALICE_JID), bob: await preview(BOB_JID), team: await preview(team) };
    expect(before.alice).toMatchObject({ body: 'alice, before the restart', id: hers });
    expect(before.bob).toMatchObject({ body: '', kind: 'revoked' });

    await s.service.close();
    restarted = await startSandboxService({ dataDir: s.dataDir });
    await waitFor('online after the restart', async () =>
      ((await restarted!.api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), { timeoutMs: 30_000 });
    expect({ alice: await preview(ALICE_JID), bob: await preview(BOB_JID), team: await preview(team) }).toEqual(before);

    expect((await restarted.sandbox('POST', `/accounts/${enc(ALICE)}/edits`, { to: PHONE, messageId: keyIdOf(hers), text: 'alice, edited after it' })).status).toBe(201);
    await applied('message.edited', hers);
    expect(await preview(ALICE_JID)).toEqual({ ...before.alice, body: 'alice, edited after it' });
    await revoke(ours);
    expect(await preview(team)).toEqual({ ...before.team, body: '', kind: 'revoked' });
  });
});
