/**
 * The full-text index on real SQLite files: the query syntax and its refusals, the index kept in step with the
 * messages (insert, upsert, edit, revoke, a stopped connection), filters and cursors, `around`/`after` paging, the
 * export iterator, and the migration of a database from before the index (backfill resumed after an interruption).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrations } from '../../service/db/migrations.ts';
import { decodeCursor, type StoredMessage } from '../../service/db/messages.ts';
import { matchExpression, parseSearchQuery, RELEVANCE_WINDOW } from '../../service/db/search.ts';
import { startSearchBackfill } from '../../service/db/search-backfill.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { ServiceError } from '../../service/errors.ts';
import { incomingText } from '../helpers/messages.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-search-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const CHAT = '15550101@s.whatsapp.net';
const OTHER = '15550202@s.whatsapp.net';

function badRequest(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).statusCode).toBe(400);
    return (err as Error).message;
  }
  throw new Error('expected a 400');
}

describe('query syntax', () => {
  it('translates words, phrases, prefixes and exclusions into quoted FTS5 phrases', () => {
    expect(matchExpression(parseSearchQuery('invoice "due date" pay* -draft'))).toBe(
      '(({body} : ("invoice" AND "due date" AND "pay" *)) NOT ({body} : ("draft")))',
    );
    // FTS5 operators and syntax characters are plain words
    expect(matchExpression(parseSearchQuery('NEAR(a OR b) col:x ^y'))).toBe(
      '({body} : ("NEAR a" AND "OR" AND "b" AND "col x" AND "y"))',
    );
  });

  it('refuses empty queries, unbalanced quotes and only exclusions with a clear 400', () => {
    expect(badRequest(() => parseSearchQuery(''))).toMatch(/at least one word/);
    expect(badRequest(() => parseSearchQuery('  ?! ** '))).toMatch(/at least one word/);
    expect(badRequest(() => parseSearchQuery('"open phrase'))).toMatch(/unbalanced quote/);
    expect(badRequest(() => parseSearchQuery('-spam -"bulk mail"'))).toMatch(/not excluded/);
  });
});

describe('search index', () => {
  let store: Store;
  let userId: string;
  let conn: string;
  beforeEach(() => {
    store = openStore(dir);
    userId = store.users.create('alice').id;
    conn = store.connections.insert({ id: '11111111-2222-4333-8444-555555555555', userId, name: null, workerId: 'local' }).id;
  });
  afterEach(() => store.close());

  const put = (m: StoredMessage, c = conn) => store.tx(() => store.messages.upsert(c, m));
  const ids = (q: string, f: Partial<Parameters<Store['search']['search']>[1]> = {}, order: 'recent' | 'relevance' = 'recent') =>
    store.search.search(q, { connectionIds: [conn], ...f }, { limit: 50, order }).hits.map((h) => h.messageId.split('_').pop());

  it('finds words, phrases, prefixes, without case or diacritics, in non-Latin scripts, captions and file names', () => {
    put(incomingText(CHAT, 'a', 100, 'The invoice for São Paulo is due'));
    put(incomingText(CHAT, 'b', 101, 'invoice draft, do not pay'));
    put(incomingText(CHAT, 'c', 102, 'Встреча в Москве завтра'));
    put(incomingText(CHAT, 'd', 103, '明日は東京タワーに行きます'));
    put({ ...incomingText(CHAT, 'e', 104, 'holiday photo'), type: 'image', media: { url: '/x', mimetype: 'image/jpeg', filename: null, size: 1 } });
    put({ ...incomingText(CHAT, 'f', 105, ''), type: 'document', media: { url: '/y', mimetype: 'application/pdf', filename: 'Quarterly_Report-2026.pdf', size: 1 } });
    expect(ids('invoice')).toEqual(['b', 'a']);
    expect(ids('INVOICE -draft')).toEqual(['a']);
    expect(ids('"is due"')).toEqual(['a']);
    expect(ids('"due is"')).toEqual([]);
    expect(ids('invo*')).toEqual(['b', 'a']);
    expect(ids('sao paulo')).toEqual(['a']);
    expect(ids('москве')).toEqual(['c']);
    expect(ids('東京')).toEqual(['d']);
    expect(ids('タワー')).toEqual(['d']);
    expect(ids('photo')).toEqual(['e']);
    expect(ids('quarterly report')).toEqual(['f']);
    const hit = store.search.search('sao', { connectionIds: [conn] }, { limit: 5, order: 'recent' }).hits[0]!;
    expect(hit.snippet).toBe('The invoice for «São» Paulo is due');
    expect(store.search.search('東京', { connectionIds: [conn] }, { limit: 5, order: 'recent' }).hits[0]!.snippet).toBe('明日は«東京»タワーに行きます');
  });

  it('follows edits, revokes and a stopped connection, in the message transaction', () => {
    put(incomingText(CHAT, 'a', 100, 'meet at the station'));
    expect(ids('station')).toEqual(['a']);
    store.tx(() => store.messages.edit(conn, `false_${CHAT}_a`, 'meet at the harbour', 200));
    expect(ids('station')).toEqual([]);
    expect(ids('harbour')).toEqual(['a']);
    put(incomingText(CHAT, 'a', 100, 'meet at the airport')); // a later copy of the same message replaces its text
    expect(ids('harbour')).toEqual([]);
    expect(ids('airport')).toEqual(['a']);
    store.tx(() => store.messages.revoke(conn, `false_${CHAT}_a`));
    expect(ids('airport')).toEqual([]);
    // a rolled-back write leaves the index as it was
    expect(() =>
      store.tx(() => {
        store.messages.upsert(conn, incomingText(CHAT, 'z', 300, 'rolled back words'));
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(ids('rolled')).toEqual([]);
    put(incomingText(CHAT, 'b', 101, 'still here'));
    store.tx(() => store.connections.setStatus(conn, 'stopped', null));
    expect(ids('still')).toEqual([]);
  });

  it('filters by chat, sender, type, direction, time, and pages with nextBefore in both orders', () => {
    for (let i = 0; i < 30; i++) {
      const m = incomingText(i % 2 ? CHAT : OTHER, `k${i}`, 1000 + Math.floor(i / 3), `lunch number ${i}${i === 7 ? ' lunch lunch lunch' : ''}`);
      put(i % 5 === 0 ? { ...m, fromMe: true, id: m.id.replace('false_', 'true_') } : m);
    }
    expect(ids('lunch', { chatId: CHAT }).length).toBe(15);
    expect(ids('lunch', { senderJid: OTHER }).length).toBe(15);
    expect(ids('lunch', { fromMe: true })).toEqual(['k25', 'k20', 'k15', 'k10', 'k5', 'k0']);
    expect(ids('lunch', { type: 'image' })).toEqual([]);
    expect(ids('lunch', { since: 1005, until: 1006 })).toEqual(['k20', 'k19', 'k18', 'k17', 'k16', 'k15']);
    expect(ids('lunch', {}, 'relevance')[0]).toBe('k7');
    for (const order of ['recent', 'relevance'] as const) {
      const seen: string[] = [];
      let before: string | undefined;
      do {
        const page = store.search.search('lunch', { connectionIds: [conn] }, { limit: 7, order, ...(before && { before }) });
        seen.push(...page.hits.map((h) => h.messageId));
        before = page.nextBefore ?? undefined;
      } while (before);
      expect(new Set(seen).size).toBe(30);
      if (order === 'recent') expect(seen.map((s) => s.split('_').pop())).toEqual(ids('lunch'));
    }
    expect(badRequest(() => store.search.search('lunch', { connectionIds: [conn] }, { limit: 5, order: 'recent', before: 'garbage' }))).toMatch(/cursor/);
  });

  it('ranks by relevance within the most recent RELEVANCE_WINDOW matches, the same window on every page', () => {
    store.tx(() => {
      store.messages.upsert(conn, incomingText(CHAT, 'oldest', 10, 'alpha alpha alpha')); // the best match, but old
      for (let i = 0; i < RELEVANCE_WINDOW + 50; i++) store.messages.upsert(conn, incomingText(CHAT, `k${i}`, 100 + i, `alpha and some other words ${i}`));
    });
    const seen = new Set<string>();
    let before: string | undefined;
    let first: string | undefined;
    do {
      const page = store.search.search('alpha', { connectionIds: [conn] }, { limit: 100, order: 'relevance', ...(before && { before }) });
      first ??= page.hits[0]!.messageId;
      for (const h of page.hits) seen.add(h.messageId);
      before = page.nextBefore ?? undefined;
      if (seen.size === 100) put(incomingText(CHAT, 'late', 99_999, 'alpha alpha alpha alpha')); // arrives mid-paging
    } while (before);
    expect(seen.size).toBe(RELEVANCE_WINDOW);
    expect(seen.has(`false_${CHAT}_oldest`)).toBe(false);
    expect(seen.has(`false_${CHAT}_late`)).toBe(false);
    expect(first).not.toBe(`false_${CHAT}_oldest`);
    expect(ids('"alpha alpha"', {}, 'relevance')).toEqual(['late', 'oldest']);
  });

  it('pages around a message and forward with after, and iterates a chat oldest first', () => {
    for (let i = 0; i < 100; i++) put(incomingText(CHAT, `k${i}`, 5000 + Math.floor(i / 4), `message ${i}`));
    const at = store.messages.positionOf(conn, CHAT, `false_${CHAT}_k50`)!;
    const around = store.messages.pageAround(conn, CHAT, 11, at);
    expect(around.messages.map((m) => m.text)).toEqual(Array.from({ length: 11 }, (_, i) => `message ${55 - i}`));
    const older = store.messages.page(conn, CHAT, 10, decodeCursor(around.nextBefore!));
    expect(older.messages[0]!.text).toBe('message 44');
    const newer = store.messages.pageAfter(conn, CHAT, 10, decodeCursor(around.nextAfter!)!);
    expect(newer.messages.map((m) => m.text)).toEqual(Array.from({ length: 10 }, (_, i) => `message ${65 - i}`));
    const top = store.messages.pageAround(conn, CHAT, 11, store.messages.positionOf(conn, CHAT, `false_${CHAT}_k98`)!);
    expect(top.nextAfter).toBeNull();
    expect(top.messages[0]!.text).toBe('message 99');
    expect(store.messages.positionOf(conn, OTHER, `false_${CHAT}_k50`)).toBeUndefined();
    const all = [...store.messages.iterate(conn, CHAT, { batch: 7 })].map((m) => m.text);
    expect(all).toEqual(Array.from({ length: 100 }, (_, i) => `message ${i}`));
    expect([...store.messages.iterate(conn, CHAT, { since: 5010, until: 5011, batch: 3 })].length).toBe(8);
  });
});

describe('migration of a database from before the index', () => {
  it('indexes the stored messages in the background, resuming after an interruption and a held write lock', async () => {
    // The schema as it was before the search migration, with messages in it.
    const file = path.join(dir, 'switchboard.db');
    const old = new Database(file);
    const before = migrations.findIndex((m) => m.includes('CREATE VIRTUAL TABLE message_search')); // the schema version before it
    for (let v = 0; v < before; v++) old.exec(migrations[v]!);
    old.pragma(`user_version = ${before}`);
    old.pragma(`application_id = ${0x53574244}`);
    old.exec(`INSERT INTO users (id, kind, name, created_at) VALUES ('u1', 'local', 'old', '2026-01-01')`);
    old.exec(`INSERT INTO connections (id, user_id, worker_id, session_name, status, created_at, updated_at)
              VALUES ('c1', 'u1', 'local', 's1', 'connected', '2026-01-01', '2026-01-01')`);
    const ins = old.prepare(`INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, type, text, seq)
                             VALUES ('c1', ?, ?, ?, 0, ?, ?, 'text', ?, ?)`);
    for (let i = 1; i <= 250; i++) ins.run(`false_${CHAT}_o${i}`, CHAT, `o${i}`, 1000 + i, CHAT, `archived note ${i} Ångström`, i);
    old.close();

    const logs: string[] = [];
    const logger = { info: (_: unknown, msg: string) => logs.push(msg), error: (_: unknown, msg: string) => logs.push(msg) };
    let store = openStore(dir);
    // interrupted after the first batches
    const first = startSearchBackfill({ store, logger, batch: 40 });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    first.stop();
    await first.done;
    const partial = store.search.search('archived', { connectionIds: ['c1'] }, { limit: 100, order: 'recent' }).hits.length;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(100);
    store.close();

    // resumed while another connection holds the write lock: the batch that cannot get it is tried again
    store = openStore(dir, { busyTimeoutMs: 50 });
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    const second = startSearchBackfill({ store, logger, batch: 40 });
    await new Promise((r) => setTimeout(r, 200));
    other.exec('ROLLBACK');
    other.close();
    await second.done;
    expect(logs.filter((l) => l.includes('failed'))).toEqual([]);
    const found = (q: string) => store.search.search(q, { connectionIds: ['c1'] }, { limit: 100, order: 'recent' });
    expect(found('angstrom').hits.length).toBe(100);
    expect(found('"note 250"').hits.map((h) => h.messageId)).toEqual([`false_${CHAT}_o250`]);
    expect(found('"note 1"').hits.map((h) => h.messageId)).toEqual([`false_${CHAT}_o1`]);
    expect(store.db.prepare(`SELECT count(*) AS n FROM message_search`).get()).toEqual({ n: 250 });
    expect(store.db.prepare(`SELECT value FROM settings WHERE key = 'search.backfill'`).get()).toBeUndefined();
    expect(logs).toContain('search index: all stored messages indexed');
    store.close();
  });
});
