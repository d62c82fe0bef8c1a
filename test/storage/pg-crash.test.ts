/**
 * Storage contract, kill -9 on PostgreSQL: a child process streams group-commit units (an event and its outbox row
 * each) and prints the seq of every unit acknowledged to it; the test kills it with SIGKILL in the middle of the
 * stream, three times. Every acknowledged seq is in the database, the user's seqs have no gap, and every event has
 * its outbox row (docs/architecture.md § Storage engines).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratePg } from '../../service/db/pg/migrations.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'ingest-child.ts');

/** Runs the child until it printed `acks` acknowledgements, then SIGKILLs it; returns every acknowledged `seq tag`. */
function streamAndKill(url: string, userId: string, webhookId: string, acks: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, url, userId, webhookId], { stdio: ['ignore', 'pipe', 'pipe'] });
    const acked: string[] = [];
    let buffer = '';
    let stderr = '';
    let armed = false;
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) if (line.startsWith('ack ')) acked.push(line.slice(4));
      // At a random moment of the stream (mostly while a batch is open or committing).
      if (acked.length >= acks && !armed) {
        armed = true;
        setTimeout(() => proc.kill('SIGKILL'), Math.random() * 10);
      }
    });
    proc.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(acked);
      else reject(new Error(`child exited ${code}: ${stderr}`));
    });
  });
}

describe('kill -9 during group commits on PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await migratePg(db.sql);
    await db.sql`INSERT INTO users (id, kind, name, created_at) VALUES ('u1', 'local', 'u', '2026-01-01T00:00:00.000Z')`;
    await db.sql`INSERT INTO connections (id, user_id, worker_id, session_name, status, created_at, updated_at)
      VALUES ('c1', 'u1', 'w', 's1', 'online', '', '')`;
    await db.sql`INSERT INTO webhooks (id, user_id, connection_id, url, events, secret, created_at, updated_at)
      VALUES ('h1', 'u1', 'c1', 'https://x', '["*"]', 's', '', '')`;
  });
  afterAll(() => db?.drop());

  it('loses nothing acknowledged and leaves no seq gap', { timeout: 120_000 }, async () => {
    const acked: string[] = [];
    for (let round = 0; round < 3; round++) acked.push(...(await streamAndKill(db.url, 'u1', 'h1', 400 + round * 150)));
    const rows = await db.sql<Array<{ seq: number; tag: string; outbox: number }>>`
      SELECT e.seq, e.payload::json->>'tag' AS tag, (SELECT count(*) FROM webhook_deliveries d WHERE d.user_id = e.user_id AND d.event_seq = e.seq) AS outbox
      FROM events e WHERE e.user_id = 'u1' ORDER BY e.seq`;
    const stored = rows.map((r) => r.seq);
    expect(stored).toEqual(stored.map((_, i) => i + 1));
    const storedUnits = new Set(rows.map((r) => `${r.seq} ${r.tag}`));
    expect(acked.filter((a) => !storedUnits.has(a))).toEqual([]);
    expect(new Set(acked).size).toBe(acked.length);
    expect(rows.length).toBeGreaterThanOrEqual(acked.length); // committed units the kill kept from being acknowledged
    expect(rows.filter((r) => r.outbox !== 1)).toEqual([]);
    const [last] = await db.sql<Array<{ seq: number }>>`SELECT last_event_seq AS seq FROM users WHERE id = 'u1'`;
    expect(last!.seq).toBe(stored.length);
    expect(acked.length).toBeGreaterThanOrEqual(1_350);
  });
});
