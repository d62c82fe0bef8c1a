/**
 * The chat list rendered by SQLite (`store.chats.listJson`, db/chats.ts) is byte for byte what the route's response
 * serializer writes for `store.chats.list`: over a real SQLite file with chats named, unnamed, known by a contact's
 * name or push name only, without any message, in odd shapes left by SQL (REAL timestamps, ids without `@`), and
 * names full of what JSON must escape; for every filter and page.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../service/db/store.ts';
import { ChatSchema } from '../../service/http/routes/chats.ts';
import { compileSerializer } from '../../service/http/serializer.ts';

const CONNECTION = '11111111-2222-4333-8444-555555555555';
const serialize = compileSerializer(Type.Array(ChatSchema));
const TRICKY = ['"', '\\', '\n', '\u0000', '\u001f', '\u2028', 'é', '😀', '\ud800', '%', '_', '@', 'a', 'B', '5'];

let dir: string;
let store: Store;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-cjson-'));
  store = openStore(dir);
  const userId = store.users.create('alice').id;
  store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function fill(n: number, seed: number): void {
  let s = seed;
  const rnd = (k: number) => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s % k);
  const str = (max: number) => Array.from({ length: rnd(max + 1) }, () => TRICKY[rnd(TRICKY.length)]).join('');
  store.tx(() => {
    for (let i = 0; i < n; i++) {
      const id = i % 10 === 9 ? `1203630000${i}@g.us` : `1555${String(1000 + i)}@s.whatsapp.net`;
      const isGroup = id.endsWith('@g.us');
      store.chats.upsertMeta(CONNECTION, { id, name: rnd(3) === 0 ? str(8) : null, isGroup, ...(rnd(4) === 0 && { activityTs: 1_700_000_000 + rnd(50) }) });
      if (rnd(4) !== 0) {
        // Several chats share a second: the id decides among them.
        store.chats.touch(CONNECTION, { chatId: id, isGroup, timestamp: 1_700_000_000 + rnd(30), body: str(12), fromMe: rnd(2) === 0, unreadDelta: rnd(3) });
      }
      if (rnd(2) === 0) store.contacts.upsert(CONNECTION, rnd(2) ? { jid: id, name: str(6) } : { jid: id, pushName: str(6) });
    }
    store.chats.touch(CONNECTION, { chatId: 'status@broadcast', isGroup: false, timestamp: 1_700_000_100, body: 'status', fromMe: false, unreadDelta: 1 });
    // Shapes only SQL leaves.
    store.db.prepare(`INSERT INTO chats (connection_id, id, is_group, unread, last_ts, last_body, last_from_me) VALUES (?, 'no-at-sign', 2, 3, 1700000010.75, NULL, 2)`).run(CONNECTION);
  });
}

function compare(): number {
  let lists = 0;
  for (const q of [undefined, '', '  ', 'a', '%', '_', '+1555', '1555100', 'é', '"']) {
    for (const unreadOnly of [false, true]) {
      for (const includeStatus of [false, true]) {
        for (const [limit, offset] of [[50, 0], [500, 0], [3, 0], [3, 7], [50, 1000]] as const) {
          const opts = { limit, offset, unreadOnly, includeStatus, q };
          expect(store.chats.listJson(CONNECTION, opts)).toBe(serialize(store.chats.list(CONNECTION, opts)));
          lists++;
        }
      }
    }
  }
  return lists;
}

describe('the chat list rendered by SQLite', () => {
  it('is the bytes the response serializer writes for the same list, for every filter and page', () => {
    fill(60, 16);
    expect(compare()).toBe(200);
    expect(JSON.parse(store.chats.listJson(CONNECTION, { limit: 500, offset: 0, unreadOnly: false, includeStatus: true }))).toHaveLength(62);
  });

  it('lists by last activity, newest first, the id deciding ties, chats without any activity last', () => {
    fill(60, 7);
    const rows = store.db.prepare('SELECT id, last_ts FROM chats WHERE connection_id = ?').all(CONNECTION) as Array<{ id: string; last_ts: number | null }>;
    const expected = rows
      .sort((a, b) => (a.last_ts === null ? 1 : 0) - (b.last_ts === null ? 1 : 0) || (b.last_ts ?? 0) - (a.last_ts ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => r.id);
    expect(rows.filter((r) => r.last_ts === null).length).toBeGreaterThan(0);
    const listed = (limit: number, offset: number) => store.chats.list(CONNECTION, { limit, offset, unreadOnly: false, includeStatus: true }).map((c) => c.id);
    expect(listed(500, 0)).toEqual(expected);
    expect([...listed(7, 0), ...listed(7, 7), ...listed(500, 14)]).toEqual(expected);
  });

  it('matches for other random chats, and for none', () => {
    expect(store.chats.listJson(CONNECTION, { limit: 50, offset: 0, unreadOnly: false })).toBe('[]');
    for (const seed of [1, 2]) {
      store.db.prepare('DELETE FROM chats').run();
      store.db.prepare('DELETE FROM contacts').run();
      fill(25, seed);
      compare();
    }
  });
});
