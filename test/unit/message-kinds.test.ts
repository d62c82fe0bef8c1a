/**
 * Message kinds in the store and the poll-vote path on real SQLite files (issue #13): poll secrets kept with the
 * poll, votes aggregated (latest per voter, withdrawals, stale votes ignored), real AES-GCM votes decrypted for every
 * address form, status posts hidden from the chat list, and the migration of rows stored with the old `type` names.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { proto, type WAMessage } from '@whiskeysockets/baileys';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../service/db/database.ts';
import { migrations } from '../../service/db/migrations.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { classify, toStoredMessage, type ModelContext } from '../../service/engine/message-model.ts';
import { decryptVote } from '../../service/engine/polls.ts';
import { encryptPollVote } from '../../service/sandbox/poll-vote.ts';
import { incomingText } from '../helpers/messages.ts';
import { mediaUrl } from '../../service/db/media-url.ts';

const OWN = '15550100@s.whatsapp.net';
const OWN_LID = '209999999999999@lid';
const ALICE = '15550101@s.whatsapp.net';
const ALICE_LID = '201234567890123@lid';
const BOB = '15550102@s.whatsapp.net';
const SECRET = Buffer.alloc(32, 7);

const ctx: ModelContext = {
  mediaUrl: (file) => mediaUrl('http://127.0.0.1:7575/api', 'c1', file),
  ownJid: OWN,
  ownLid: OWN_LID,
  pnForLid: (lid) => (lid === ALICE_LID ? ALICE : undefined),
};

function wire(m: proto.IWebMessageInfo & { key: WAMessage['key'] }): WAMessage {
  const decoded = proto.WebMessageInfo.decode(proto.WebMessageInfo.encode(m).finish()) as WAMessage;
  decoded.key = { ...decoded.key, ...m.key };
  return decoded;
}

/** An own poll "Lunch?" in Alice's chat. */
const pollMsg = () =>
  wire({
    key: { remoteJid: ALICE, fromMe: true, id: 'POLL1' },
    messageTimestamp: 1_700_000_000,
    message: {
      messageContextInfo: { messageSecret: SECRET },
      pollCreationMessageV3: { name: 'Lunch?', options: [{ optionName: 'Pizza' }, { optionName: 'Sushi' }], selectableOptionsCount: 1 },
    },
  });

let dir: string;
let store: Store;
let connectionId: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-kinds-'));
  store = openStore(dir);
  const userId = store.users.create('alice').id;
  connectionId = store.connections.insert({ id: '11111111-2222-4333-8444-555555555555', userId, name: null, workerId: 'local' }).id;
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('polls in the store', () => {
  it('keeps the secret with the poll and aggregates the latest vote of each voter', () => {
    const poll = toStoredMessage(pollMsg(), ctx)!;
    store.messages.upsert(connectionId, poll);
    expect(store.messages.poll(connectionId, poll.id)?.secret).toEqual(SECRET);
    store.messages.vote(connectionId, poll.id, ALICE, ['Pizza'], 10);
    store.messages.vote(connectionId, poll.id, BOB, ['Pizza'], 11);
    expect(store.messages.vote(connectionId, poll.id, BOB, ['Sushi'], 12)).toEqual({
      name: 'Lunch?',
      selectableCount: 1,
      options: [
        { name: 'Pizza', votes: 1, voters: [ALICE] },
        { name: 'Sushi', votes: 1, voters: [BOB] },
      ],
    });
    // a stale copy of an older vote does not win; an empty vote withdraws
    store.messages.vote(connectionId, poll.id, BOB, ['Pizza'], 11);
    store.messages.vote(connectionId, poll.id, ALICE, [], 13);
    expect(store.messages.get(connectionId, poll.id)?.poll?.options).toEqual([
      { name: 'Pizza', votes: 0, voters: [] },
      { name: 'Sushi', votes: 1, voters: [BOB] },
    ]);
    // the poll delivered again (history, retry) keeps its counts
    store.messages.upsert(connectionId, toStoredMessage(pollMsg(), ctx)!);
    expect(store.messages.get(connectionId, poll.id)?.poll?.options[1]).toEqual({ name: 'Sushi', votes: 1, voters: [BOB] });
    expect(store.messages.vote(connectionId, 'false_x@s.whatsapp.net_NOPE', ALICE, ['Pizza'], 1)).toBeUndefined();
  });

  it.each([
    ['phone-number addresses', OWN, ALICE, { remoteJid: ALICE }],
    ['LID addresses', OWN_LID, ALICE_LID, { remoteJid: ALICE_LID, remoteJidAlt: ALICE }],
  ])('decrypts a real vote encrypted with %s', (_, creator, voter, key) => {
    const poll = toStoredMessage(pollMsg(), ctx)!;
    store.messages.upsert(connectionId, poll);
    const record = store.messages.get(connectionId, poll.id)!;
    const vote = encryptPollVote(['Sushi'], { pollCreatorJid: creator, pollMsgId: 'POLL1', pollEncKey: SECRET, voterJid: voter });
    const msg = wire({
      key: { ...key, fromMe: false, id: 'VOTE1' },
      messageTimestamp: 1_700_000_100,
      message: {
        pollUpdateMessage: {
          pollCreationMessageKey: { remoteJid: key.remoteJid, fromMe: true, id: 'POLL1' },
          vote,
          senderTimestampMs: 1_700_000_100_000,
        },
      },
    });
    const kind = classify(msg);
    expect(kind.kind).toBe('pollVote');
    expect(toStoredMessage(msg, ctx)).toBeUndefined(); // a vote is never a chat message
    if (kind.kind !== 'pollVote') return;
    const input = { msg, pollKey: kind.pollKey, vote: kind.vote, poll: record, raw: store.messages.getRaw(connectionId, poll.id) ?? null, ownJid: OWN, ownLid: OWN_LID };
    expect(decryptVote({ ...input, secret: SECRET })).toEqual(['Sushi']);
    expect(decryptVote({ ...input, secret: Buffer.alloc(32, 9) })).toBeUndefined(); // wrong secret: not readable
  });
});

