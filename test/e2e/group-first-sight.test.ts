/**
 * A group the account is in but whose creation notification the service never saw (issue 25 §6), through real
 * Baileys and the sandbox: the sandbox creates it without the `<create>` notification (`notify: false`), so the
 * service first learns of it from a member's message. The message is stored and announced first; then the service
 * asks WhatsApp for the group's metadata once (the sandbox counts the `w:g2` metadata queries it answered), the chat
 * gets its real subject, `group.update` fires with subject and description, and the group's members are served from
 * the cache. More messages of the group ask nothing more. A group whose notifications did arrive (created, then
 * left) is never asked for because of its messages or the stub messages Baileys makes of those notifications.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type Frame, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const BOB = '+15550102';

describe('a group first seen through a message', { timeout: 90_000 }, () => {
  let s: SandboxService;
  let id: string;

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
    // A fresh link lists the account's groups once (its cache is empty): wait until the server has answered, so the
    // group made below is not in that answer.
    await waitFor('the groups listed at the connect', async () =>
      (((await s.sandbox('GET', `/accounts/${enc(PHONE)}/group-iqs`)).body.byKind.participating as
        number | undefined) ?? 0) >= 1
        ? true
        : undefined,
    );
  });
  afterAll(() => s?.close());

  const metadataQueries = async (groupId: string): Promise<number> =>
    ((await s.sandbox('GET', `/groups/${enc(groupId)}/metadata-queries`)).body.byPhone[PHONE] as number | undefined) ??
    0;
  const messageFrame = (groupId: string, body: string) =>
    s.frame(
      `message "${body}"`,
      (f) => f.event === 'message' && f.payload.chatId === groupId && f.payload.body === body,
    );
  const updates = (groupId: string) =>
    s.frames.filter((f) => f.event === 'group.update' && f.payload.groupId === groupId);

  it('gets its real subject from one metadata query, and group.update fires', async () => {
    expect(
      (await s.sandbox('POST', '/groups', { creator: ALICE, subject: 'x', participants: [PHONE], notify: 'no' }))
        .status,
    ).toBe(400);
    const created = await s.sandbox('POST', '/groups', {
      creator: ALICE,
      subject: 'Quiet corner',
      participants: [PHONE, BOB],
      notify: false,
    });
    expect(created.status).toBe(201);
    const groupId = created.body.id as string;
    expect(await metadataQueries(groupId)).toBe(0);

    // a burst of messages: one query for the group, not one per message
    const texts = ['first in the quiet corner', 'second', 'third'];
    for (const text of texts)
      expect((await s.sandbox('POST', `/groups/${enc(groupId)}/messages`, { from: ALICE, text })).status).toBe(201);
    const frames: Frame[] = [];
    for (const text of texts) frames.push(await messageFrame(groupId, text));
    expect(frames[0]!.payload).toMatchObject({ senderJid: '15550101@s.whatsapp.net', fromMe: false });

    const update = await s.frame('group.update', (f) => f.event === 'group.update' && f.payload.groupId === groupId);
    expect(update.payload).toEqual({ groupId, subject: 'Quiet corner', description: null, by: null });
    // the message was stored and announced before the metadata arrived: nothing waited for the query
    expect(update.seq).toBeGreaterThan(frames[0]!.seq);

    const chat = await waitFor('the chat named', async () => {
      const list = (await s.api('GET', `/connections/${id}/chats`)).body as Array<{
        id: string;
        name: string | null;
        isGroup: boolean;
      }>;
      return list.find((c) => c.id === groupId && c.name === 'Quiet corner');
    });
    expect(chat.isGroup).toBe(true);
    const info = await s.api('GET', `/connections/${id}/groups/${enc(groupId)}`);
    expect(info.status).toBe(200);
    expect((info.body.participants as Array<{ phoneNumber: string }>).map((p) => p.phoneNumber).sort()).toEqual(
      [PHONE, ALICE, BOB].sort(),
    );
    expect(await metadataQueries(groupId)).toBe(1);

    // later messages of the group ask nothing and announce nothing more; a send needs no query either
    expect((await s.sandbox('POST', `/groups/${enc(groupId)}/messages`, { from: BOB, text: 'fourth' })).status).toBe(
      201,
    );
    await messageFrame(groupId, 'fourth');
    expect(
      (await s.api('POST', `/connections/${id}/send`, { chatId: groupId, text: 'hello all', skipPresence: true }))
        .status,
    ).toBe(201);
    expect(await metadataQueries(groupId)).toBe(1);
    expect(updates(groupId)).toHaveLength(1);
  });
  it('a group whose notifications arrived is neither asked for nor announced by its messages', async () => {
    const loud = (await s.sandbox('POST', '/groups', { creator: ALICE, subject: 'Loud room', participants: [PHONE] }))
      .body.id as string;
    await waitFor('the chat named from the notification', async () => {
      const list = (await s.api('GET', `/connections/${id}/chats`)).body as Array<{ id: string; name: string | null }>;
      return list.find((c) => c.id === loud && c.name === 'Loud room');
    });
    expect(
      (await s.sandbox('POST', `/groups/${enc(loud)}/messages`, { from: ALICE, text: 'in the loud room' })).status,
    ).toBe(201);
    await messageFrame(loud, 'in the loud room');
    // leaving it: WhatsApp echoes the leave as a notification, which Baileys also hands over as a stub message of
    // a group no longer in the cache; that is no reason to ask
    expect((await s.api('POST', `/connections/${id}/groups/${enc(loud)}/leave`)).status).toBe(200);
    await s.frame(
      'the leave echoed',
      (f) => f.event === 'group.participants' && f.payload.groupId === loud && f.payload.action === 'remove',
    );
    // the queries run one at a time, first seen first: once a quiet group made after these is announced, the loud one
    // would have been asked for already
    const quiet = (
      await s.sandbox('POST', '/groups', {
        creator: ALICE,
        subject: 'Second quiet',
        participants: [PHONE],
        notify: false,
      })
    ).body.id as string;
    expect(
      (await s.sandbox('POST', `/groups/${enc(quiet)}/messages`, { from: ALICE, text: 'in the second quiet' })).status,
    ).toBe(201);
    await s.frame(
      'group.update of the second quiet group',
      (f) => f.event === 'group.update' && f.payload.groupId === quiet,
    );
    expect(await metadataQueries(loud)).toBe(0);
    expect(updates(loud)).toEqual([]);
  });
});
