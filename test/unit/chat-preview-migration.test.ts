/**
 * The chat-preview migration (issue 25 item 2) on a real SQLite file written with the schema before it: chats whose
 * preview an edit or a revoke had left stale get their message's current text (revoked: "" and kind `revoked`), the
 * preview's message is found among several in the same second, previews that were right stay as they are, and
 * afterwards the previews follow edits and revokes of their message; both renderings of the list agree throughout.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../service/db/database.ts';
import { migrations } from '../../service/db/migrations.ts';
import { createStore } from '../../service/db/store.ts';
import { ChatSchema } from '../../service/http/routes/chats.ts';
import { compileSerializer } from '../../service/http/serializer.ts';

/** Index of the chat-preview migration, found by content so the test survives migrations appended after it. */
const PREVIEW = migrations.findIndex((m) => m.includes('ADD COLUMN last_id'));
const CONNECTION = 'c1';
const serialize = compileSerializer(Type.Array(ChatSchema));

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-preview-migration-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A database file at the schema just before the chat-preview migration, as openDatabase would have left it. */
function oldDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  for (let v = 0; v < PREVIEW; v++) db.exec(migrations[v]!);
  db.pragma(`user_version = ${PREVIEW}`);
  db.pragma(`application_id = ${0x53574244}`);
  return db;
}

const at = '2026-01-01T00:00:00.000Z';

/** Rows as the service of before wrote them: messages (edited / revoked in place) and chats with their preview. */
function seed(db: Database.Database): void {
  db.prepare(`INSERT INTO users (id, kind, name, created_at) VALUES ('u1', 'local', 'ops', ?)`).run(at);
  db.prepare(
    `INSERT INTO connections (id, user_id, worker_id, session_name, status, created_at, updated_at) VALUES (?, 'u1', 'w', 's', 'online', ?, ?)`,
  ).run(CONNECTION, at, at);
  let seq = 0;
  const message = db.prepare(
    `INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, type, kind, text, edited_at, seq)
     VALUES (@c, @id, @chat, @key, @fromMe, @ts, @chat, 'text', @kind, @text, @editedAt, @seq)`,
  );
  const msg = (chat: string, key: string, ts: number, text: string, o: { fromMe?: boolean; kind?: string; editedAt?: number } = {}) => {
    const id = `${o.fromMe ?? false}_${chat}_${key}`;
    message.run({ c: CONNECTION, id, chat, key, fromMe: o.fromMe ? 1 : 0, ts, kind: o.kind ?? 'text', text, editedAt: o.editedAt ?? null, seq: ++seq });
    return id;
  };
  const edit = db.prepare(`INSERT INTO message_edits (connection_id, message_id, edited_at, previous_text, text) VALUES (?, ?, ?, ?, ?)`);
  const chat = db.prepare(
    `INSERT INTO chats (connection_id, id, is_group, unread, last_ts, last_body, last_from_me) VALUES (?, ?, ?, 0, ?, ?, ?)`,
  );

  // edited: the preview kept the first text through two edits
  const e = msg('1001@s.whatsapp.net', 'E1', 100, 'third text', { editedAt: 130 });
  edit.run(CONNECTION, e, 120, 'first text', 'second text');
  edit.run(CONNECTION, e, 130, 'second text', 'third text');
  chat.run(CONNECTION, '1001@s.whatsapp.net', 0, 100, 'first text', 0);

  // revoked (own message, in a group): the preview kept the deleted text
  msg('120363000000000001@g.us', 'OLD', 90, 'older', { fromMe: true });
  msg('120363000000000001@g.us', 'R1', 100, '', { fromMe: true, kind: 'revoked' });
  chat.run(CONNECTION, '120363000000000001@g.us', 1, 100, 'the secret', 1);

  // right as it is; an older message of the chat was edited and another revoked
  const o1 = msg('1003@s.whatsapp.net', 'O1', 50, 'old, edited', { editedAt: 60 });
  edit.run(CONNECTION, o1, 60, 'old', 'old, edited');
  msg('1003@s.whatsapp.net', 'O2', 55, '', { kind: 'revoked' });
  msg('1003@s.whatsapp.net', 'O3', 70, 'newest');
  chat.run(CONNECTION, '1003@s.whatsapp.net', 0, 70, 'newest', 0);

  // two messages in the preview's second: the one with the preview's text, though it arrived first
  msg('1004@s.whatsapp.net', 'T1', 80, 'the preview');
  msg('1004@s.whatsapp.net', 'T2', 80, 'another in the same second');
  chat.run(CONNECTION, '1004@s.whatsapp.net', 0, 80, 'the preview', 0);

  // two in the same second, the preview's one revoked since: the revoked one, not the other
  msg('1005@s.whatsapp.net', 'S1', 80, '', { kind: 'revoked' });
  msg('1005@s.whatsapp.net', 'S2', 80, 'not the preview');
  chat.run(CONNECTION, '1005@s.whatsapp.net', 0, 80, 'gone', 0);

  // two in the same second from different sides: the preview's side decides
  msg('1006@s.whatsapp.net', 'D1', 80, 'edited', { fromMe: true, editedAt: 85 });
  edit.run(CONNECTION, 'true_1006@s.whatsapp.net_D1', 85, 'x', 'edited');
  msg('1006@s.whatsapp.net', 'D2', 80, 'theirs');
  chat.run(CONNECTION, '1006@s.whatsapp.net', 0, 80, 'x', 1);

  // known from history-sync metadata only, and a preview whose message is not stored
  chat.run(CONNECTION, '1007@s.whatsapp.net', 0, 1_600_000_000, null, null);
  chat.run(CONNECTION, '1008@s.whatsapp.net', 0, 40, 'not stored', 0);
}

