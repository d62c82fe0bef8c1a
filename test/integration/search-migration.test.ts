/**
 * The search migration at service level (issue 15): a data dir whose database has the schema from before the
 * full-text index, with an API token, a connection and 2,500 stored messages (more than one backfill batch), is
 * opened by the real service (startService: migrations, the background backfill, the HTTP API). Once the backfill
 * has run, `GET /connections/:id/search` and `GET /search` find the old messages (diacritics folded, phrases, scoped
 * to the connection), the log says the index was built, and the marker is gone from the database.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken, hashToken } from '../../service/auth/api-tokens.ts';
import { migrations } from '../../service/db/migrations.ts';
import { startService, type RunningService } from '../../service/index.ts';
import { waitFor } from '../helpers/wait.ts';
import { offlineServiceConfig } from './api-harness.ts';

const CHAT = '15550101@s.whatsapp.net';
const OTHER = '15550102@s.whatsapp.net';
const COUNT = 2500;

/** Writes switchboard.db in `dataDir` with every migration before the search index's, and old data in it. */
function oldDataDir(dataDir: string, token: string): void {
  const db = new Database(path.join(dataDir, 'switchboard.db'));
  const before = migrations.findIndex((m) => m.includes('CREATE VIRTUAL TABLE message_search'));
  expect(before).toBeGreaterThan(0);
  for (let v = 0; v < before; v++) db.exec(migrations[v]!);
  db.pragma(`user_version = ${before}`);
  db.pragma(`application_id = ${0x53574244}`);
  db.exec(`INSERT INTO users (id, kind, name, created_at) VALUES ('u1', 'local', 'old', '2026-01-01')`);
  db.prepare(`INSERT INTO api_tokens (id, user_id, name, prefix, hash, created_at) VALUES ('t1', 'u1', 'old', ?, ?, '2026-01-01')`).run(
    token.slice(0, 10),
    hashToken(token),
  );
  db.exec(`INSERT INTO connections (id, user_id, worker_id, session_name, status, created_at, updated_at)
           VALUES ('c1', 'u1', 'local', 's1', 'connected', '2026-01-01', '2026-01-01')`);
  db.exec(`INSERT INTO chats (connection_id, id, name, last_ts) VALUES ('c1', '${CHAT}', 'Alice', 3500), ('c1', '${OTHER}', 'Bob', 3500)`);
  const ins = db.prepare(`INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, type, text, seq)
                          VALUES ('c1', ?, ?, ?, 0, ?, ?, 'text', ?, ?)`);
  db.transaction(() => {
    for (let i = 1; i <= COUNT; i++) {
      const chat = i % 2 ? CHAT : OTHER;
      const text = i === 7 ? 'Meet me in São Paulo on Friday' : i === COUNT ? 'the last invoice before the upgrade' : `archived note ${i}`;
      ins.run(`false_${chat}_o${i}`, chat, `o${i}`, 1000 + i, chat, text, i);
    }
  })();
  db.close();
}

describe('a data dir from before the search index, opened by the service', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-search-migration-'));
  const token = generateToken();
  const logs: Array<{ msg?: string; total?: number }> = [];
  let service: RunningService;
  const api = async (route: string) => {
    const res = await fetch(`${service.apiUrl}${route}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as { results: Array<{ message: { id: string; text: string }; connectionId?: string }> } };
  };

  beforeAll(async () => {
    oldDataDir(dataDir, token);
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) });
    service = await startService(
      offlineServiceConfig(dataDir, { logLevel: 'info' }), // the connection's session never reaches WhatsApp
      { logger },
    );
  }, 60_000);

  afterAll(async () => {
    await service?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('builds the index in the background and then finds the old messages', async () => {
    await waitFor('the backfill to finish', async () => (logs.some((l) => l.msg === 'search index: all stored messages indexed') ? true : undefined), {
      timeoutMs: 30_000,
    });
    expect(logs.find((l) => l.msg === 'search index: indexing stored messages in the background')?.total).toBe(COUNT);

    const diacritics = await api('/connections/c1/search?q=sao%20paulo');
    expect(diacritics.status).toBe(200);
    expect(diacritics.body.results.map((r) => r.message.id)).toEqual([`false_${CHAT}_o7`]);
    expect(diacritics.body.results[0]!.message.text).toBe('Meet me in São Paulo on Friday');
    // the newest and the oldest batch are both indexed
    expect((await api('/connections/c1/search?q=invoice')).body.results.map((r) => r.message.id)).toEqual([`false_${OTHER}_o${COUNT}`]);
    expect((await api('/connections/c1/search?q=%22archived%20note%201%22')).body.results.map((r) => r.message.id)).toEqual([`false_${CHAT}_o1`]);
    const chat = await api(`/connections/c1/search?q=archived&chatId=${encodeURIComponent(OTHER)}&limit=100`);
    expect(chat.body.results).toHaveLength(100);
    expect(chat.body.results.every((r) => r.message.id.startsWith(`false_${OTHER}_`))).toBe(true);
    const all = await api('/search?q=paulo');
    expect(all.status).toBe(200);
    expect(all.body.results.map((r) => [r.connectionId, r.message.id])).toEqual([['c1', `false_${CHAT}_o7`]]);
  });

  it('leaves every old message in the index and no backfill marker', async () => {
    await service.close();
    const db = new Database(path.join(dataDir, 'switchboard.db'), { readonly: true });
    try {
      expect(db.prepare(`SELECT count(*) AS n FROM message_search`).get()).toEqual({ n: COUNT });
      expect(db.prepare(`SELECT value FROM settings WHERE key = 'search.backfill'`).get()).toBeUndefined();
    } finally {
      db.close();
    }
  });
});
