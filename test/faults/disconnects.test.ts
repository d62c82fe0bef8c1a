/**
 * Fault: the server drops the connection, the way WhatsApp's does. Through the sandbox's `disconnect` admin call
 * the real Baileys client sees each close code of the reconnect policy (brief A4): 408/428/500/503 → `reconnecting`
 * then `online` again; 515 → an immediate restart back to `online`; 440 → `failed` (replaced by another session,
 * no reconnect loop) until a restart; and the phone unlinking the device (401) → `logged_out`, with the stored
 * history kept. A drop in the middle of a burst of incoming messages loses none of them.
 */
import Database from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HISTORY_WAIT_MS } from '../../service/engine/session-lifecycle.ts';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';

describe('server-side disconnects', () => {
  let s: SandboxService;
  let connectionId: string;

  const status = async () => (await s.api('GET', `/connections/${connectionId}`)).body.status as string;
  /** The linked device with an open connection (waiting for the client to be connected again). */
  const deviceId = (): Promise<number> =>
    waitFor('a connected device', async () => {
      const devices = (await s.sandbox('GET', `/accounts/${enc(PHONE)}/devices`)).body as Array<{ deviceId: number; online: boolean }>;
      return devices.find((d) => d.online)?.deviceId;
    });
  const disconnect = async (code: number) =>
    s.sandbox('POST', `/accounts/${enc(PHONE)}/devices/${await deviceId()}/disconnect`, { code });
  const statusesSince = (seq: number) =>
    s.frames.filter((f) => f.seq > seq && f.event === 'session.status' && f.connectionId === connectionId).map((f) => f.payload.status);
  const lastSeq = () => s.frames.at(-1)?.seq ?? 0;
  /** A contact message arrives and is stored: the session really works again. */
  const roundTrip = async (text: string) => {
    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text })).status).toBe(201);
    await waitFor(`"${text}" stored`, async () => {
      const page = await s.api('GET', `/connections/${connectionId}/chats/${ALICE_JID}/messages?limit=5`);
      return page.body.messages.some((m: { text: string }) => m.text === text) ? true : undefined;
    });
  };

  beforeAll(async () => {
    s = await startSandboxService();
    connectionId = await s.pair(PHONE);
  });
  afterAll(async () => s?.close());

  it('rejects unknown codes with a 400 naming the field', async () => {
    const res = await s.sandbox('POST', `/accounts/${enc(PHONE)}/devices/${await deviceId()}/disconnect`, { code: 401 });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/code/);
  });

  for (const code of [408, 428, 500, 503]) {
    it(`recovers from a ${code} close: reconnecting, then online`, { timeout: 30_000 }, async () => {
      const since = lastSeq();
      expect((await disconnect(code)).status).toBe(204);
      await waitFor('online again', async () => (statusesSince(since).includes('reconnecting') && (await status()) === 'online' ? true : undefined));
      const seen = statusesSince(since);
      expect(seen[0]).toBe('reconnecting');
      expect(seen.at(-1)).toBe('online');
      await roundTrip(`after ${code}`);
    });
  }

  it('restarts at once on 515 (restart required) and comes back online', { timeout: 30_000 }, async () => {
    const since = lastSeq();
    expect((await disconnect(515)).status).toBe(204);
    await waitFor('a new socket online', async () => (statusesSince(since).includes('connected') && (await status()) === 'online' ? true : undefined));
    expect(statusesSince(since)).not.toContain('reconnecting');
    await roundTrip('after 515');
  });

  // Five rounds: the drop lands among messages being decrypted in most of them. One the client decrypted while its
  // socket was closing (receipt refused, never upserted) comes back as the same ciphertext (decrypt-replay.ts).
  it('loses no message when the connection drops in the middle of a burst', { timeout: 90_000 }, async () => {
    for (let round = 0; round < 5; round++) {
      const texts = Array.from({ length: 20 }, (_, i) => `burst ${round}.${i}`);
      const since = lastSeq();
      const sends = texts.map((text) => s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text }));
      await new Promise((r) => setTimeout(r, 20));
      const dropped = (await disconnect(428)).status === 204;
      expect((await Promise.all(sends)).every((r) => r.status === 201)).toBe(true);
      await waitFor(`every message of burst ${round} stored`, async () => {
        // After the drop, "online" counts only once the session noticed it and connected again.
        if (dropped && !statusesSince(since).includes('reconnecting')) return undefined;
        if ((await status()) !== 'online') return undefined;
        const page = await s.api('GET', `/connections/${connectionId}/chats/${ALICE_JID}/messages?limit=100`);
        const stored = new Set(page.body.messages.map((m: { text: string }) => m.text));
        return texts.every((t) => stored.has(t)) ? true : undefined;
      }, { timeoutMs: 15_000 });
    }
  });

  it('reports failed on 440 (replaced by another session) without a reconnect loop, until restarted', { timeout: 30_000 }, async () => {
    const since = lastSeq();
    expect((await disconnect(440)).status).toBe(204);
    await waitFor('failed', async () => ((await status()) === 'failed' ? true : undefined));
    const failed = s.frames.find((f) => f.seq > since && f.event === 'session.status' && f.payload.status === 'failed');
    expect(failed?.payload.reason).toMatch(/replaced/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await status()).toBe('failed'); // no loop
    expect((await s.api('POST', `/connections/${connectionId}/restart`)).status).toBe(200);
    await waitFor('online after restart', async () => ((await status()) === 'online' ? true : undefined));
    await roundTrip('after 440 and restart');
  });

  it('goes logged_out when the phone unlinks the device (401), and keeps the history', { timeout: 30_000 }, async () => {
    const since = lastSeq();
    const res = await s.sandbox('DELETE', `/accounts/${enc(PHONE)}/devices/${await deviceId()}`);
    expect(res.status).toBe(204);
    await waitFor('logged_out', async () => ((await status()) === 'logged_out' ? true : undefined));
    expect(statusesSince(since)).toContain('logged_out');
    const page = await s.api('GET', `/connections/${connectionId}/chats/${ALICE_JID}/messages?limit=100`);
    expect(page.status).toBe(200);
    expect(page.body.messages.map((m: { text: string }) => m.text)).toContain('after 440 and restart');
    expect((await s.api('GET', `/connections/${connectionId}/me`)).status).toBe(409);
  });

  it('a session that got its history but lost the socket before the app-state sync does not wait for history again', { timeout: 60_000 }, async () => {
    // A drop seconds after pairing: Baileys had processed the history notification (processedHistoryMessages) but
    // not finished the app-state sync that sets accountSyncCounter. The server does not send the history twice, so a
    // reconnect must not wait HISTORY_WAIT_MS for it (it did, on every reconnect, until the counter was set).
    const fresh = await startSandboxService();
    try {
      const id = await fresh.pair('+15550100');
      // A message stored after the history: its notification was acknowledged, so the server will not send it again.
      expect((await fresh.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'after the history' })).status).toBe(201);
      await waitFor('stored', async () => {
        const page = await fresh.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=5`);
        return page.body.messages.some((m: { text: string }) => m.text === 'after the history') ? true : undefined;
      });
      await fresh.service.close();
      const db = new Database(path.join(fresh.dataDir, 'switchboard.db'));
      const row = db.prepare('SELECT creds FROM auth_creds WHERE connection_id = ?').get(id) as { creds: string };
      const creds = JSON.parse(row.creds) as { accountSyncCounter: number; processedHistoryMessages: unknown[] };
      expect(creds.processedHistoryMessages.length).toBeGreaterThan(0);
      creds.accountSyncCounter = 0;
      db.prepare('UPDATE auth_creds SET creds = ? WHERE connection_id = ?').run(JSON.stringify(creds), id);
      db.close();
      const started = Date.now();
      const restarted = await startSandboxService({ dataDir: fresh.dataDir });
      try {
        await waitFor('online after restart', async () =>
          (await restarted.api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined,
        { timeoutMs: HISTORY_WAIT_MS + 10_000 });
        // Far below the history wait: no timer held it (a restart comes online in about a second).
        expect(Date.now() - started).toBeLessThan(HISTORY_WAIT_MS / 2);
      } finally {
        await restarted.close();
      }
    } finally {
      await fresh.close();
    }
  });
});
