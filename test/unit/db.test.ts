/**
 * The data layer on real SQLite files: migrations, refusal of foreign/corrupt files without touching them,
 * keyset paging of messages, the per-user event log and transactional event publication.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseOpenError, openDatabase } from '../../service/db/database.ts';
import { decodeCursor, encodeCursor, messageIdOf, parseMessageId, type StoredMessage } from '../../service/db/messages.ts';
import { startCheckpointer } from '../../service/db/checkpointer.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { WalSync } from '../../service/db/wal-sync.ts';
import { loadAuthState } from '../../service/engine/auth-state.ts';
import { EventLog } from '../../service/events/log.ts';
import { incomingText } from '../helpers/messages.ts';
import type { LoggedEvent } from '../../service/db/events.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-db-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const sha = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('openDatabase', () => {
  it('creates the schema once and reopens an existing database', () => {
    const file = path.join(dir, 'a.db');
    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThan(0);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    db.prepare(`INSERT INTO settings (key, value) VALUES ('k', '1')`).run();
    db.close();
    const again = openDatabase(file);
    expect(again.prepare(`SELECT value FROM settings WHERE key = 'k'`).get()).toEqual({ value: '1' });
    again.close();
  });

  it('refuses a file that is not a database, and leaves it as it was', () => {
    const file = path.join(dir, 'garbage.db');
    fs.writeFileSync(file, Buffer.alloc(8192, 0x5a));
    const before = sha(file);
    expect(() => openDatabase(file)).toThrow(DatabaseOpenError);
    expect(sha(file)).toBe(before);
  });

  it("refuses another application's SQLite database, and leaves it as it was", () => {
    const file = path.join(dir, 'foreign.db');
    const foreign = new Database(file);
    foreign.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me');`);
    foreign.close();
    const before = sha(file);
    expect(() => openDatabase(file)).toThrow(/another application/);
    expect(sha(file)).toBe(before);
  });
});

describe('store', () => {
  let store: Store;
  let userId: string;
  let connectionId: string;
  beforeEach(() => {
    store = openStore(dir);
    userId = store.users.create('alice').id;
    connectionId = store.connections.insert({ id: '11111111-2222-4333-8444-555555555555', userId, name: null, workerId: 'local' }).id;
  });
  afterEach(() => store.close());

  const msg = (i: number, timestamp: number): StoredMessage =>
    incomingText('15550101@s.whatsapp.net', `K${String(i).padStart(4, '0')}`, timestamp, `m${i}`);

  it('keeps a Baileys auth state across a reopen: creds, key pairs, app-state keys and libsignal session records', async () => {
    const { SessionRecord } = (await import('libsignal')) as unknown as { SessionRecord: new () => { serialize(): unknown } };
    const { Curve } = (await import('@whiskeysockets/baileys')) as typeof import('@whiskeysockets/baileys');
    const auth = loadAuthState(store.authState, connectionId);
    const preKey = Curve.generateKeyPair();
    const session = { ...(new SessionRecord().serialize() as object), extra: Buffer.from('a buffer inside a session') };
    await auth.keys.set({
      'pre-key': { '7': preKey },
      session: { '15550101.0': session as unknown as Uint8Array },
      'app-state-sync-key': { AAA: { keyData: new Uint8Array([1, 2, 3]), timestamp: 5 } as never },
    });
    (auth.creds as { registrationId: number }).registrationId = 4242;
    auth.saveCreds();
    store.close();

    store = openStore(dir);
    const again = loadAuthState(store.authState, connectionId);
    expect(again.creds.registrationId).toBe(4242);
    const keys = await again.keys.get('pre-key', ['7', '8']);
    expect(Object.keys(keys)).toEqual(['7']);
    expect(Buffer.from(keys['7']!.public).equals(Buffer.from(preKey.public))).toBe(true);
    const sessions = await again.keys.get('session', ['15550101.0']);
    expect(sessions["15550101.0"]).toEqual(session); // an inner Buffer comes back as one (the replacer encoding)
    // a plain session record (the usual case) is stored as plain JSON and reads back the same
    const plainSession = new SessionRecord().serialize();
    await again.keys.set({ session: { '15550102.0': plainSession as unknown as Uint8Array } });
    expect((await again.keys.get('session', ['15550102.0']))['15550102.0']).toEqual(plainSession);
    const appState = (await again.keys.get('app-state-sync-key', ['AAA'])).AAA!;
    expect(Buffer.from(appState.keyData!)).toEqual(Buffer.from([1, 2, 3]));
    await again.keys.set({ 'pre-key': { '7': null } });
    expect(await again.keys.get('pre-key', ['7'])).toEqual({});
  });

  it('defers Signal key writes to the next group commit: readable at once, written once per key', async () => {
    const auth = loadAuthState(store.authState, connectionId, { deferWrites: (flush) => store.beforeCommit(flush) });
    const stored = (id: string) => store.authState.getKeys(connectionId, 'session', [id]).get(id);
    const v = (n: number) => ({ version: 'v1', n }) as unknown as Uint8Array;
    const writes: string[] = [];
    const spy = store.authState.writeKeys;
    store.authState.writeKeys = (cid, rows) => {
      writes.push(...rows.map(([type, id]) => `${type}.${id}`));
      spy(cid, rows);
    };
    try {
      await auth.keys.set({ session: { a: v(1), b: v(1) } });
      await auth.keys.set({ session: { a: v(2) } });
      await auth.keys.set({ session: { b: null } });
      expect(await auth.keys.get('session', ['a', 'b'])).toEqual({ a: v(2) }); // the latest, before any write
      expect(store.db.inTransaction).toBe(true); // the batch they wait for is open
      expect(writes).toEqual([]);
      store.commitPending();
      expect(writes.sort()).toEqual(['session.a', 'session.b']); // once each
      expect(JSON.parse(stored('a')!)).toEqual({ version: 'v1', n: 2 });
      expect(stored('b')).toBeUndefined();
      // Inside a transaction the write joins it at once.
      store.tx(() => void auth.keys.set({ session: { c: v(3) } }));
      expect(stored('c')).toBeDefined();
    } finally {
      store.authState.writeKeys = spy;
    }
  });

  it('pages a chat newest first without gaps or repeats, in arrival order within a second', () => {
    // 120 messages, three per second, so page boundaries fall inside runs of equal timestamps; key ids are
    // shuffled so that arrival order, not the id, must decide the order within a second.
    for (let i = 0; i < 120; i++) {
      const m = msg(i, 1_700_000_000 + Math.floor(i / 3));
      const keyId = `K${(i * 7919) % 1000}`;
      store.messages.upsert(connectionId, { ...m, keyId, id: messageIdOf(false, m.chatId, keyId) });
    }
    const seen: string[] = [];
    let before: string | null = null;
    let pages = 0;
    let last;
    do {
      last = store.messages.page(connectionId, '15550101@s.whatsapp.net', 50, before ? decodeCursor(before) : undefined);
      seen.push(...last.messages.map((m) => m.text));
      before = last.nextBefore;
      pages++;
    } while (before);
    expect(pages).toBe(3);
    expect(seen).toEqual(Array.from({ length: 120 }, (_, i) => `m${119 - i}`));
    expect(last.historyStartsAt).toBe(1_700_000_000);
  });

  it('filters chats by name, contact name or number, treating LIKE wildcards as plain text', () => {
    const chats = [
      { id: '15550101@s.whatsapp.net', name: 'Alice Sandbox' },
      { id: '15550102@s.whatsapp.net', name: 'Bob 100% real' },
      { id: '120363000000000001@g.us', name: 'Support_Team', isGroup: true },
    ];
    for (const [i, c] of chats.entries()) {
      store.chats.upsertMeta(connectionId, { id: c.id, name: c.name, isGroup: c.isGroup ?? false });
      store.chats.touch(connectionId, { chatId: c.id, isGroup: c.isGroup ?? false, messageId: `false_${c.id}_K${i}`, kind: 'text', timestamp: 1_700_000_000 + i, body: 'x', fromMe: false, unreadDelta: 0 });
    }
    const ids = (q: string) => store.chats.list(connectionId, { limit: 50, offset: 0, unreadOnly: false, q }).map((c) => c.id);
    expect(ids('alice')).toEqual(['15550101@s.whatsapp.net']);
    expect(ids('+15550102')).toEqual(['15550102@s.whatsapp.net']);
    expect(ids('1555010')).toEqual(['15550102@s.whatsapp.net', '15550101@s.whatsapp.net']);
    expect(ids('100%')).toEqual(['15550102@s.whatsapp.net']);
    expect(ids('%')).toEqual(['15550102@s.whatsapp.net']);
    expect(ids('p_o')).toEqual([]); // as a wildcard it would match "Suppo"
    expect(ids('rt_T')).toEqual(['120363000000000001@g.us']);
    expect(ids('  ')).toHaveLength(3);
  });

  it('tells an empty chat (historyStartsAt null) from the end of history', () => {
    const empty = store.messages.page(connectionId, 'nobody@s.whatsapp.net', 50);
    expect(empty).toEqual({ messages: [], nextBefore: null, historyStartsAt: null });
  });

  it('round-trips cursors and message ids, and rejects foreign cursors', () => {
    expect(decodeCursor(encodeCursor({ timestamp: 1700000000, seq: 42 }))).toEqual({ timestamp: 1700000000, seq: 42 });
    expect(decodeCursor(Buffer.from('1700000000:x').toString('base64url'))).toBeUndefined();
    expect(decodeCursor('not-a-cursor')).toBeUndefined();
    expect(decodeCursor('')).toBeUndefined();
    expect(parseMessageId('true_15550101@s.whatsapp.net_3EB0ABC')).toEqual({ fromMe: true, chatId: '15550101@s.whatsapp.net', keyId: '3EB0ABC' });
    expect(parseMessageId('garbage')).toBeUndefined();
  });

  it('never lowers an ack, and keeps the first copy of a message', () => {
    const m = { ...msg(1, 1_700_000_000), fromMe: true, ack: 3 };
    expect(store.messages.upsert(connectionId, m)).toBe(true);
    expect(store.messages.upsert(connectionId, { ...m, ack: 1 })).toBe(false);
    expect(store.messages.get(connectionId, m.id)?.ack).toBe(3);
    expect(store.messages.setAck(connectionId, m.id, 2)).toBe(false);
    expect(store.messages.setAck(connectionId, m.id, 4)).toBe(true);
    expect(store.messages.get(connectionId, m.id)?.ack).toBe(4);
  });

  it('numbers each user’s events gap-free and publishes them only after commit', () => {
    const log = new EventLog(store);
    const published: LoggedEvent[] = [];
    log.subscribe(userId, (e) => published.push(e));
    log.append(userId, connectionId, 'a', {});
    expect(() =>
      store.tx(() => {
        log.append(userId, connectionId, 'rolled-back', {});
        expect(published.map((e) => e.event)).toEqual(['a']); // not yet: inside the transaction
        throw new Error('abort');
      }),
    ).toThrow('abort');
    store.tx(() => {
      log.append(userId, connectionId, 'b', {});
      log.append(userId, connectionId, 'c', {});
    });
    expect(published.map((e) => [e.seq, e.event])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect(store.events.after(userId, 1, 10).map((e) => e.event)).toEqual(['b', 'c']);
    const bob = store.users.create('bob').id;
    expect(log.append(bob, null, 'x', {}).seq).toBe(1);
  });

  it('announces a group commit only after its WAL is synced, in order with later transactions', async () => {
    const log = new EventLog(store);
    const published: string[] = [];
    log.subscribe(userId, (e) => published.push(e.event));
    let durable = false;
    expect(store.isDurable()).toBe(true);
    store.ingest(() => log.append(userId, connectionId, 'batched', {}));
    expect(store.isDurable()).toBe(false); // a batch is open
    store.whenDurable(() => (durable = true));
    const synced = store.durable(); // commits the batch now; the fsync runs on the thread pool
    expect(store.db.inTransaction).toBe(false);
    expect(published).toEqual([]); // committed, not yet on disk: nothing announced
    expect(durable).toBe(false);
    expect(store.isDurable()).toBe(false); // committed, its fsync still running
    await synced;
    expect(published).toEqual(['batched']);
    expect(durable).toBe(true);
    expect(store.isDurable()).toBe(true);
    // A transaction right after a batch returns with both synced, the batch's events announced first.
    store.ingest(() => log.append(userId, connectionId, 'batched 2', {}));
    store.tx(() => log.append(userId, connectionId, 'tx', {}));
    expect(published).toEqual(['batched', 'batched 2', 'tx']);
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2); // back to FULL outside batches
    store.close();
    store = openStore(dir);
    expect(store.events.after(userId, 0, 10).map((e) => e.event)).toEqual(['batched', 'batched 2', 'tx']);
  });

  it('soft-deleted connections leave the list but keep their record', () => {
    store.connections.setStatus(connectionId, 'stopped', 'deleted');
    expect(store.connections.listByUser(userId)).toEqual([]);
    expect(store.connections.get(connectionId)?.status).toBe('stopped');
  });
});

describe('WalSync', () => {
  it('runs commit callbacks in commit order, each once its fsync returned', async () => {
    const file = path.join(dir, 'w.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (x)');
    const errors: Error[] = [];
    const sync = new WalSync(file, (e) => errors.push(e));
    const order: string[] = [];
    sync.whenDurable(() => order.push('nothing pending'));
    expect(order).toEqual(['nothing pending']);
    for (const n of ['a', 'b', 'c']) {
      db.prepare('INSERT INTO t VALUES (?)').run(n);
      sync.committed(() => order.push(n));
    }
    sync.whenDurable(() => order.push('after c'));
    expect(sync.pending).toBe(true);
    expect(order).toEqual(['nothing pending']); // never synchronously
    await new Promise<void>((resolve) => sync.whenDurable(resolve));
    expect(order).toEqual(['nothing pending', 'a', 'b', 'c', 'after c']);
    db.prepare('INSERT INTO t VALUES (?)').run('d');
    sync.committed(() => order.push('d'));
    sync.syncNow(); // on this thread
    expect(order.at(-1)).toBe('d');
    expect(sync.pending).toBe(false);
    expect(errors).toEqual([]);
    sync.close();
    db.close();
  });
});

describe('checkpointer', () => {
  it('copies the WAL into the database file from a worker thread, with automatic checkpoints off meanwhile', async () => {
    const file = path.join(dir, 'c.db');
    const db = openDatabase(file);
    const errors: Error[] = [];
    const checkpointer = startCheckpointer(db, (e) => errors.push(e));
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const sizeBefore = fs.statSync(file).size;
    const put = db.prepare(`INSERT INTO settings (key, value) VALUES (?, ?)`);
    const blob = 'x'.repeat(3000);
    for (let i = 0; i < 20; i++) db.transaction(() => { for (let j = 0; j < 100; j++) put.run(`k${i}.${j}`, blob); })();
    // About 6 MB went to the WAL; only a checkpoint moves it into the database file, and this thread ran none.
    const deadline = Date.now() + 5_000;
    while (fs.statSync(file).size < sizeBefore + 4_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(fs.statSync(file).size).toBeGreaterThan(sizeBefore + 4_000_000);
    await checkpointer.stop();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(errors).toEqual([]);
    expect((db.prepare(`SELECT count(*) AS n FROM settings`).get() as { n: number }).n).toBe(2000);
    db.close();
  });

  it('holds writers back once the WAL passes its limit (a worker that cannot keep up, or none)', async () => {
    const file = path.join(dir, 'switchboard.db');
    const store = openStore(dir, { walLimitBytes: 4_000_000 });
    store.db.pragma('wal_autocheckpoint = 0'); // as while the checkpoint worker runs, here without it
    const put = store.db.prepare(`INSERT INTO settings (key, value) VALUES (?, ?)`);
    const blob = 'y'.repeat(3000);
    let maxWal = 0;
    // ~30 MB through the group commit; unbounded the WAL would grow to that.
    for (let i = 0; i < 1000; i++) {
      store.ingest(() => {
        for (let j = 0; j < 10; j++) put.run(`s${i}.${j}`, blob);
      });
      await store.durable();
      maxWal = Math.max(maxWal, fs.statSync(`${file}-wal`).size);
    }
    expect(maxWal).toBeLessThan(8_000_000); // the limit plus what one batch adds
    expect((store.db.prepare(`SELECT count(*) AS n FROM settings`).get() as { n: number }).n).toBe(10_000);
    store.close();
  });
});
