/**
 * The chat list rendered by SQLite (`store.chats.listJson`, db/chats.ts) is byte for byte what the route's response
 * serializer writes for `store.chats.list`: over a real SQLite file with chats named, unnamed, known by a contact's
 * name or push name only, without any message, in odd shapes left by SQL (REAL timestamps, ids without `@`), and
 * names full of what JSON must escape; for every filter and page. Both follow edits and revokes of a chat's last
 * message (issue 25 item 2), and only of that message.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MESSAGE_KINDS, messageIdOf, type StoredMessage } from '../../service/db/messages.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { ChatSchema } from '../../service/http/routes/chats.ts';
import { compileSerializer } from '../../service/http/serializer.ts';
import { incomingText } from '../helpers/messages.ts';

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
        const kind = MESSAGE_KINDS[rnd(MESSAGE_KINDS.length)]!;
        const messageId = `${rnd(2) === 0}_${id}_${str(6)}`;
        store.chats.touch(CONNECTION, { chatId: id, isGroup, messageId, kind, timestamp: 1_700_000_000 + rnd(30), body: str(12), fromMe: rnd(2) === 0, unreadDelta: rnd(3) });
      }
      if (rnd(2) === 0) store.contacts.upsert(CONNECTION, rnd(2) ? { jid: id, name: str(6) } : { jid: id, pushName: str(6) });
    }
    store.chats.touch(CONNECTION, { chatId: 'status@broadcast', isGroup: false, messageId: 'false_status@broadcast_S', kind: 'image', timestamp: 1_700_000_100, body: 'status', fromMe: false, unreadDelta: 1 });
    // Shapes only SQL leaves.
    store.db.prepare(`INSERT INTO chats (connection_id, id, is_group, unread, last_ts, last_body, last_from_me) VALUES (?, 'no-at-sign', 2, 3, 1700000010.75, NULL, 2)`).run(CONNECTION);
    // A preview from before chats.last_id whose message the migration did not find: id and kind null.
    store.db.prepare(`INSERT INTO chats (connection_id, id, is_group, unread, last_ts, last_body, last_from_me) VALUES (?, 'legacy@s.whatsapp.net', 0, 0, 1700000011, 'old', 1)`).run(CONNECTION);
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
    expect(JSON.parse(store.chats.listJson(CONNECTION, { limit: 500, offset: 0, unreadOnly: false, includeStatus: true }))).toHaveLength(63);
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

describe('the preview of a chat (lastMessage)', () => {
  const ALICE = '15550101@s.whatsapp.net';
  const GROUP = '120363000000000001@g.us';
  /** Stores `m` and records it in its chat as session-ingest does. */
  const store1 = (m: StoredMessage) =>
    store.tx(() => {
      store.messages.upsert(CONNECTION, m);
      store.chats.touch(CONNECTION, { chatId: m.chatId, isGroup: m.chatId.endsWith('@g.us'), messageId: m.id, kind: m.kind, timestamp: m.timestamp, body: m.text, fromMe: m.fromMe, unreadDelta: 0 });
    });
  const own = (chatId: string, keyId: string, timestamp: number, text: string): StoredMessage => ({
    ...incomingText(chatId, keyId, timestamp, text),
    id: messageIdOf(true, chatId, keyId),
    fromMe: true,
    senderJid: '15550100@s.whatsapp.net',
  });
  /** Each chat's lastMessage, after checking that both renderings agree. */
  const previews = () => {
    const opts = { limit: 50, offset: 0, unreadOnly: false };
    const json = store.chats.listJson(CONNECTION, opts);
    expect(json).toBe(serialize(store.chats.list(CONNECTION, opts)));
    return Object.fromEntries((JSON.parse(json) as Array<{ id: string; lastMessage: unknown }>).map((c) => [c.id, c.lastMessage]));
  };

  it('takes the new text of an edited last message and empties for a revoked one; other messages leave it alone', () => {
    const a1 = incomingText(ALICE, 'A1', 100, 'first');
    const a2 = incomingText(ALICE, 'A2', 200, 'second');
    const g1 = own(GROUP, 'G1', 150, 'mine');
    const g2 = own(GROUP, 'G2', 150, 'mine too'); // same second: the later arrival is the preview
    for (const m of [a1, a2, g1, g2]) store1(m);
    expect(previews()).toEqual({
      [ALICE]: { body: 'second', timestamp: 200, fromMe: false, id: a2.id, kind: 'text' },
      [GROUP]: { body: 'mine too', timestamp: 150, fromMe: true, id: g2.id, kind: 'text' },
    });

    // Edits and revokes of messages that are not the preview change nothing.
    store.tx(() => {
      store.messages.edit(CONNECTION, a1.id, 'first, edited', 300);
      store.messages.edit(CONNECTION, g1.id, 'mine, edited', 300);
      store.messages.revoke(CONNECTION, a1.id);
      store.messages.revoke(CONNECTION, g1.id);
    });
    expect(previews()).toEqual({
      [ALICE]: { body: 'second', timestamp: 200, fromMe: false, id: a2.id, kind: 'text' },
      [GROUP]: { body: 'mine too', timestamp: 150, fromMe: true, id: g2.id, kind: 'text' },
    });

    // The preview follows an edit of its message (each of them), then its revoke: no text, kind revoked, same time.
    store.tx(() => store.messages.edit(CONNECTION, a2.id, 'second, edited', 300));
    store.tx(() => store.messages.edit(CONNECTION, a2.id, 'second, edited again', 310));
    store.tx(() => store.messages.edit(CONNECTION, g2.id, 'mine too, edited', 300));
    expect(previews()).toEqual({
      [ALICE]: { body: 'second, edited again', timestamp: 200, fromMe: false, id: a2.id, kind: 'text' },
      [GROUP]: { body: 'mine too, edited', timestamp: 150, fromMe: true, id: g2.id, kind: 'text' },
    });
    store.tx(() => {
      store.messages.revoke(CONNECTION, a2.id);
      store.messages.revoke(CONNECTION, g2.id);
    });
    expect(previews()).toEqual({
      [ALICE]: { body: '', timestamp: 200, fromMe: false, id: a2.id, kind: 'revoked' },
      [GROUP]: { body: '', timestamp: 150, fromMe: true, id: g2.id, kind: 'revoked' },
    });

    // A newer message replaces the revoked preview as before.
    const a3 = incomingText(ALICE, 'A3', 400, 'third');
    store1(a3);
    expect(previews()[ALICE]).toEqual({ body: 'third', timestamp: 400, fromMe: false, id: a3.id, kind: 'text' });
  });

  it('leaves another connection\'s chat with the same message id alone', () => {
    const other = '99999999-2222-4333-8444-555555555555';
    store.connections.insert({ id: other, userId: store.users.create('bob').id, name: null, workerId: 'local' });
    const m = incomingText(ALICE, 'SAME', 100, 'hello');
    store1(m);
    store.tx(() => {
      store.messages.upsert(other, m);
      store.chats.touch(other, { chatId: ALICE, isGroup: false, messageId: m.id, kind: 'text', timestamp: 100, body: 'hello', fromMe: false, unreadDelta: 0 });
    });
    store.tx(() => store.messages.revoke(other, m.id));
    expect(previews()[ALICE]).toMatchObject({ body: 'hello', kind: 'text' });
    expect(store.chats.list(other, { limit: 5, offset: 0, unreadOnly: false })[0]!.lastMessage).toMatchObject({ body: '', kind: 'revoked' });
  });
});
