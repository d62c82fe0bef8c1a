/**
 * Faults of the database under a connected session, injected from outside the service through the database file
 * itself, while a contact sends (the sandbox as its own process: it keeps and redelivers what was not receipted):
 * - another program holds the write lock (a backup tool, a long `sqlite3` session) longer than a session waits for
 *   it (SQLite's busy timeout, 5 s): the Signal key writes of the decrypts fail first and Baileys retries them, so
 *   the messages wait and are stored once the lock is gone;
 * - the database refuses a message's row (a trigger that aborts its INSERT: a constraint, a bug) after its decrypt
 *   succeeded and its receipt waits in the frame gate. The session must drop its held frames and reconnect
 *   (engine session-lifecycle.ts `eventsFailed`): the sandbox redelivers, and once the database takes the row the
 *   message is stored. Before, the receipt left after the decrypt hold's fallback and the message was lost.
 * Both end with every accepted message stored exactly once, with its `message` event.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCall } from '../helpers/http.ts';
import { runCli, startSandboxProcess, startServe, type SandboxProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
/** Longer than a session thread's busy timeout (db/database.ts, 5 s): its commits fail with SQLITE_BUSY meanwhile. */
const LOCK_MS = 7_000;

describe('database faults under a connected session', () => {
  let dir: string;
  let sandbox: SandboxProcess;
  let service: ServiceProcess;
  let token: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-locked-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox'));
    token = (await runCli(['token', 'create', '--user', 'locked', '--data-dir', path.join(dir, 'service')])).stdout.trim();
    service = await startServe(['--sandbox', '--wa-url', sandbox.wsUrl, '--typing-delay-ms', '0', '--rate-limit', '0', '--port', '0', '--data-dir', path.join(dir, 'service')]);
  });

  afterAll(async () => {
    await service?.stop('SIGKILL');
    await sandbox?.stop('SIGKILL');
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const api = (method: string, route: string, body?: unknown) => jsonCall(service.apiUrl, method, route, body, token);
  const admin = (method: string, route: string, body?: unknown) => jsonCall(sandbox.url, method, route, body);
  let id: string;
  const stored = async () => {
    const r = await api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=500`);
    return r.status === 200 ? (r.body.messages as Array<{ text: string | null }>).map((m) => m.text) : [];
  };
  const send = async (text: string) =>
    expect((await admin('POST', `/accounts/${encodeURIComponent(ALICE)}/messages`, { to: PHONE, text })).status).toBe(201);
  /** Every text of `texts` stored exactly once, with exactly one `message` event. */
  const expectStoredOnce = async (texts: string[]) => {
    await waitFor(
      `${texts.join(', ')} stored`,
      async () => {
        const bodies = await stored();
        return texts.every((t) => bodies.includes(t)) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    ).catch(async (err: unknown) => {
      throw new Error(`${String(err)}; stored: ${JSON.stringify(await stored())}`);
    });
    const bodies = await stored();
    for (const text of texts) expect(bodies.filter((b) => b === text)).toHaveLength(1);
    const events = (await api('GET', '/events?limit=1000')).body.events as Array<{ event: string; payload: { body?: string } }>;
    for (const text of texts) expect(events.filter((e) => e.event === 'message' && e.payload.body === text)).toHaveLength(1);
  };

  it('pairs', { timeout: 60_000 }, async () => {
    id = (await api('POST', '/connections', {})).body.id as string;
    const qr = await waitFor('QR', async () => {
      const r = await api('GET', `/connections/${id}/qr?format=text`);
      return r.status === 200 ? (r.body.value as string) : undefined;
    });
    expect((await admin('POST', `/accounts/${encodeURIComponent(PHONE)}/scan`, { qr })).status).toBe(200);
    await waitFor('online', async () => ((await api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), { timeoutMs: 30_000 });
  });

  it('stores every message that arrived while another program held the write lock, once, after it is released', { timeout: 120_000 }, async () => {
    await send('before the lock');
    await waitFor('the first message stored', async () => ((await stored()).includes('before the lock') ? true : undefined));

    // Another program takes the write lock and keeps it; the contact sends meanwhile.
    const other = new Database(path.join(dir, 'service', 'switchboard.db'));
    other.pragma('busy_timeout = 5000');
    other.exec('BEGIN IMMEDIATE');
    const during = ['during the lock 1', 'during the lock 2', 'during the lock 3'];
    const lockedAt = Date.now();
    for (const text of during) {
      await send(text);
      await new Promise((r) => setTimeout(r, 500));
    }
    await new Promise((r) => setTimeout(r, Math.max(0, LOCK_MS - (Date.now() - lockedAt))));
    other.exec('ROLLBACK');
    other.close();

    await expectStoredOnce(during);
  });

  it('stores a message the database refused at first, once it takes it: its receipt never left', { timeout: 120_000 }, async () => {
    const db = new Database(path.join(dir, 'service', 'switchboard.db'));
    db.pragma('busy_timeout = 5000');
    db.exec(`CREATE TRIGGER refuse_poison BEFORE INSERT ON messages WHEN NEW.text = 'refused at first' BEGIN SELECT RAISE(ABORT, 'injected: row refused'); END`);
    try {
      await send('refused at first');
      // Refused on its delivery and on each redelivery meanwhile (the session reconnects for them).
      await new Promise((r) => setTimeout(r, 4_000));
      expect(await stored()).not.toContain('refused at first');
    } finally {
      db.exec('DROP TRIGGER refuse_poison');
      db.close();
    }
    await send('after the refusal');
    await expectStoredOnce(['refused at first', 'after the refusal']);
    await waitFor('online again', async () => ((await api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), { timeoutMs: 30_000 });
  });
});
