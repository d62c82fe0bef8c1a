/**
 * Message-side storage contract on both engines: every method of the chats, contacts, group metadata and messages
 * repositories gives the same result on SQLite (service/db/*.ts) and PostgreSQL (service/db/pg/repos/*.ts) —
 * upsert and merge rules, ordering (code point order of ids, SQLite's NOCASE and LIKE), keyset pages and their
 * cursors, unread counters and previews, edits, reactions, poll votes, raw bytes — and the API JSON of chats and of
 * message pages is the same bytes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  decodeCursor,
  messageIdOf,
  rangeStart,
  type Message,
  type StoredMessage,
} from '../../service/db/messages.ts';
import { PageSchema, pageJson } from '../../service/http/routes/messages.ts';
import { compileSerializer } from '../../service/http/serializer.ts';
import type { Repos } from '../../service/db/store-api.ts';
import { CONNECTION, openEngines, type Engines } from './message-engines.ts';
import { storedText } from '../helpers/messages.ts';

const CHAT = '15550101@s.whatsapp.net';
const OTHER = '15550202@s.whatsapp.net';
const ME = '15550100@s.whatsapp.net';
const serializePage = compileSerializer(PageSchema);

let e: Engines;
beforeEach(async () => {
  e = await openEngines();
});
afterEach(async () => {
  await e.close();
});

/** Deterministic pseudo-random numbers (a linear congruential generator). */
function lcg(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

/** Characters JSON treats specially and some encoders get wrong (U+0000: see the NUL test). */
const TRICKY = [
  '"',
  '\\',
  '/',
  '\n',
  '\r',
  '\t',
  '\b',
  '\f',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u2028',
  '\u2029',
  'é',
  'É',
  '😀',
  '\ud800',
  '<',
  "'",
  ' ',
  'a',
  'Z',
  '0',
  '%',
  '_',
];

function msg(i: number, text: string, over: Partial<StoredMessage> = {}): StoredMessage {
  const keyId = over.keyId ?? `K${String(i).padStart(4, '0')}`;
  const fromMe = over.fromMe ?? i % 3 === 0;
  const chatId = over.chatId ?? CHAT;
  return storedText(chatId, keyId, 1_700_000_000 + Math.floor(i / 3), text, fromMe, over);
}

async function collect<T>(it: AsyncIterable<T> | Iterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('chats', () => {
  it('upsertMeta, touch, unread counters and previews give the same chats in the same order', async () => {
    await e.both(async (r) => {
      await r.chats.upsertMeta(CONNECTION, {
        id: 'b@s.whatsapp.net',
        isGroup: false,
        name: 'Bob',
        unread: 3,
        activityTs: 50,
      });
      await r.chats.upsertMeta(CONNECTION, { id: 'b@s.whatsapp.net', isGroup: false, lid: '99@lid', activityTs: 40 }); // older activity: kept 50
      await r.chats.upsertMeta(CONNECTION, { id: 'B@s.whatsapp.net', isGroup: false, activityTs: 70 });
      await r.chats.upsertMeta(CONNECTION, { id: 'é@s.whatsapp.net', isGroup: false });
      await r.chats.upsertMeta(CONNECTION, { id: 'a@s.whatsapp.net', isGroup: false });
      await r.chats.upsertMeta(CONNECTION, {
        id: '120363@g.us',
        isGroup: true,
        name: 'Team 100%_\\ done',
        unread: null,
      });
      await r.chats.upsertMeta(CONNECTION, { id: 'status@broadcast', isGroup: false, activityTs: 999 });
      await r.chats.touch(CONNECTION, {
        chatId: '120363@g.us',
        isGroup: true,
        messageId: 'm1',
        kind: 'text',
        timestamp: 60,
        body: 'first "quoted"\n',
        fromMe: false,
        unreadDelta: 1,
      });
      await r.chats.touch(CONNECTION, {
        chatId: '120363@g.us',
        isGroup: true,
        messageId: 'm0',
        kind: 'image',
        timestamp: 55,
        body: 'older',
        fromMe: false,
        unreadDelta: 1,
      });
      await r.chats.touch(CONNECTION, {
        chatId: '120363@g.us',
        isGroup: true,
        messageId: 'm2',
        kind: 'poll',
        timestamp: 60,
        body: 'same second \u2028😀',
        fromMe: true,
        unreadDelta: 0,
      });
      await r.chats.touch(CONNECTION, {
        chatId: 'new@s.whatsapp.net',
        isGroup: false,
        messageId: 'n1',
        kind: 'text',
        timestamp: 60,
        body: '',
        fromMe: false,
        unreadDelta: 2,
      });
      await r.chats.upsertMeta(CONNECTION, { id: '120363@g.us', isGroup: true, activityTs: 5000 }); // a stored message: activity ignored
      return null;
    });
    await e.both(async (r) => [
      await r.chats.unread(CONNECTION, '120363@g.us'),
      await r.chats.unread(CONNECTION, 'nobody@s.whatsapp.net'),
    ]);
    await e.both(async (r) => [
      await r.chats.setUnread(CONNECTION, 'b@s.whatsapp.net', 3),
      await r.chats.setUnread(CONNECTION, 'b@s.whatsapp.net', 1),
    ]);
    await e.both((r) => r.chats.markRead(CONNECTION, 'new@s.whatsapp.net'));
    await e.both((r) => r.contacts.upsert(CONNECTION, { jid: 'a@s.whatsapp.net', name: null, pushName: 'Ann 5550' }));
    await e.both((r) => r.contacts.upsert(CONNECTION, { jid: 'é@s.whatsapp.net', name: 'Émile' }));
    const queries = [
      undefined,
      '',
      ' ',
      'b',
      'B',
      'ann',
      'ANN',
      'émile',
      'ÉMILE',
      'émi',
      '+5550',
      '%',
      '_',
      '\\',
      '100%_\\',
      'g.us',
      'status',
      'x',
    ];
    for (const q of queries) {
      for (const flags of [{ unreadOnly: false }, { unreadOnly: true }, { unreadOnly: false, includeStatus: true }]) {
        for (const [limit, offset] of [
          [50, 0],
          [2, 1],
          [1, 5],
        ] as const) {
          const opts = { limit, offset, ...flags, q };
          await e.both((r) => r.chats.list(CONNECTION, opts));
          await e.both((r) => r.chats.listJson(CONNECTION, opts));
        }
      }
    }
    const all = await e.both((r) =>
      r.chats.list(CONNECTION, { limit: 50, offset: 0, unreadOnly: false, includeStatus: true }),
    );
    expect(all.map((c) => c.id)).toEqual([
      'status@broadcast',
      'B@s.whatsapp.net',
      '120363@g.us',
      'new@s.whatsapp.net',
      'b@s.whatsapp.net',
      'a@s.whatsapp.net',
      'é@s.whatsapp.net',
    ]);
    expect(all[2]!.lastMessage).toEqual({
      body: 'same second \u2028😀',
      timestamp: 60,
      fromMe: true,
      id: 'm2',
      kind: 'poll',
    });
  });

  it('previews follow the edit and the revoke of their message', async () => {
    const m = msg(1, 'hello');
    await e.both(async (r) => {
      await r.messages.upsert(CONNECTION, m);
      await r.chats.touch(CONNECTION, {
        chatId: CHAT,
        isGroup: false,
        messageId: m.id,
        kind: 'text',
        timestamp: m.timestamp,
        body: 'hello',
        fromMe: false,
        unreadDelta: 1,
      });
      await r.messages.edit(CONNECTION, m.id, 'hello again', m.timestamp + 9);
      const edited = await r.chats.list(CONNECTION, { limit: 5, offset: 0, unreadOnly: false });
      await r.messages.revoke(CONNECTION, m.id);
      return [edited, await r.chats.listJson(CONNECTION, { limit: 5, offset: 0, unreadOnly: false })];
    });
  });
});

describe('contacts and group metadata', () => {
  it('merge, look up and list contacts in SQLite NOCASE order', async () => {
    const names: Array<[string, string | null, string | null]> = [
      ['1@s.whatsapp.net', 'alice', null],
      ['2@s.whatsapp.net', 'Bob', null],
      ['3@s.whatsapp.net', 'bob', null],
      ['4@s.whatsapp.net', 'Émile', null],
      ['5@s.whatsapp.net', 'émile', null],
      ['6@s.whatsapp.net', '_under', null],
      ['7@s.whatsapp.net', null, 'Zed push'],
      ['8@s.whatsapp.net', null, null],
      ['0@s.whatsapp.net', 'ALICE', null],
      ['9@g.us', 'a group', null],
      ['77@lid', 'lid only', null],
    ];
    await e.both(async (r) => {
      for (const [jid, name, pushName] of names)
        await r.contacts.upsert(CONNECTION, {
          jid,
          name,
          pushName,
          isGroup: jid.endsWith('@g.us'),
          lid: jid === '1@s.whatsapp.net' || jid === '0@s.whatsapp.net' ? '111@lid' : null,
        });
      await r.contacts.upsert(CONNECTION, { jid: '1@s.whatsapp.net', name: null, pushName: 'Al', phoneNumber: '+1' }); // merges, keeps the name
      return null;
    });
    for (const [limit, offset] of [
      [50, 0],
      [3, 2],
      [2, 10],
    ])
      await e.both((r) => r.contacts.list(CONNECTION, { limit: limit!, offset: offset! }));
    await e.both(async (r) => ({
      has: [await r.contacts.has(CONNECTION, '1@s.whatsapp.net'), await r.contacts.has(CONNECTION, 'x@s.whatsapp.net')],
      lid: [await r.contacts.jidForLid(CONNECTION, '111@lid'), await r.contacts.jidForLid(CONNECTION, '222@lid')],
      names: [
        await r.contacts.nameOf(CONNECTION, '1@s.whatsapp.net'),
        await r.contacts.nameOf(CONNECTION, '7@s.whatsapp.net'),
        await r.contacts.nameOf(CONNECTION, '8@s.whatsapp.net'),
      ],
      profile: [
        await r.contacts.profileNames(CONNECTION, '1@s.whatsapp.net'),
        await r.contacts.profileNames(CONNECTION, 'x@s.whatsapp.net'),
      ],
      users: await r.contacts.userJids(CONNECTION),
    }));
  });

  it('keeps group metadata with its fetch time, and drops it when the connection stops', async () => {
    await e.both(async (r) => {
      await r.groupMetadata.put(CONNECTION, 'b@g.us', '{"id":"b@g.us"}', null); // a delta for a new group: 0
      await r.groupMetadata.put(CONNECTION, 'a@g.us', '{"id":"a@g.us","subject":"A"}', 1000);
      await r.groupMetadata.put(CONNECTION, 'a@g.us', '{"id":"a@g.us","subject":"A2"}', null); // a delta keeps 1000
      await r.groupMetadata.put(CONNECTION, 'B@g.us', '{}', 3000);
      const before = [await r.groupMetadata.list(CONNECTION), await r.groupMetadata.freshness(CONNECTION)];
      await r.groupMetadata.remove(CONNECTION, 'b@g.us');
      return [...before, await r.groupMetadata.list(CONNECTION), await r.groupMetadata.freshness(CONNECTION)];
    });
    await e.setStatus('stopped');
    expect(await e.both((r) => r.groupMetadata.freshness(CONNECTION))).toEqual({ count: 0, oldestFetchedAt: null });
    await e.both(async (r) => {
      await r.groupMetadata.put(CONNECTION, 'c@g.us', '{}', 5);
      await r.groupMetadata.clear(CONNECTION);
      return r.groupMetadata.list(CONNECTION);
    });
  });
});

describe('messages', () => {
  it('upsert merges copies as SQLite does and reads them back the same', async () => {
    const raw = Uint8Array.from([1, 2, 3, 0, 255]);
    const secret = new Uint8Array(32).fill(7);
    const first = msg(1, 'first', {
      ack: 2,
      fromMe: true,
      raw,
      media: { url: '/api/connections/x/media/K1.jpg', mimetype: 'image/jpeg', filename: 'a b.jpg', size: 10 },
      type: 'image',
      kind: 'image',
      mentions: [OTHER],
      isForwarded: true,
    });
    await e.both(async (r) => [
      await r.messages.upsert(CONNECTION, first),
      await r.messages.upsert(CONNECTION, {
        ...first,
        ack: 1,
        raw: null,
        media: null,
        text: 'second',
        senderPushName: '',
        mentions: [],
        isForwarded: false,
      }),
      await r.messages.upsert(
        CONNECTION,
        { ...first, keyId: 'K2', id: messageIdOf(true, CHAT, 'K2') },
        { existed: false },
      ),
      await r.messages.upsert(
        CONNECTION,
        msg(4, 'poll', {
          kind: 'poll',
          poll: {
            name: 'Lunch?',
            selectableCount: 1,
            options: [
              { name: 'yes', votes: 0, voters: [] },
              { name: 'no', votes: 0, voters: [] },
            ],
          },
          messageSecret: secret,
          raw,
        }),
      ),
      await r.messages.upsert(CONNECTION, msg(5, 'incoming', { raw: Uint8Array.from([9]) })),
      await r.messages.upsert(CONNECTION, msg(7, 'later incoming', { raw: Uint8Array.from([8]), fromMe: false })),
      await r.messages.upsert(CONNECTION, msg(8, 'same key, other side', { keyId: 'K0001', fromMe: false })),
    ]);
    await e.both(async (r) => ({
      get: await r.messages.get(CONNECTION, first.id),
      missing: await r.messages.get(CONNECTION, 'nope'),
      ack: [
        await r.messages.ackOf(CONNECTION, first.id),
        await r.messages.ackOf(CONNECTION, msg(5, '').id),
        await r.messages.ackOf(CONNECTION, 'nope'),
      ],
      state: [await r.messages.stateOf(CONNECTION, first.id), await r.messages.stateOf(CONNECTION, 'nope')],
      raw: [
        await r.messages.getRaw(CONNECTION, first.id),
        await r.messages.getRaw(CONNECTION, 'nope'),
        await r.messages.findRawByKeyId(CONNECTION, 'K0005'),
      ],
      byKey: [
        await r.messages.findByKeyId(CONNECTION, 'K0001'),
        await r.messages.findByChatAndKey(CONNECTION, CHAT, 'K0001'),
        await r.messages.findByChatAndKey(CONNECTION, OTHER, 'K0001'),
      ],
      incoming: [
        await r.messages.latestIncomingRaws(CONNECTION, CHAT, 5),
        await r.messages.latestIncomingRaw(CONNECTION, CHAT),
        await r.messages.countIncomingAfter(CONNECTION, CHAT, 1_700_000_001),
      ],
      acks: [
        await r.messages.setAck(CONNECTION, first.id, 1),
        await r.messages.setAck(CONNECTION, first.id, 4),
        await r.messages.setAck(CONNECTION, first.id, 0),
        await r.messages.setAck(CONNECTION, 'nope', 3),
      ],
      after: await r.messages.get(CONNECTION, first.id),
    }));
    await e.both(async (r) => {
      await r.messages.setRaw(CONNECTION, first.id, Uint8Array.from([4, 5]));
      return r.messages.getRaw(CONNECTION, first.id);
    });
  });

  it('edits, reactions and poll votes', async () => {
    const m = msg(1, 'original');
    const poll = msg(2, 'Lunch?', {
      kind: 'poll',
      poll: {
        name: 'Lunch?',
        selectableCount: 2,
        options: [
          { name: 'yes', votes: 0, voters: [] },
          { name: 'no', votes: 0, voters: [] },
        ],
      },
      messageSecret: new Uint8Array(32).fill(1),
    });
    await e.both(async (r) => {
      await r.messages.upsert(CONNECTION, m);
      await r.messages.upsert(CONNECTION, poll);
      await r.messages.edit(CONNECTION, m.id, 'second', 1_700_000_100);
      await r.messages.edit(CONNECTION, m.id, 'third', 1_700_000_100); // same second: insertion order
      await r.messages.edit(CONNECTION, 'nope', 'x', 1);
      const reacts = [
        await r.messages.react(CONNECTION, m.id, OTHER, '👍', 1_700_000_200),
        await r.messages.react(CONNECTION, m.id, OTHER, '👍', 1_700_000_201),
        await r.messages.react(CONNECTION, m.id, ME, '❤️', 1_700_000_150),
        await r.messages.react(CONNECTION, m.id, 'B@s.whatsapp.net', '😂', 1_700_000_150),
        await r.messages.react(CONNECTION, m.id, 'a@s.whatsapp.net', '😮', 1_700_000_150),
        await r.messages.react(CONNECTION, m.id, 'a@s.whatsapp.net', '', 1_700_000_150),
        await r.messages.react(CONNECTION, m.id, 'z@s.whatsapp.net', '', 1_700_000_150),
      ];
      const votes = [
        await r.messages.vote(CONNECTION, poll.id, OTHER, ['yes', 'no'], 10),
        await r.messages.vote(CONNECTION, poll.id, ME, ['yes'], 11),
        await r.messages.vote(CONNECTION, poll.id, OTHER, ['no'], 9), // older: ignored
        await r.messages.vote(CONNECTION, poll.id, 'A@s.whatsapp.net', ['yes', 'maybe'], 11),
        await r.messages.vote(CONNECTION, poll.id, ME, [], 12), // withdrawn
        await r.messages.vote(CONNECTION, m.id, OTHER, ['yes'], 12), // not a poll
      ];
      await r.messages.upsert(CONNECTION, { ...poll, text: 'Lunch? (copy)' }); // a later copy keeps the votes
      return {
        reacts,
        votes,
        edits: await r.messages.edits(CONNECTION, m.id),
        m: await r.messages.get(CONNECTION, m.id),
        poll: await r.messages.poll(CONNECTION, poll.id),
        notPoll: await r.messages.poll(CONNECTION, m.id),
        pollMessage: await r.messages.get(CONNECTION, poll.id),
      };
    });
    await e.both(async (r) => {
      await r.messages.revoke(CONNECTION, m.id);
      await r.messages.revoke(CONNECTION, 'nope');
      return [await r.messages.get(CONNECTION, m.id), await r.messages.stateOf(CONNECTION, m.id)];
    });
  });

  it('pages a chat newest first, after, around, and iterates it oldest first, with the same cursors', async () => {
    await e.both(async (r) => {
      for (let i = 0; i < 60; i++)
        await r.messages.upsert(CONNECTION, msg(i, `message ${i}`, i % 7 === 0 ? { chatId: OTHER } : {}));
      return null;
    });
    for (const limit of [1, 4, 50, 100]) {
      const pages = await e.both(async (r) => {
        const out = [];
        let before;
        do {
          const p = await r.messages.page(CONNECTION, CHAT, limit, before);
          out.push(p);
          before = p.nextBefore ? decodeCursor(p.nextBefore) : undefined;
          if (before) out.push(await r.messages.pageAfter(CONNECTION, CHAT, limit, before));
        } while (before);
        return out;
      });
      expect(pages.length).toBeGreaterThan(0);
    }
    await e.both(async (r) => {
      const out = [];
      for (const i of [1, 2, 30, 58, 59]) {
        const at = await r.messages.positionOf(CONNECTION, CHAT, msg(i, '').id);
        out.push(
          at,
          at && (await r.messages.pageAround(CONNECTION, CHAT, 5, at)),
          at && (await r.messages.pageAround(CONNECTION, CHAT, 1, at)),
        );
      }
      out.push(
        await r.messages.positionOf(CONNECTION, OTHER, msg(1, '').id),
        await r.messages.page(CONNECTION, 'nobody@s.whatsapp.net', 5),
      );
      out.push(
        await collect(r.messages.iterate(CONNECTION, CHAT, { batch: 7 })),
        await collect(r.messages.iterate(CONNECTION, CHAT, { since: 1_700_000_005, until: 1_700_000_009, batch: 3 })),
      );
      out.push(await r.messages.range(CONNECTION, CHAT, rangeStart(1_700_000_010), 1_700_000_012, 4));
      return out;
    });
  });

  it('renders pages as the same API JSON bytes, over every kind of row', async () => {
    const rnd = lcg(16);
    const str = (max: number) => Array.from({ length: rnd(max + 1) }, () => TRICKY[rnd(TRICKY.length)]).join('');
    const media = (file: string) => ({
      url: `http://127.0.0.1:7575/api/connections/${CONNECTION}/media/${encodeURIComponent(file)}`,
      mimetype: 'image/jpeg',
      filename: rnd(2) ? null : str(8),
      size: rnd(2) ? null : rnd(100_000),
    });
    const ops: Array<(r: Repos) => Promise<unknown>> = [];
    for (let i = 0; i < 90; i++) {
      const variant = i % 12;
      const m = msg(i, str(24), {
        senderPushName: str(6),
        quotedMessageId: rnd(4) === 0 ? `false_${CHAT}_Q${i}` : null,
        mentions: rnd(3) === 0 ? ['15550102@s.whatsapp.net', str(5)] : [],
        isForwarded: rnd(4) === 0,
        ...(variant === 1 && { type: 'image', kind: 'image', media: media(`K${i}.jpg`) }),
        ...(variant === 2 && { type: 'image', kind: 'image', media: media(`K ${i} ü%/.jpg`) }),
        ...(variant === 3 && {
          type: 'location',
          kind: 'location',
          location: { latitude: 52.52 + i / 7, longitude: -0.1, name: str(5), address: null, url: null, isLive: false },
        }),
        ...(variant === 4 && { kind: 'unsupported', rawType: 'eventMessage' }),
        ...(variant === 5 && {
          type: 'image',
          kind: 'image',
          albumId: `true_${CHAT}_ALBUM`,
          media: media(`A${i}.png`),
        }),
        ...(variant === 6 && {
          type: 'contact',
          kind: 'contact',
          contacts: [{ name: str(4), phoneNumbers: ['+15550109'], vcard: `BEGIN:VCARD\n${str(6)}\nEND:VCARD` }],
        }),
      });
      const edit = str(10);
      const emoji = str(2) || '👍';
      ops.push(async (r) => {
        await r.messages.upsert(CONNECTION, m);
        if (variant === 7) await r.messages.edit(CONNECTION, m.id, edit, m.timestamp + 5);
        if (variant === 8 || variant === 1) {
          await r.messages.react(CONNECTION, m.id, '15550102@s.whatsapp.net', emoji, m.timestamp + 2);
          await r.messages.react(CONNECTION, m.id, ME, '❤️', m.timestamp + 2);
          await r.messages.react(CONNECTION, m.id, '15550103@s.whatsapp.net', '😂', m.timestamp + 1);
        }
        if (variant === 9) await r.messages.revoke(CONNECTION, m.id);
      });
    }
    await e.both(async (r) => {
      for (const op of ops) await op(r);
      return null;
    });
    // A media column from before issue 17 (a URL path), as a migrated desktop database may hold.
    const legacy = `{"url":"/api/connections/${CONNECTION}/media/K0010.jpg","mimetype":"image/jpeg","filename":null,"size":5}`;
    await e.exec(`UPDATE messages SET media = '${legacy}' WHERE key_id = 'K0010'`);
    let pages = 0;
    for (const limit of [1, 7, 50]) {
      await e.both(async (r, engine) => {
        const out: string[] = [];
        let before;
        void engine;
        do {
          const p = await r.messages.rendered.page(CONNECTION, CHAT, limit, before);
          const json = pageJson(p);
          expect(json).toBe(serializePage(await r.messages.page(CONNECTION, CHAT, limit, before)));
          out.push(json);
          before = p.nextBefore ? decodeCursor(p.nextBefore) : undefined;
          if (before) out.push(pageJson(await r.messages.rendered.pageAfter(CONNECTION, CHAT, limit, before)));
          if (before) out.push(pageJson(await r.messages.rendered.pageAround(CONNECTION, CHAT, limit, before)));
          pages++;
        } while (before);
        return out;
      });
    }
    expect(pages).toBeGreaterThan(100);
  });

  it('stores U+0000 of free text as U+FFFD on PostgreSQL (its text cannot hold it)', async () => {
    const m = msg(1, 'a\u0000b', { senderPushName: 'n\u0000' });
    await e.postgres.store.read.messages.upsert(CONNECTION, m);
    await e.postgres.store.read.messages.edit(CONNECTION, m.id, 'c\u0000', 1_700_000_100);
    const got = (await e.postgres.store.read.messages.get(CONNECTION, m.id)) as Message;
    expect([got.text, got.senderPushName]).toEqual(['c\ufffd', 'n\ufffd']);
    expect(await e.postgres.store.read.messages.edits(CONNECTION, m.id)).toEqual([
      { editedAt: 1_700_000_100, previousText: 'a\ufffdb', text: 'c\ufffd' },
    ]);
  });
});