describe('status posts and kinds in the store', () => {
  it('hides status@broadcast from the chat list unless asked', () => {
    store.chats.touch(connectionId, { chatId: 'status@broadcast', isGroup: false, messageId: 'false_status@broadcast_S1', kind: 'text', timestamp: 5, body: 'story', fromMe: false, unreadDelta: 0 });
    store.chats.touch(connectionId, { chatId: ALICE, isGroup: false, messageId: `false_${ALICE}_K1`, kind: 'text', timestamp: 4, body: 'hi', fromMe: false, unreadDelta: 1 });
    expect(store.chats.list(connectionId, { limit: 10, offset: 0, unreadOnly: false }).map((c) => c.id)).toEqual([ALICE]);
    expect(store.chats.list(connectionId, { limit: 10, offset: 0, unreadOnly: false, includeStatus: true }).map((c) => c.id)).toEqual([
      'status@broadcast',
      ALICE,
    ]);
  });

  it('a revoked message keeps type text with kind revoked and loses its content', () => {
    const m = toStoredMessage(
      wire({ key: { remoteJid: ALICE, fromMe: false, id: 'LOC1' }, messageTimestamp: 1, message: { locationMessage: { degreesLatitude: 1, degreesLongitude: 2 } } }),
      ctx,
    )!;
    store.messages.upsert(connectionId, m);
    store.messages.revoke(connectionId, m.id);
    expect(store.messages.get(connectionId, m.id)).toMatchObject({ type: 'text', kind: 'revoked', text: '', location: null, media: null });
  });
});

describe('migration of stored messages to kinds', () => {
  it('maps old type names to type + kind (+ rawType) and keeps the seven as they were', () => {
    // A database at the schema before the kinds migration (the migrations before it, as a previous version ran
    // them), then rows as that version stored them; opening it runs the kinds migration and every later one.
    store.close();
    const file = path.join(dir, 'old.db');
    const kindsMigration = migrations.findIndex((m) => m.includes('ADD COLUMN kind TEXT'));
    const db = new Database(file);
    for (let v = 0; v < kindsMigration; v++) db.exec(migrations[v]!);
    db.pragma(`user_version = ${kindsMigration}`);
    db.pragma(`application_id = ${0x53574244}`);
    db.exec(`INSERT INTO users (id, kind, name, created_at) VALUES ('u1', 'local', 'old', '2026-01-01');
      INSERT INTO connections (id, user_id, session_name, worker_id, status, created_at, updated_at)
        VALUES ('${connectionId}', 'u1', 's', 'local', 'online', '2026-01-01', '2026-01-01');`);
    const insert = db.prepare(
      `INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name, type, text, seq)
       VALUES (?, ?, ?, ?, 0, 1, ?, '', ?, '', ?)`,
    );
    const old = ['text', 'image', 'sticker', 'revoked', 'pollCreation', 'pollCreationMessageV3', 'buttonsResponse', 'listResponse', 'event', 'pollUpdate'];
    old.forEach((t, i) => insert.run(connectionId, `false_${ALICE}_K${i}`, ALICE, `K${i}`, ALICE, t, i + 1));
    db.close();
    const again = openDatabase(file);
    const rows = again.prepare(`SELECT type, kind, raw_type FROM messages ORDER BY seq`).all();
    again.close();
    store = openStore(dir); // afterEach closes it
    expect(rows).toEqual([
      { type: 'text', kind: 'text', raw_type: null },
      { type: 'image', kind: 'image', raw_type: null },
      { type: 'image', kind: 'sticker', raw_type: null },
      { type: 'text', kind: 'revoked', raw_type: null },
      { type: 'text', kind: 'poll', raw_type: null },
      { type: 'text', kind: 'poll', raw_type: null },
      { type: 'text', kind: 'buttons_response', raw_type: null },
      { type: 'text', kind: 'list_response', raw_type: null },
      { type: 'text', kind: 'unsupported', raw_type: 'eventMessage' },
      { type: 'text', kind: 'unsupported', raw_type: 'pollUpdateMessage' },
    ]);
  });

  it('the incoming-text helper row reads back with kind text and no structured content', () => {
    const m = incomingText(ALICE, 'T1', 1, 'hello');
    store.messages.upsert(connectionId, m);
    expect(store.messages.get(connectionId, m.id)).toMatchObject({ type: 'text', kind: 'text', rawType: null, poll: null, location: null });
  });
});
