/**
 * Pages of messages rendered by SQLite (db/message-json.ts, `store.messages.rendered`, assembled by the route's
 * `pageJson`) are byte for byte what the response serializer writes for the same pages read as Message objects
 * (`store.messages.page`/`pageAfter`/`pageAround`): over a real SQLite file holding rows written by the store and
 * rows in shapes only older builds or hand edits leave (REAL numbers, legacy media URLs, odd file names), with
 * strings full of what JSON must escape.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../service/db/messages.ts';
import { storedText } from '../helpers/messages.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { PageSchema, pageJson } from '../../service/http/routes/messages.ts';
import { compileSerializer } from '../../service/http/serializer.ts';

const CHAT = '15550101@s.whatsapp.net';
const CONNECTION = '11111111-2222-4333-8444-555555555555';
const serializePage = compileSerializer(PageSchema);

/** Deterministic pseudo-random numbers (a linear congruential generator), so a failure can be replayed. */
function lcg(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

/** Characters JSON treats specially, and some that it does not but encoders often get wrong. */
const TRICKY = ['"', '\\', '/', '\n', '\r', '\t', '\b', '\f', '\u0000', '\u0001', '\u001f', '\u007f', '\u2028', '\u2029', 'é', '😀', '\ud800', '\udfff', '<', "'", ' ', 'a', 'Z', '0'];

let dir: string;
let store: Store;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-mjson-'));
  store = openStore(dir);
  const userId = store.users.create('alice').id;
  store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
  store.mediaUrls.setBase('http://127.0.0.1:7575/api');
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function base(i: number, text: string, over: Partial<StoredMessage> = {}): StoredMessage {
  const keyId = over.keyId ?? `K${String(i).padStart(4, '0')}`;
  const fromMe = over.fromMe ?? i % 3 === 0;
  // three per second: ties ordered by arrival
  return storedText(CHAT, keyId, 1_700_000_000 + Math.floor(i / 3), text, fromMe, over);
}

/** Writes a chat of `n` messages of every kind the store writes, plus rows in shapes only SQL can leave. */
function fillChat(n: number, seed: number): void {
  const rnd = lcg(seed);
  const str = (max: number) => Array.from({ length: rnd(max + 1) }, () => TRICKY[rnd(TRICKY.length)]).join('');
  const media = (file: string) => ({ url: `http://127.0.0.1:7575/api/connections/${CONNECTION}/media/${encodeURIComponent(file)}`, mimetype: 'image/jpeg', filename: rnd(2) ? null : str(8), size: rnd(2) ? null : rnd(100_000) });
  for (let i = 0; i < n; i++) {
    const variant = i % 12;
    const m = base(i, str(24), {
      senderPushName: str(6),
      quotedMessageId: rnd(4) === 0 ? `false_${CHAT}_Q${i}` : null,
      mentions: rnd(3) === 0 ? ['15550102@s.whatsapp.net', str(5)] : [],
      isForwarded: rnd(4) === 0,
      ...(variant === 1 && { type: 'image', kind: 'image', media: media(`K${i}.jpg`) }),
      ...(variant === 2 && { type: 'image', kind: 'image', media: media(`K ${i} ü%/.jpg`) }), // escaped in the URL: JavaScript renders it
      ...(variant === 3 && { type: 'location', kind: 'location', location: { latitude: 52.52 + i / 7, longitude: -0.1, name: str(5), address: null, url: null, isLive: false } }),
      ...(variant === 4 && { kind: 'unsupported', rawType: 'eventMessage' }),
      ...(variant === 5 && { type: 'image', kind: 'image', albumId: `true_${CHAT}_ALBUM`, media: media(`A${i}.png`) }),
      ...(variant === 6 && { type: 'contact', kind: 'contact', contacts: [{ name: str(4), phoneNumbers: ['+15550109'], vcard: `BEGIN:VCARD\n${str(6)}\nEND:VCARD` }] }),
    });
    store.messages.upsert(CONNECTION, m);
    if (variant === 7) store.messages.edit(CONNECTION, m.id, str(10), m.timestamp + 5);
    if (variant === 8 || variant === 1) {
      store.messages.react(CONNECTION, m.id, '15550102@s.whatsapp.net', str(2) || '👍', m.timestamp + 2);
      store.messages.react(CONNECTION, m.id, '15550100@s.whatsapp.net', '❤️', m.timestamp + 2); // same second: by sender
      store.messages.react(CONNECTION, m.id, '15550103@s.whatsapp.net', '😂', m.timestamp + 1);
    }
    if (variant === 9) store.messages.revoke(CONNECTION, m.id);
  }
  // Shapes the current write path does not produce, but older builds or edits may have left.
  const set = (sql: string, i: number) => store.db.prepare(`UPDATE messages SET ${sql} WHERE connection_id = ? AND key_id = ?`).run(CONNECTION, `K${String(i).padStart(4, '0')}`);
  set(`media = '{"url":"/api/connections/${CONNECTION}/media/K0010.jpg","mimetype":"image/jpeg","filename":null,"size":5}'`, 10); // before issue 17
  set(`media = '{"file":"K0013.jpg","mimetype":"image/jpeg","filename":"x.jpg","size":123456789012345678901}'`, 13); // past 2^53
  set(`ack = 2.0, edited_at = 1700000009.0`, 14); // REALs with integer values (stored as INTEGER by the column's affinity)
  set(`mentions = ''`, 15);
  set(`is_forwarded = 2`, 16); // not 1: false, as the record maps it
  set(`timestamp = timestamp + 0.5`, 17); // a REAL timestamp
}

/** Every page a client can reach: paging back from the top, forward from each cursor, around each message. */
function comparePages(limits: number[]): { pages: number; sqlRendered: number; jsRendered: number } {
  let pages = 0;
  let sqlRendered = 0;
  let jsRendered = 0;
  const same = (rendered: Parameters<typeof pageJson>[0], objects: unknown) => {
    expect(pageJson(rendered)).toBe(serializePage(objects));
    for (const m of rendered.messages) {
      if (typeof m === 'string') sqlRendered++;
      else jsRendered++;
    }
    pages++;
  };
  const { rendered, ...objects } = store.messages;
  for (const limit of limits) {
    let before;
    do {
      const r = rendered.page(CONNECTION, CHAT, limit, before);
      same(r, objects.page(CONNECTION, CHAT, limit, before));
      if (r.nextBefore) {
        const at = decode(r.nextBefore);
        same(rendered.pageAfter(CONNECTION, CHAT, limit, at), objects.pageAfter(CONNECTION, CHAT, limit, at));
      }
      before = r.nextBefore ? decode(r.nextBefore) : undefined;
    } while (before);
  }
  const ids = store.db.prepare(`SELECT id FROM messages WHERE connection_id = ? AND chat_id = ?`).pluck().all(CONNECTION, CHAT) as string[];
  for (const id of ids) {
    const at = objects.positionOf(CONNECTION, CHAT, id)!;
    same(rendered.pageAround(CONNECTION, CHAT, 5, at), objects.pageAround(CONNECTION, CHAT, 5, at));
  }
  return { pages, sqlRendered, jsRendered };
}

function decode(cursor: string) {
  const [timestamp, seq] = Buffer.from(cursor, 'base64url').toString('utf8').split(':').map(Number);
  return { timestamp: timestamp!, seq: seq! };
}

describe('messages rendered by SQLite', () => {
  it('are the bytes the response serializer writes for the same pages, over every kind of row', () => {
    fillChat(120, 16);
    const { pages, sqlRendered, jsRendered } = comparePages([1, 7, 50, 500]);
    expect(pages).toBeGreaterThan(200);
    // Both paths ran: the common rows in SQL, structured content and unusual media in JavaScript.
    expect(sqlRendered).toBeGreaterThan(jsRendered);
    expect(jsRendered).toBeGreaterThan(0);
  });

  it('match for other random chats too', () => {
    for (const seed of [1, 2, 3]) {
      store.db.prepare(`DELETE FROM messages`).run();
      store.db.prepare(`DELETE FROM message_reactions`).run();
      fillChat(40, seed);
      comparePages([3, 50]);
    }
  });

  it('render an empty chat and the end of history like the serializer', () => {
    const { rendered, ...objects } = store.messages;
    expect(pageJson(rendered.page(CONNECTION, 'nobody@s.whatsapp.net', 50))).toBe('{"messages":[],"nextBefore":null,"historyStartsAt":null}');
    fillChat(3, 9);
    expect(pageJson(rendered.page(CONNECTION, CHAT, 50))).toBe(serializePage(objects.page(CONNECTION, CHAT, 50)));
    expect(JSON.parse(pageJson(rendered.page(CONNECTION, CHAT, 50))).historyStartsAt).toBe(1_700_000_000);
  });
});
