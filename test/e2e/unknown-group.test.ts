/**
 * A send to a group the server does not know (issue 20) through real Baileys and the sandbox: Baileys asks for the
 * group's metadata first (`w:g2` query), the server answers 404 `item-not-found`, and the API answers 404
 * `Chat not found` (it was a 502) with nothing stored; a group that exists, with the account as a member, takes
 * the same send (201), so the 404 is the server's answer and not a blanket one for groups.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';

describe('send to an unknown group', { timeout: 60_000 }, () => {
  let s: SandboxService;
  let id: string;

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
  });
  afterAll(() => s?.close());

  it.each([
    ['send', { text: 'hello?' }],
    ['send-location', { latitude: 1, longitude: 2 }],
  ])('%s → 404 Chat not found, nothing stored', async (route, body) => {
    const chatId = '120363999999999999@g.us';
    const res = await s.api('POST', `/connections/${id}/${route}`, { chatId, skipPresence: true, ...body });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Chat not found' });
    const stored = await s.api<{ messages: unknown[] }>('GET', `/connections/${id}/chats/${encodeURIComponent(chatId)}/messages`);
    expect(stored.body.messages ?? []).toEqual([]);
  });

  it('a group that exists with the account in it takes the same send', async () => {
    const group = await s.sandbox<{ id: string }>('POST', '/groups', {
      creator: ALICE,
      subject: 'Known group',
      participants: [PHONE],
    });
    expect(group.status).toBe(201);
    const res = await s.api('POST', `/connections/${id}/send`, { chatId: group.body.id, text: 'hello group', skipPresence: true });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ chatId: group.body.id, fromMe: true });
  });
});
