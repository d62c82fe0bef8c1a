/**
 * Storage contract, durability rules (docs/durability.md, docs/architecture.md § Storage engines) on both engines:
 * gap-free per-user seqs under concurrent units, an outbox row commits with its event or not at all, a throwing unit
 * rolls back alone inside its batch, read-your-writes inside a batch, commit before the unit's Promise (checked from
 * a second connection), beforeCommit writes, observers, and no nested transactions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransactionObserver } from '../../service/db/store.ts';
import type { Repos, Store } from '../../service/db/store-api.ts';
import { ENGINES, openEngine, type EngineUnderTest } from './engines.ts';

/** An observer that keeps what units add beside the transaction, and records what it announced. */
function recorder() {
  const pending: string[] = [];
  const announced: string[] = [];
  const observer: TransactionObserver<number> = {
    mark: () => pending.length,
    rolledBack: (mark) => void pending.splice(mark),
    committed() {
      if (pending.length === 0) return undefined;
      const batch = pending.splice(0);
      return () => announced.push(...batch);
    },
  };
  return { pending, announced, observer };
}

describe.each(ENGINES)('durability on %s', (engine) => {
  let e: EngineUnderTest;
  let store: Store;
  let userA: string;
  let userB: string;
  let conn: string;
  const rec = recorder();
  beforeAll(async () => {
    e = await openEngine(engine);
    store = e.store;
    store.observeTransactions(rec.observer);
    userA = (await store.read.users.create('a')).id;
    userB = (await store.read.users.create('b')).id;
    conn = (await store.read.connections.insert({ id: 'c1', userId: userA, name: null, workerId: 'w' })).id;
    await store.read.webhooks.insert({ id: 'h1', userId: userA, connectionId: conn, url: 'https://x', events: ['*'], secret: 's', active: true });
  });
  afterAll(() => e?.close());

  const count = async (sql: string) => Number((await e.outside(sql))[0]!.n);

  /** An event and its outbox row, as the event log and the webhook outbox write them. */
  async function eventWithOutbox(t: Repos, userId: string, tag: string) {
    const ev = await t.events.append(userId, null, 'message', { tag });
    if (userId === userA) {
      await t.deliveries.insert({ id: `d-${tag}`, webhookId: 'h1', userId, eventSeq: ev.seq, msgId: tag, eventType: 'message', body: '{}', status: 'pending', nextAttemptAt: 0 });
    }
    return ev.seq;
  }

  it('gives each user gap-free seqs under many concurrent units, some of which roll back', async () => {
    const before = { a: await store.read.events.lastSeq(userA), b: await store.read.events.lastSeq(userB) };
    const units = Array.from({ length: 300 }, (_, i) =>
      store.ingest(async (t) => {
        const seq = await eventWithOutbox(t, i % 2 === 0 ? userA : userB, `gap-${i}`);
        if (i % 7 === 3) throw new Error('unit fails after its append');
        return seq;
      }),
    );
    const settled = await Promise.allSettled(units);
    expect(settled.filter((s) => s.status === 'rejected').length).toBe(settled.filter((_, i) => i % 7 === 3).length);
    const seqs = (parity: number) =>
      settled.flatMap((s, i) => (i % 2 === parity && s.status === 'fulfilled' ? [s.value] : [])).sort((x, y) => x - y);
    const expectRun = (got: number[], from: number) => expect(got).toEqual(got.map((_, k) => from + k + 1));
    expectRun(seqs(0), before.a);
    expectRun(seqs(1), before.b);
    const stored = await e.outside(`SELECT seq FROM events WHERE user_id = '${userA}' ORDER BY seq`);
    const storedSeqs = stored.map((r) => Number(r.seq));
    expect(storedSeqs).toEqual(storedSeqs.map((_, k) => k + 1));
    // Every committed event of A has its outbox row, and no rolled-back one has.
    expect(await count(`SELECT count(*) AS n FROM webhook_deliveries WHERE msg_id LIKE 'gap-%'`)).toBe(seqs(0).length);
    expect(
      await count(`SELECT count(*) AS n FROM events e WHERE e.user_id = '${userA}' AND NOT EXISTS
        (SELECT 1 FROM webhook_deliveries d WHERE d.user_id = e.user_id AND d.event_seq = e.seq)`),
    ).toBe(0);
  });

  it('runs units written as steps (db/steps.ts) by the same rules: gap-free seqs, a throwing unit rolled back alone, read-your-writes', async () => {
    const before = await store.read.events.lastSeq(userA);
    const units = Array.from({ length: 60 }, (_, i) =>
      store.ingestSteps(function* (t) {
        const ev = yield* t.events.append(userA, null, 'message', { tag: `steps-${i}` });
        if (i % 5 === 2) throw new Error('steps unit fails after its append');
        return ev.seq;
      }),
    );
    const settled = await Promise.allSettled(units);
    const seqs = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    expect(settled.filter((s) => s.status === 'rejected')).toHaveLength(12);
    expect(seqs).toEqual(seqs.map((_, k) => before + k + 1));
    const written = store.ingestSteps(function* (t) {
      yield* t.authState.writeKeys(conn, [['session', 'steps-ryw', 'v1']]);
    });
    const read = store.ingestSteps(function* (t) {
      return (yield* t.authState.getKeys(conn, 'session', ['steps-ryw'])).get('steps-ryw');
    });
    await written;
    expect(await read).toBe('v1');
    const next = await store.txSteps(function* (t) {
      return (yield* t.events.append(userA, null, 'message', { tag: 'steps-tx' })).seq;
    });
    expect(next).toBe(before + 49);
    expect(await count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%steps-%'`)).toBe(49);
  });

  it.runIf(engine === 'sqlite')('runs a steps unit to its end inside the call on SQLite when nothing else is running', async () => {
    let ended = false;
    const unit = store.ingestSteps(function* (t) {
      yield* t.users.list();
      ended = true;
    });
    expect(ended).toBe(true); // no Promise per statement: the engine's hot path (docs/performance.md)
    await unit;
  });

  it('commits an outbox row with its event, and neither when the unit or the transaction rolls back', async () => {
    await expect(
      store.ingest(async (t) => {
        await eventWithOutbox(t, userA, 'rolled-unit');
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    await expect(
      store.tx(async (t) => {
        await eventWithOutbox(t, userA, 'rolled-tx');
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    const seq = await store.tx((t) => eventWithOutbox(t, userA, 'kept'));
    expect(await count(`SELECT count(*) AS n FROM webhook_deliveries WHERE msg_id IN ('rolled-unit', 'rolled-tx')`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%rolled-%'`)).toBe(0);
    expect(await e.outside(`SELECT event_seq FROM webhook_deliveries WHERE msg_id = 'kept'`)).toEqual([{ event_seq: seq }]);
  });

  it('rolls a throwing unit back alone; the others of its batch commit, and later ones read earlier ones', async () => {
    const keys = (id: string, v: string | null): Array<[string, string, string | null]> => [['session', id, v]];
    // Started together: one batch (SQLite's 4 ms window; PostgreSQL's queue).
    const first = store.ingest(async (t) => {
      await t.authState.writeKeys(conn, keys('ryw', 'v1'));
      return 'first';
    });
    const failing = store.ingest(async (t) => {
      await t.authState.writeKeys(conn, keys('ryw', 'from-failing'));
      await t.authState.writeKeys(conn, keys('failing-only', 'x'));
      throw new Error('unit failed');
    });
    const reader = store.ingest(async (t) => (await t.authState.getKeys(conn, 'session', ['ryw', 'failing-only'])).get('ryw'));
    const [a, b, c] = await Promise.allSettled([first, failing, reader]);
    expect(a).toEqual({ status: 'fulfilled', value: 'first' });
    expect(b).toMatchObject({ status: 'rejected', reason: { message: 'unit failed' } });
    expect(c).toEqual({ status: 'fulfilled', value: 'v1' });
    expect(await e.outside(`SELECT id, value FROM auth_keys WHERE type = 'session' AND id IN ('ryw', 'failing-only')`)).toEqual([
      { id: 'ryw', value: 'v1' },
    ]);
  });

  it('rolls back a unit whose statement the database refused; the units before and after it in its batch commit', async () => {
    const keys = (id: string): Array<[string, string, string | null]> => [['session', id, 'v']];
    const before = store.ingest((t) => t.authState.writeKeys(conn, keys('before-refused')));
    const refused = store.ingest(async (t) => {
      await t.authState.writeKeys(conn, keys('in-refused'));
      await t.authState.writeKeys('no-such-connection', keys('x')); // the foreign key refuses it
    });
    const after = store.ingest(async (t) => {
      await t.authState.writeKeys(conn, keys('after-refused'));
      return 'after';
    });
    const [a, b, c] = await Promise.allSettled([before, refused, after]);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('rejected');
    expect(c).toEqual({ status: 'fulfilled', value: 'after' });
    expect(await e.outside(`SELECT id FROM auth_keys WHERE type = 'session' AND id LIKE '%-refused' ORDER BY id`)).toEqual([
      { id: 'after-refused' },
      { id: 'before-refused' },
    ]);
  });

  it('resolves ingest only after the COMMIT, as seen from a second connection', async () => {
    const seen: number[] = [];
    let durableSeen: number | undefined;
    const done = store.ingest(async (t) => {
      await eventWithOutbox(t, userB, 'commit-first');
      seen.push(await count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%commit-first%'`)); // still uncommitted
      return 'ok';
    });
    store.whenDurable(() => void count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%commit-first%'`).then((n) => (durableSeen = n)));
    expect(store.isDurable()).toBe(false);
    expect(await done).toBe('ok');
    expect(seen).toEqual([0]);
    expect(await count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%commit-first%'`)).toBe(1);
    await expect.poll(() => durableSeen).toBe(1);
    await store.durable();
    expect(store.isDurable()).toBe(true);
  });

  it('writes beforeCommit writes in the batch, before its COMMIT; a failing one fails the batch', async () => {
    store.beforeCommit(async (t) => {
      await t.authState.writeKeys(conn, [['pre-key', 'deferred', 'dv']]);
    });
    await store.ingest((t) => t.events.append(userB, null, 'message', { tag: 'with-deferred' }));
    expect(await e.outside(`SELECT value FROM auth_keys WHERE id = 'deferred'`)).toEqual([{ value: 'dv' }]);

    const failures: Error[] = [];
    const off = store.onCommitFailure((err) => failures.push(err));
    store.beforeCommit((t) => t.authState.writeKeys('no-such-connection', [['pre-key', 'x', 'y']])); // foreign key fails
    const doomed = store.ingest((t) => t.events.append(userB, null, 'message', { tag: 'doomed' }));
    await expect(doomed).rejects.toThrow();
    expect(failures.length).toBe(1);
    expect(store.storage().state).toBe('unavailable');
    expect(await count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%doomed%'`)).toBe(0);
    await store.ingest((t) => t.events.append(userB, null, 'message', { tag: 'after' }));
    expect(store.storage()).toEqual({ state: 'ok' });
    off();
  });

  it('tells observers to drop a rolled-back unit and announces a batch once, after its commit', async () => {
    rec.announced.length = 0;
    const add = (tag: string, fail = false) =>
      store.ingest(async (t) => {
        rec.pending.push(tag);
        await t.events.append(userB, null, 'message', { tag });
        if (fail) throw new Error('rolled');
        return tag;
      });
    const results = await Promise.allSettled([add('o1'), add('o2', true), add('o3')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(rec.announced).toEqual(['o1', 'o3']);
    await expect(
      store.tx(async () => {
        rec.pending.push('tx-rolled');
        throw new Error('rolled');
      }),
    ).rejects.toThrow();
    await store.tx(async () => void rec.pending.push('tx-kept'));
    expect(rec.announced).toEqual(['o1', 'o3', 'tx-kept']);
    expect(rec.pending).toEqual([]);
  });

  it('keeps a write made outside while a unit runs out of that unit (it survives the unit\'s rollback)', async () => {
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let go!: () => void;
    const gate = new Promise<void>((resolve) => (go = resolve));
    const unit = store.ingest(async (t) => {
      await t.billing.setLocalSlots(userB, 1);
      entered();
      await gate;
      throw new Error('rolled back');
    });
    await inside;
    const outsideWrite = store.read.billing.setLocalSlots(userA, 7);
    go();
    await expect(unit).rejects.toThrow('rolled back');
    await outsideWrite;
    await store.durable();
    expect(await store.read.billing.localSlots(userA)).toBe(7);
    expect(await store.read.billing.localSlots(userB)).toBeUndefined();
  });

  it('commits a relaxed transaction, and a transaction waits for the batch before it', async () => {
    const unit = store.ingest(async (t) => (await t.events.append(userB, null, 'message', { tag: 'before-tx' })).seq);
    const seq = await store.tx(async (t) => (await t.events.append(userB, null, 'message', { tag: 'relaxed' })).seq, { relaxed: true });
    expect(await unit).toBe(seq - 1);
    expect(await count(`SELECT count(*) AS n FROM events WHERE payload LIKE '%relaxed%'`)).toBe(1);
  });
});
