/**
 * Linking by phone code end to end (issue 14 item 1), with real parts only: the service in sandbox mode (real
 * Baileys rc14, SQLite, HTTP, WebSocket), `POST /connections/:id/pairing-code`, the code typed on the sandbox phone
 * through its admin API (`POST /accounts/:phone/link-code`: the real `link_code_companion_reg` exchange), the
 * connection going `connected` → `online` as after a QR scan, and a service restart that brings it back online with
 * no new code. The code outlives the socket it was announced on (a network drop while the user types it). Also: a wrong code is refused by the phone and changes nothing, a malformed number is 400, and a
 * connection that is not waiting to be linked is 409.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const CODE_SHAPE = /^[0-9A-Z]{4}-[0-9A-Z]{4}$/;

/** Another code of the same shape (each character moved one place in Baileys' alphabet). */
function otherCode(code: string): string {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTVWXYZ';
  return code.replace(/[^-]/g, (c) => alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]!);
}

describe('link a connection by phone code', () => {
  let s: SandboxService;
  let restarted: SandboxService | undefined;
  let id: string;
  let code: string;
  let deviceId: number;

  const statusOf = async (svc: SandboxService) => (await svc.api('GET', `/connections/${id}`)).body.status as string;

  beforeAll(async () => {
    s = await startSandboxService();
    const created = await s.api('POST', '/connections', { name: 'by code' });
    expect(created.status).toBe(201);
    id = created.body.id;
    await waitFor('scan_qr', async () => ((await statusOf(s)) === 'scan_qr' ? true : undefined));
  });

  afterAll(async () => {
    await restarted?.close();
    await s?.close();
  });

  it('refuses a malformed phone number with 400 and changes nothing', async () => {
    for (const phoneNumber of ['abc', '12345', '+1 555 0100 ext 1', '15550100@lid', '120363000000000001@g.us', ' ']) {
      const res = await s.api('POST', `/connections/${id}/pairing-code`, { phoneNumber });
      expect(res.status, phoneNumber).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: 'phoneNumber must be an international phone number (e.g. +15550100) or a user JID',
      });
    }
    expect((await s.api('POST', `/connections/${id}/pairing-code`, {})).body.message).toBe('body/phoneNumber is required');
    expect(await statusOf(s)).toBe('scan_qr');
    // Nothing was asked of WhatsApp: the phone has no device waiting for a code.
    expect((await s.sandbox('POST', `/accounts/${enc(PHONE)}/link-code`, { code: 'ABCD-EFGH' })).body.message).toMatch(/^No device is waiting/);
  });

  it('gives an 8-character code for the number, the same one when asked again in another spelling', async () => {
    const res = await s.api('POST', `/connections/${id}/pairing-code`, { phoneNumber: '+1 555 0100' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: expect.stringMatching(CODE_SHAPE) });
    code = res.body.code;
    const again = await s.api('POST', `/connections/${id}/pairing-code`, { phoneNumber: '15550100@s.whatsapp.net' });
    expect(again).toMatchObject({ status: 200, body: { code } });
    // The QR stays available: either way of linking works until one of them does.
    expect((await s.api('GET', `/connections/${id}/qr?format=text`)).status).toBe(200);
  });

  it('a wrong code typed on the phone is refused (400) and the connection keeps waiting', async () => {
    const wrong = await s.sandbox('POST', `/accounts/${enc(PHONE)}/link-code`, { code: otherCode(code) });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toMatch(/^Wrong code/);
    expect(await statusOf(s)).toBe('scan_qr');
    expect((await s.api('GET', `/connections/${id}`)).body.phoneNumber).toBeNull();
  });

  it('the code outlives its socket: after a network drop the new socket shows a new QR and announces the same code', async () => {
    const qrBefore = (await s.api('GET', `/connections/${id}/qr?format=text`)).body.value as string;
    expect((await s.sandbox('GET', '/')).body.linkCodes).toBe(1);
    expect((await s.sandbox('POST', '/faults/drop-unlinked')).body).toEqual({ dropped: 1 });
    await waitFor('a new QR', async () => {
      const res = await s.api('GET', `/connections/${id}/qr?format=text`);
      return res.status === 200 && res.body.value !== qrBefore ? true : undefined;
    });
    await waitFor('the code announced again', async () => ((await s.sandbox('GET', '/')).body.linkCodes === 1 ? true : undefined));
  });

  it('the right code links it: connected → online as after a scan, with the account and its history', async () => {
    const linked = await s.sandbox('POST', `/accounts/${enc(PHONE)}/link-code`, { code });
    expect(linked.status).toBe(200);
    deviceId = linked.body.deviceId;
    await waitFor('online', async () => ((await statusOf(s)) === 'online' ? true : undefined), { timeoutMs: 30_000 });
    const statuses = s.frames
      .filter((f) => f.event === 'session.status' && f.connectionId === id)
      .map((f) => `${f.payload.status as string}${f.payload.reason ? ` (${f.payload.reason as string})` : ''}`);
    const paired = statuses.indexOf('connected (paired)');
    expect(paired).toBeGreaterThan(statuses.indexOf('scan_qr'));
    expect(statuses.slice(paired)).toContain('online');
    expect(statuses.at(-1)).toBe('online');

    expect((await s.api('GET', `/connections/${id}`)).body.phoneNumber).toBe(PHONE);
    expect(await s.api('GET', `/connections/${id}/me`)).toMatchObject({ status: 200, body: { id: '15550100@s.whatsapp.net', pushName: 'Sandbox Phone' } });
    const chats = await s.api('GET', `/connections/${id}/chats`);
    expect(chats.body.map((c: { id: string }) => c.id)).toContain('15550101@s.whatsapp.net');
  });

  it('answers 409 once linked, and the used code is gone', async () => {
    const res = await s.api('POST', `/connections/${id}/pairing-code`, { phoneNumber: PHONE });
    expect(res).toMatchObject({ status: 409, body: { statusCode: 409, error: 'Conflict', message: 'Connection is already linked' } });
    expect((await s.sandbox('POST', `/accounts/${enc(PHONE)}/link-code`, { code })).status).toBe(400);
  });

  it('survives a service restart: online again with the same device, no new code', async () => {
    await s.service.close();
    restarted = await startSandboxService({ dataDir: s.dataDir });
    await waitFor('online after restart', async () => ((await statusOf(restarted!)) === 'online' ? true : undefined), { timeoutMs: 30_000 });
    const statuses = restarted.frames.filter((f) => f.event === 'session.status' && f.connectionId === id).map((f) => f.payload.status);
    expect(statuses).not.toContain('scan_qr');
    expect((await restarted.api('GET', `/connections/${id}/me`)).body.id).toBe('15550100@s.whatsapp.net');
    const devices = await restarted.sandbox('GET', `/accounts/${enc(PHONE)}/devices`);
    expect(devices.body).toEqual([expect.objectContaining({ deviceId, online: true })]);

    // Messages flow on the restored session.
    const sent = await restarted.api('POST', `/connections/${id}/send`, { chatId: '+15550101', text: 'linked by code', skipPresence: true });
    expect(sent.status).toBe(201);
    await waitFor('the contact received it', async () => {
      const got = await restarted!.sandbox('GET', `/accounts/${enc('+15550101')}/messages`);
      return got.body.some((m: { text: string }) => m.text === 'linked by code') ? true : undefined;
    });
  });
});