describe('chat-preview migration', () => {
  it('exists', () => expect(PREVIEW).toBeGreaterThan(0));

  it('repairs stale previews from their message, finds it among several in a second, keeps the rest', () => {
    const file = path.join(dir, 'switchboard.db');
    const old = oldDatabase(file);
    seed(old);
    old.close();

    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(migrations.length);
    const store = createStore(db);
    const opts = { limit: 50, offset: 0, unreadOnly: false };
    const previews = () => {
      const json = store.chats.listJson(CONNECTION, opts);
      expect(json).toBe(serialize(store.chats.list(CONNECTION, opts)));
      return Object.fromEntries((JSON.parse(json) as Array<{ id: string; lastMessage: unknown }>).map((c) => [c.id, c.lastMessage]));
    };
    expect(previews()).toEqual({
      '1001@s.whatsapp.net': { body: 'third text', timestamp: 100, fromMe: false, id: 'false_1001@s.whatsapp.net_E1', kind: 'text' },
      '120363000000000001@g.us': { body: '', timestamp: 100, fromMe: true, id: 'true_120363000000000001@g.us_R1', kind: 'revoked' },
      '1003@s.whatsapp.net': { body: 'newest', timestamp: 70, fromMe: false, id: 'false_1003@s.whatsapp.net_O3', kind: 'text' },
      '1004@s.whatsapp.net': { body: 'the preview', timestamp: 80, fromMe: false, id: 'false_1004@s.whatsapp.net_T1', kind: 'text' },
      '1005@s.whatsapp.net': { body: '', timestamp: 80, fromMe: false, id: 'false_1005@s.whatsapp.net_S1', kind: 'revoked' },
      '1006@s.whatsapp.net': { body: 'edited', timestamp: 80, fromMe: true, id: 'true_1006@s.whatsapp.net_D1', kind: 'text' },
      '1007@s.whatsapp.net': { body: '', timestamp: 1_600_000_000, fromMe: false, id: null, kind: null },
      '1008@s.whatsapp.net': { body: 'not stored', timestamp: 40, fromMe: false, id: null, kind: null },
    });

    // From now on the previews follow their message.
    store.tx(() => store.messages.edit(CONNECTION, 'false_1004@s.whatsapp.net_T1', 'the preview, edited', 200));
    store.tx(() => store.messages.revoke(CONNECTION, 'false_1003@s.whatsapp.net_O3'));
    store.tx(() => store.messages.edit(CONNECTION, 'false_1004@s.whatsapp.net_T2', 'not the preview, edited', 200));
    const after = previews();
    expect(after['1004@s.whatsapp.net']).toMatchObject({ body: 'the preview, edited', kind: 'text' });
    expect(after['1003@s.whatsapp.net']).toMatchObject({ body: '', kind: 'revoked', timestamp: 70 });
    db.close();
  });

  it('leaves an empty database as it is', () => {
    const file = path.join(dir, 'switchboard.db');
    oldDatabase(file).close();
    const db = openDatabase(file);
    expect(db.prepare('SELECT COUNT(*) AS n FROM chats').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT last_id, last_kind FROM chats').columns().map((c) => c.name)).toEqual(['last_id', 'last_kind']);
    db.close();
  });
});
