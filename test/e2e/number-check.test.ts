/**
 * `POST /connections/:id/contacts/check` (issue 14 item 3) through real Baileys and the sandbox: one usync query
 * answers which numbers are on WhatsApp with their JID and the LID the sandbox gave the account; answers are
 * reused for 24 h (the same `checkedAt`), JIDs and numbers in any common spelling are accepted, and malformed or
 * too many numbers are refused with 400 before anything is asked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const NOBODY = '+15559999';

interface Check {
  phoneNumber: string;
  exists: boolean;
  jid: string | null;
  lid: string | null;
  checkedAt: string;
}

describe('number check', { timeout: 60_000 }, () => {
  let s: SandboxService;
  let id: string;

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
  });
  afterAll(() => s?.close());

  it('tells who is on WhatsApp, with JID and LID, in the order asked', async () => {
    const alice = (await s.sandbox('GET', `/accounts/${enc(ALICE)}`)).body as { jid: string; lid: string };
    const res = await s.api<Check[]>('POST', `/connections/${id}/contacts/check`, { phoneNumbers: [NOBODY, ALICE] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { phoneNumber: NOBODY, exists: false, jid: null, lid: null, checkedAt: expect.any(String) },
      { phoneNumber: ALICE, exists: true, jid: alice.jid, lid: alice.lid, checkedAt: expect.any(String) },
    ]);
    expect(alice.lid).toMatch(/@lid$/);
  });

  it('accepts any spelling of a number or user JID, and answers from its 24-hour cache', async () => {
    const first = await s.api<Check[]>('POST', `/connections/${id}/contacts/check`, { phoneNumbers: [ALICE] });
    await new Promise((r) => setTimeout(r, 20));
    const again = await s.api<Check[]>('POST', `/connections/${id}/contacts/check`, {
      phoneNumbers: ['+1 555-0101', '15550101@c.us', '15550101@s.whatsapp.net'],
    });
    expect(again.status).toBe(200);
    expect(again.body.map((c) => c.phoneNumber)).toEqual([ALICE, ALICE, ALICE]);
    expect(new Set(again.body.map((c) => c.checkedAt))).toEqual(new Set([first.body[0]!.checkedAt]));
  });

  it.each([
    [{ phoneNumbers: [] }, 'body/phoneNumbers expected array length to be greater or equal to 1'],
    [{ phoneNumbers: Array.from({ length: 51 }, (_, i) => `+1555${String(i).padStart(4, '0')}`) }, 'body/phoneNumbers expected array length to be less or equal to 50'],
    [{ phoneNumbers: [ALICE, 'hello'] }, 'body/phoneNumbers/1 is not an international phone number or a user JID'],
    [{ phoneNumbers: ['123'] }, 'body/phoneNumbers/0 is not an international phone number or a user JID'],
    [{ phoneNumbers: ['abc@lid'] }, 'body/phoneNumbers/0 is not an international phone number or a user JID'],
  ])('refuses %j with 400', async (body, message) => {
    const res = await s.api<{ message: string }>('POST', `/connections/${id}/contacts/check`, body);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(message);
  });
});
