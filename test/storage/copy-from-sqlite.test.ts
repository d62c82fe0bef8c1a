/**
 * The copy behind `switchboard migrate` (service/db/pg/copy-from-sqlite.ts) on a real SQLite file and a real
 * PostgreSQL database of this run: a table larger than one batch is streamed and copied whole, in order, with its
 * seqs (the sequence moves past them), edits keep their order, U+0000 is stored as the repositories store it, the
 * search index is rebuilt for exactly the messages SQLite indexed; and every failure — a row PostgreSQL refuses, a
 * count that does not match, a table the build does not know, a target that holds rows — rolls everything back.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDataPlane } from '../../service/data-plane.ts';
import {
  COPIED_TABLES,
  CopySourceError,
  CopyVerificationError,
  SQLITE_ONLY_TABLES,
  TargetNotEmptyError,
  copySqliteToPg,
  firstNonEmptyTable,
} from '../../service/db/pg/copy-from-sqlite.ts';
import { migratePg } from '../../service/db/pg/migrations.ts';
import { openPgStore } from '../../service/db/pg/store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { storedText } from '../helpers/messages.ts';

const CHAT = '15550101@s.whatsapp.net';
const MESSAGES = 2_345; // three batches of 1,000

describe('copySqliteToPg', () => {
  let dir: string;
  let db: TestDatabase;
  let connectionId: string;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-copy-'));
    db = await createTestDatabase();
    const plane = openDataPlane({ dataDir: dir, role: 'tool' });
    const { store } = plane;
    store.tx(() => {
      const user = store.users.ensure('me');
      for (const name of ['zed', 'amy', 'bob']) store.users.ensure(name); // creation order ≠ name order
      connectionId = store.connections.insert({ id: 'c1', userId: user.id, name: 'phone', workerId: 'local' }).id;
      for (let i = 0; i < MESSAGES; i++) {
        const text = i === 7 ? 'nul\u0000inside' : i % 10 === 0 ? '' : `message number ${i} café`;
        store.messages.upsert(connectionId, storedText(CHAT, `K${i}`, 1_700_000_000 + Math.floor(i / 3), text, i % 2 === 0, { raw: Buffer.from([i & 255, 1, 2]) }));
      }
      const edited = storedText(CHAT, 'K5', 0, '').id;
      store.messages.edit(connectionId, edited, 'first edit', 1_700_000_100);
      store.messages.edit(connectionId, edited, 'second edit', 1_700_000_100); // same second: order by insertion
    });
    plane.close();
  });

  afterEach(async () => {
    await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const source = () => new Database(path.join(dir, 'switchboard.db'), { readonly: true });

  async function copy(): Promise<Awaited<ReturnType<typeof copySqliteToPg>>> {
    await migratePg(db.sql);
    const file = source();
    try {
      return await copySqliteToPg(file, db.sql);
    } finally {
      file.close();
    }
  }

  /** The row counts of every copied table in the target (all 0 after a rollback). */
  async function targetRows(): Promise<number> {
    let n = 0;
    for (const t of [...COPIED_TABLES, 'message_search']) {
      const [row] = await db.sql<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM ${db.sql(t)}`;
      n += row!.n;
    }
    return n;
  }

  it('streams a table over several batches, whole and in order, and moves the seq sequence past it', async () => {
    const counts = await copy();
    const byTable = Object.fromEntries(counts.map((c) => [c.table, c]));
    expect(byTable.messages).toEqual({ table: 'messages', sqlite: MESSAGES, postgres: MESSAGES });
    expect(counts.every((c) => c.sqlite === c.postgres)).toBe(true);
    expect(counts.map((c) => c.table)).toEqual([...COPIED_TABLES, 'message_search']);

    const file = source();
    const seqs = file.prepare(`SELECT id, seq, hex(raw) AS raw FROM messages ORDER BY id`).all() as Array<{ id: string; seq: number; raw: string }>;
    const indexed = (file.prepare(`SELECT count(*) AS n FROM message_search`).get() as { n: number }).n;
    file.close();
    const order = (f: Database.Database) => (f.prepare(`SELECT name FROM users ORDER BY rowid`).all() as Array<{ name: string }>).map((u) => u.name);
    const check = source();
    const sqliteOrder = order(check);
    check.close();
    const pgOrder = (await db.sql<Array<{ name: string }>>`SELECT name FROM users ORDER BY ord`).map((u) => u.name);
    expect(pgOrder).toEqual(sqliteOrder); // users.ord: SQLite's rowid order (the owner is the first local user)
    expect(sqliteOrder).toEqual(['me', 'zed', 'amy', 'bob']);
    const pgSeqs = await db.sql<Array<{ id: string; seq: number; raw: string }>>`SELECT id, seq, upper(encode(raw, 'hex')) AS raw FROM messages ORDER BY id`;
    expect(pgSeqs.map((r) => ({ ...r }))).toEqual(seqs);
    // Messages with nothing to search ('' every tenth) are not indexed, on either side.
    expect(byTable.message_search!.postgres).toBe(indexed);
    expect(indexed).toBeLessThan(MESSAGES);

    const pg = await openPgStore(db.url);
    try {
      const nul = await pg.read.messages.get(connectionId, storedText(CHAT, 'K7', 0, '', false).id);
      expect(nul?.text).toBe('nul\ufffdinside');
      const edits = await pg.read.messages.edits(connectionId, storedText(CHAT, 'K5', 0, '', false).id);
      expect(edits.map((e) => e.text)).toEqual(['first edit', 'second edit']);
      const hits = await pg.read.search.search('cafe', { connectionIds: [connectionId] }, { limit: 5, order: 'recent' });
      expect(hits.hits).toHaveLength(5);
      // A message stored after the copy gets a seq after every copied one.
      const maxSeq = Math.max(...seqs.map((r) => r.seq));
      await pg.tx((t) => t.messages.upsert(connectionId, storedText(CHAT, 'after', 1_800_000_000, 'after the move')));
      const [after] = await db.sql<Array<{ seq: number }>>`SELECT seq FROM messages WHERE key_id = 'after'`;
      expect(after!.seq).toBeGreaterThan(maxSeq);
    } finally {
      await pg.close();
    }
  });

  it('copies what is only in the WAL (a writer that has not checkpointed, as after a killed service)', async () => {
    const writer = new Database(path.join(dir, 'switchboard.db'));
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare(`INSERT INTO settings (key, value) VALUES ('only.in.wal', '1')`).run();
    try {
      expect(fs.statSync(path.join(dir, 'switchboard.db-wal')).size).toBeGreaterThan(0);
      await copy();
      expect(await db.sql`SELECT value FROM settings WHERE key = 'only.in.wal'`).toEqual([{ value: '1' }]);
    } finally {
      writer.close();
    }
  });

  it('rolls everything back, the schema too, when PostgreSQL refuses a row', async () => {
    const raw = new Database(path.join(dir, 'switchboard.db'));
    raw.pragma('foreign_keys = OFF');
    raw.prepare(`INSERT INTO poll_votes (connection_id, poll_id, voter_jid, options, timestamp) VALUES ('gone', 'p', 'v', '[]', 1)`).run();
    raw.close();
    // Into a database without a schema: the schema is created in the copy's transaction, and goes with it.
    const file = source();
    await expect(copySqliteToPg(file, db.sql)).rejects.toThrow(/foreign key/);
    file.close();
    const [tables] = await db.sql<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM pg_tables WHERE schemaname = 'public'`;
    expect(tables!.n).toBe(0);
  });

  it('rolls everything back when a count does not match', async () => {
    await migratePg(db.sql);
    // A trigger of the target's own drops every tenth message: the copy's counts catch it.
    await db.sql.unsafe(`
      CREATE FUNCTION drop_some() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.key_id LIKE '%0' THEN RETURN NULL; END IF; RETURN NEW; END $$;
      CREATE TRIGGER drop_some BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION drop_some();`);
    const file = source();
    const failure = await copySqliteToPg(file, db.sql).catch((err: unknown) => err);
    file.close();
    expect(failure).toBeInstanceOf(CopyVerificationError);
    expect((failure as CopyVerificationError).message).toMatch(/messages: 2345 → 2110/);
    expect(await targetRows()).toBe(0);
  });

  it('refuses a SQLite table it has no place for, and a target that holds rows', async () => {
    expect(Object.keys(SQLITE_ONLY_TABLES)).toEqual(['cache_generations']);
    const raw = new Database(path.join(dir, 'switchboard.db'));
    raw.exec(`CREATE TABLE extra (x TEXT); INSERT INTO extra VALUES ('y')`);
    raw.close();
    await expect(copy()).rejects.toThrow(CopySourceError);
    await expect(copy()).rejects.toThrow(/cannot copy SQLite table\(s\) extra/);
    expect(await targetRows()).toBe(0);

    await db.sql`INSERT INTO settings (key, value) VALUES ('someone', 'else')`;
    expect(await firstNonEmptyTable(db.sql)).toBe('settings');
    const file = source();
    await expect(copySqliteToPg(file, db.sql)).rejects.toThrow(TargetNotEmptyError);
    file.close();
    expect(await targetRows()).toBe(1);
  });
});
