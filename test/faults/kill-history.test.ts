/**
 * Fault: `kill -9` while the initial history sync is being ingested. The sandbox runs as its own process and keeps
 * every history chunk in its outbox until the client's receipt for it arrives, so a chunk the service had not
 * acknowledged is sent again after the restart. WhatsApp sends the history only once, so the service must not
 * acknowledge a chunk before it is committed: afterwards the history is complete (every message the phone holds is
 * stored exactly once), nothing is left in the sandbox's queue, and the connection is online again without a scan.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExternalSandboxRig, type ExternalSandboxRig } from '../helpers/external-sandbox.ts';
import { waitFor } from '../helpers/wait.ts';

const HISTORY = 20_000;
const PHONE_PN = '15550100';

describe('kill -9 during the initial history sync', () => {
  let rig: ExternalSandboxRig;
  let dir: string;
  let sandbox: ExternalSandboxRig['sandbox'];
  const serve = () => rig.serve();
  const call: ExternalSandboxRig['call'] = (...args) => rig.call(...args);
  /** Read-only views of the two databases (WAL: readers see committed data only, and never block the writers). */
  const readOnly = (file: string) => new Database(file, { readonly: true, fileMustExist: true });

  beforeAll(async () => {
    rig = await startExternalSandboxRig({ prefix: 'sb-fault-hist-', user: 'hist' });
    ({ dir, sandbox } = rig);
  });

  afterAll(async () => rig?.close());

  it('keeps every chunk it stored and receives the unacknowledged ones again: complete, no duplicates', { timeout: 55_000 }, async () => {
    const seeded = await call(sandbox.url, 'POST', '/accounts/%2B15550100/history', { with: '+15550101', count: HISTORY }, false);
    expect(seeded.status).toBe(201);
    const sandboxDb = readOnly(path.join(dir, 'sandbox', 'sandbox-server', 'sandbox.db'));
    const expected = new Set(
      // its 1:1 chats and the seeded group's messages (sent, or received as a member)
      (
        sandboxDb
          .prepare('SELECT msg_id FROM messages WHERE from_pn = ? OR to_pn = ? OR seq IN (SELECT seq FROM group_message_recipients WHERE pn = ?)')
          .all(PHONE_PN, PHONE_PN, PHONE_PN) as Array<{ msg_id: string }>
      ).map(
        (r) => r.msg_id,
      ),
    );
    expect(expected.size).toBeGreaterThan(HISTORY);
    const pendingHistoryChunks = () => (sandboxDb.prepare(`SELECT count(*) AS n FROM outbox WHERE kind = 'history'`).get() as { n: number }).n;

    let service = await serve();
    const c = await call(service.apiUrl, 'POST', '/connections', {});
    const id = c.body.id as string;
    const serviceDb = readOnly(path.join(dir, 'service', 'switchboard.db'));
    const storedCount = () => (serviceDb.prepare('SELECT count(*) AS n FROM messages WHERE connection_id = ?').get(id) as { n: number }).n;
    const qr = await rig.qrText(service, id);
    const scan = call(sandbox.url, 'POST', '/accounts/%2B15550100/scan', { qr }, false);

    // Kill as soon as part of the history is committed, while the rest is still being received or ingested.
    const atKill = await waitFor(
      'part of the history stored',
      () => {
        const n = storedCount();
        return n > 0 && n < expected.size ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 5 },
    );
    // ... at a random point of the next chunk (its receipt written, its rows not yet committed, or later)
    const delayMs = Math.floor(Math.random() * 100);
    await new Promise((r) => setTimeout(r, delayMs));
    await service.stop('SIGKILL');
    expect((await scan).status).toBe(200);
    const storedAtKill = storedCount();
    const chunksLeftAtKill = pendingHistoryChunks();
    console.log(`[fault] history: killed ${delayMs} ms after ${atKill}/${expected.size} messages stored (${storedAtKill} after the kill), ${chunksLeftAtKill} chunks unacknowledged`);
    expect(storedAtKill).toBeLessThan(expected.size); // the kill really interrupted the sync

    service = await serve();
    await waitFor('online again, without a scan', async () =>
      (await call(service.apiUrl, 'GET', `/connections/${id}`)).body.status === 'online' ? true : undefined,
      { timeoutMs: 30_000 },
    );
    let diagnosis = '';
    await waitFor(
      'the whole history stored',
      () => {
        const n = storedCount();
        diagnosis = `${n}/${expected.size} stored, ${pendingHistoryChunks()} chunks still queued in the sandbox`;
        return n >= expected.size && pendingHistoryChunks() === 0 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${diagnosis}`);
    });

    const rows = serviceDb.prepare('SELECT key_id, chat_id, text FROM messages WHERE connection_id = ?').all(id) as Array<{ key_id: string; chat_id: string; text: string }>;
    const keyIds = rows.map((r) => r.key_id);
    expect(new Set(keyIds).size).toBe(keyIds.length); // no message stored twice
    expect(keyIds.filter((k) => !expected.has(k))).toEqual([]); // nothing invented
    expect([...expected].filter((k) => !keyIds.includes(k))).toEqual([]); // nothing lost
    const texts = rows.filter((r) => r.chat_id === '15550101@s.whatsapp.net' && r.text.startsWith('History message ')).map((r) => r.text);
    expect(texts.length).toBe(HISTORY);
    expect(new Set(texts).size).toBe(HISTORY);
    // The API serves it too (newest first), and the connection works: a new message arrives.
    const page = await call(service.apiUrl, 'GET', `/connections/${id}/chats/15550101@s.whatsapp.net/messages?limit=3`);
    expect(page.body.messages.map((m: { text: string }) => m.text)).toContain(`History message ${HISTORY} of ${HISTORY}`);
    expect((await call(sandbox.url, 'POST', '/accounts/%2B15550101/messages', { to: '+15550100', text: 'after the crash' }, false)).status).toBe(201);
    await waitFor('a live message after the restart', async () => {
      const p = await call(service.apiUrl, 'GET', `/connections/${id}/chats/15550101@s.whatsapp.net/messages?limit=5`);
      return p.body.messages.some((m: { text: string }) => m.text === 'after the crash') ? true : undefined;
    });
    serviceDb.close();
    sandboxDb.close();
  });
});
