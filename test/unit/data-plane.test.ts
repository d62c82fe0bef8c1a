/**
 * The data plane (service/data-plane.ts, docs/architecture.md § Data plane) on a real SQLite file: its event log
 * always writes the outbox rows of subscribed webhooks in the event's own transaction, a PostgreSQL URL is refused
 * with a clear message, and the webhooks' in-memory caches of two planes on one file (as the main thread's and a
 * session thread's) follow each other's changes through the database's generation counter, with no repository
 * patched at run time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDataPlane, POSTGRES_UNAVAILABLE, type DataPlane } from '../../service/data-plane.ts';

const CONNECTION = 'conn-plane';

let dir: string;
const planes: DataPlane[] = [];
const open = (role: 'main' | 'session-thread' | 'tool' = 'tool') => {
  const plane = openDataPlane({ dataDir: dir, role });
  planes.push(plane);
  return plane;
};

/** The outbox rows of the user's event `seq`, by webhook id. */
const rowsOf = (plane: DataPlane, seq: number) =>
  (plane.store.db.prepare('SELECT webhook_id FROM webhook_deliveries WHERE event_seq = ? ORDER BY webhook_id').all(seq) as Array<{ webhook_id: string }>).map(
    (r) => r.webhook_id,
  );
const eventCount = (plane: DataPlane) => (plane.store.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
const generation = (plane: DataPlane) =>
  (plane.store.db.prepare(`SELECT generation FROM cache_generations WHERE name = 'webhooks'`).get() as { generation: number }).generation;

function addWebhook(plane: DataPlane, userId: string, id: string, events: string[]): void {
  plane.store.tx(() =>
    plane.store.webhooks.insert({ id, userId, connectionId: CONNECTION, url: `https://example.com/${id}`, events, secret: 'whsec_x', active: true }),
  );
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-plane-'));
});
afterEach(() => {
  for (const plane of planes.splice(0)) plane.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('openDataPlane', () => {
  it('writes an event and its outbox row in one transaction; a rollback writes neither', () => {
    const plane = open();
    const { store, events } = plane;
    const userId = store.users.create('alice').id;
    store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
    addWebhook(plane, userId, 'wh-1', ['plane.test']);
    addWebhook(plane, userId, 'wh-2', ['other.event']);

    const seq = store.tx(() => {
      const logged = events.append(userId, CONNECTION, 'plane.test', {});
      expect(rowsOf(plane, logged.seq)).toEqual(['wh-1']); // written inside the event's transaction, before its commit
      return logged.seq;
    });
    expect(rowsOf(plane, seq)).toEqual(['wh-1']);

    const before = eventCount(plane);
    expect(() =>
      store.tx(() => {
        events.append(userId, CONNECTION, 'plane.test', {});
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(eventCount(plane)).toBe(before);
    expect(rowsOf(plane, seq + 1)).toEqual([]);
    // The seq the rolled-back event had is the next one's: no gap.
    expect(events.append(userId, CONNECTION, 'plane.test', {}).seq).toBe(seq + 1);
    expect(rowsOf(plane, seq + 1)).toEqual(['wh-1']);
  });

  it('refuses a PostgreSQL URL with a clear message, and any other database value without repeating it', () => {
    for (const database of ['postgres://user:secret@127.0.0.1:5432/sb', 'postgresql://127.0.0.1/sb']) {
      expect(() => openDataPlane({ dataDir: dir, role: 'main', database })).toThrow(POSTGRES_UNAVAILABLE);
    }
    expect(POSTGRES_UNAVAILABLE).toBe('PostgreSQL is not available in this build yet');
    let message = '';
    try {
      openDataPlane({ dataDir: dir, role: 'tool', database: 'mysql://user:secret@host/db' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/unsupported database/);
    expect(message).not.toContain('secret');
    expect(fs.existsSync(path.join(dir, 'switchboard.db'))).toBe(false); // nothing was created
  });

  it('leaves the WAL checkpoints of a session thread to the main thread', () => {
    expect(open('main').store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(open('session-thread').store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
  });
});

describe('cached webhooks across connections to one file (the generation counter)', () => {
  it('bumps the counter on every insert, update and delete of a webhook, by trigger', () => {
    const plane = open();
    const userId = plane.store.users.create('alice').id;
    plane.store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
    const g0 = generation(plane);
    addWebhook(plane, userId, 'wh-1', ['*']);
    expect(generation(plane)).toBe(g0 + 1);
    plane.store.tx(() => plane.store.webhooks.update('wh-1', { active: false }));
    expect(generation(plane)).toBe(g0 + 2);
    // A write that bypasses the repository is counted too.
    plane.store.db.prepare(`UPDATE webhooks SET url = 'https://example.com/other' WHERE id = 'wh-1'`).run();
    expect(generation(plane)).toBe(g0 + 3);
    plane.store.tx(() => plane.store.webhooks.delete('wh-1'));
    expect(generation(plane)).toBe(g0 + 4);
  });

  it("sees another store's webhook changes in its next transaction, in a batch as in a tx", async () => {
    const main = open('main');
    const thread = open('session-thread');
    const userId = main.store.users.create('alice').id;
    main.store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
    const targetsBefore = thread.store.webhooks.targets;

    // The thread logs an event: no webhook yet, and its cache now holds that (an empty list).
    const e1 = thread.store.ingest(() => thread.events.append(userId, CONNECTION, 'plane.test', {}));
    await thread.store.durable();
    expect(rowsOf(thread, e1.seq)).toEqual([]);

    // The main thread adds a webhook: the thread's next batch writes its row.
    addWebhook(main, userId, 'wh-1', ['plane.test']);
    const e2 = thread.store.ingest(() => thread.events.append(userId, CONNECTION, 'plane.test', {}));
    const e3 = thread.store.ingest(() => thread.events.append(userId, CONNECTION, 'plane.test', {})); // same batch
    await thread.store.durable();
    expect(rowsOf(thread, e2.seq)).toEqual(['wh-1']);
    expect(rowsOf(thread, e3.seq)).toEqual(['wh-1']);

    // The main thread unsubscribes it and adds another: the thread's next tx follows.
    main.store.tx(() => main.store.webhooks.update('wh-1', { events: ['other.event'] }));
    addWebhook(main, userId, 'wh-2', ['*']);
    const e4 = thread.store.tx(() => thread.events.append(userId, CONNECTION, 'plane.test', {}));
    expect(rowsOf(thread, e4.seq)).toEqual(['wh-2']);

    // The other way round: a webhook the thread pauses is paused in the main thread's cached row.
    expect(main.store.webhooks.getCached('wh-2')?.active).toBe(true);
    thread.store.tx(() => thread.store.webhooks.update('wh-2', { active: false }));
    expect(main.store.webhooks.getCached('wh-2')?.active).toBe(false);
    main.store.tx(() => main.outbox.deleteWebhook('wh-2'));
    expect(thread.store.webhooks.getCached('wh-2')).toBeUndefined();
    const e5 = thread.store.tx(() => thread.events.append(userId, CONNECTION, 'plane.test', {}));
    expect(rowsOf(thread, e5.seq)).toEqual([]);

    // No repository method was replaced along the way.
    expect(thread.store.webhooks.targets).toBe(targetsBefore);
  });

  it('forgets a webhook written by a rolled-back transaction, even when another store then moves the counter', () => {
    const main = open('main');
    const thread = open('session-thread');
    const userId = main.store.users.create('alice').id;
    main.store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
    expect(() =>
      thread.store.tx(() => {
        thread.store.webhooks.insert({ id: 'wh-gone', userId, connectionId: CONNECTION, url: 'https://example.com/x', events: ['*'], secret: 'whsec_x', active: true });
        expect(thread.store.webhooks.targets(CONNECTION).map((t) => t.id)).toEqual(['wh-gone']); // cached inside the tx
        throw new Error('abort');
      }),
    ).toThrow('abort');
    addWebhook(main, userId, 'wh-1', ['*']); // the counter reaches the value the rolled-back tx had seen
    const e = thread.store.tx(() => thread.events.append(userId, CONNECTION, 'plane.test', {}));
    expect(rowsOf(thread, e.seq)).toEqual(['wh-1']);
  });
});
