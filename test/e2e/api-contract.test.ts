/**
 * Issue 25 item 5 (where the API differs from what clients expect), through the running service and the sandbox:
 * - `phoneNumber` is set the moment the status says linked: the first read of the connection after the
 *   `session.status` frame that announces `connected` (and every later one) has it, for a QR scan and for a phone
 *   code (interface-spec §2.1: null only until an account is linked);
 * - block, unblock and a contact's profile refuse a malformed or unresolvable user id with 400 (not a 502 from
 *   WhatsApp, not an invented profile), and change nothing.
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';

/** A linked status (the account is known from then on). */
const LINKED = new Set(['connected', 'online']);

/**
 * Watches the stream for `connectionId`: on each `session.status` frame that announces a linked status it reads the
 * connection at once (a read the frame happened before: frames leave after their commit). Resolves to those reads
 * once `online` was announced.
 */
function readsAtLinkedStatus(s: SandboxService, connectionId: string): Promise<Array<{ status: string; reason: unknown; connection: Json }>> {
  const ws = new WebSocket(`${s.apiUrl.replace(/^http/, 'ws')}/ws?token=${s.token}`);
  const reads: Array<Promise<{ status: string; reason: unknown; connection: Json }>> = [];
  return new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { event: string; connectionId: string; payload: { status: string; reason: unknown } };
      if (frame.event !== 'session.status' || frame.connectionId !== connectionId || !LINKED.has(frame.payload.status)) return;
      const { status, reason } = frame.payload;
      reads.push(s.api('GET', `/connections/${connectionId}`).then((res) => ({ status, reason, connection: res.body })));
      if (status === 'online') {
        ws.close();
        Promise.all(reads).then(resolve, reject);
      }
    });
  });
}

describe('issue 25 item 5: the linked account is known when the status says linked; user ids are checked', { timeout: 90_000 }, () => {
  let s: SandboxService;
  /** The connection linked to PHONE by the first test. */
  let linked: string;

  beforeAll(async () => {
    s = await startSandboxService();
  });
  afterAll(() => s?.close());

  const created = async () => {
    const res = await s.api('POST', '/connections', { name: 'link' });
    expect(res.status).toBe(201);
    expect(res.body.phoneNumber).toBeNull();
    return res.body.id as string;
  };
  const qrOf = (id: string) =>
    waitFor('a QR code', async () => {
      const res = await s.api('GET', `/connections/${id}/qr?format=text`);
      return res.status === 200 ? (res.body.value as string) : undefined;
    });

  it('by QR scan: phoneNumber is set in the first read after `connected`', async () => {
    const id = await created();
    const qr = await qrOf(id);
    expect((await s.api('GET', `/connections/${id}`)).body.phoneNumber).toBeNull();
    const reads = readsAtLinkedStatus(s, id);
    expect((await s.sandbox('POST', `/accounts/${enc(PHONE)}/scan`, { qr })).status).toBe(200);
    const seen = await reads;
    expect(seen[0]).toMatchObject({ status: 'connected', reason: 'paired' });
    for (const r of seen) expect(r.connection, `${r.status} (${String(r.reason)})`).toMatchObject({ status: r.status, phoneNumber: PHONE });
    linked = id;
  });

  /** Malformed (not digits, too short for a phone number) or unresolvable (a LID nobody here has) user ids. */
  const BAD_IDS = ['lid@lid', '1@lid', 'abc@s.whatsapp.net', '0@s.whatsapp.net', 'abc@c.us', '15550101:x@s.whatsapp.net'];

  it('block and unblock refuse a malformed or unresolvable user id with 400 and change nothing', async () => {
    const before = (await s.sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body;
    for (const jid of BAD_IDS) {
      for (const action of ['block', 'unblock']) {
        const res = await s.api('POST', `/connections/${linked}/contacts/${encodeURIComponent(jid)}/${action}`);
        expect(res.status, `${action} ${jid}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', message: expect.stringMatching(/^jid /) });
      }
    }
    expect((await s.sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body).toEqual(before);
  });

  it("a contact's profile refuses a malformed or unresolvable user id with 400 (no invented record)", async () => {
    for (const jid of BAD_IDS) {
      const res = await s.api('GET', `/connections/${linked}/contacts/${encodeURIComponent(jid)}/profile`);
      expect(res.status, `${jid}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', message: expect.stringMatching(/^jid /) });
    }
  });

  it("a known LID still names its user: Alice's LID answers Alice's profile, and blocks and unblocks Alice", async () => {
    const alice = (await s.sandbox('GET', `/accounts/${enc(ALICE)}`)).body as { jid: string; lid: string };
    const lid = encodeURIComponent(alice.lid);
    const profile = await s.api('GET', `/connections/${linked}/contacts/${lid}/profile`);
    expect(profile).toMatchObject({ status: 200, body: { jid: alice.jid, name: 'Alice Sandbox' } });
    expect((await s.api('POST', `/connections/${linked}/contacts/${lid}/block`)).body).toEqual({ jid: alice.jid, blocked: true });
    expect((await s.sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body).toEqual([ALICE]);
    expect((await s.api('POST', `/connections/${linked}/contacts/${lid}/unblock`)).body).toEqual({ jid: alice.jid, blocked: false });
    expect((await s.sandbox('GET', `/accounts/${enc(PHONE)}/blocklist`)).body).toEqual([]);
  });

  it('by phone code: phoneNumber is set in the first read after `connected`', async () => {
    const id = await created();
    await qrOf(id);
    const asked = await s.api('POST', `/connections/${id}/pairing-code`, { phoneNumber: ALICE });
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    // The code request reaches the sandbox's server a moment after the API answered (Baileys sends it without waiting).
    await waitFor('the code at the sandbox', async () => ((await s.sandbox('GET', '/')).body.linkCodes >= 1 ? true : undefined));
    const reads = readsAtLinkedStatus(s, id);
    const typed = await s.sandbox('POST', `/accounts/${enc(ALICE)}/link-code`, { code: asked.body.code });
    expect(typed.status, JSON.stringify(typed.body)).toBe(200);
    const seen = await reads;
    expect(seen[0]).toMatchObject({ status: 'connected', reason: 'paired' });
    for (const r of seen) expect(r.connection, `${r.status} (${String(r.reason)})`).toMatchObject({ status: r.status, phoneNumber: ALICE });
  });
});
