/**
 * Storage contract, repositories: every core repository answers the same on SQLite and on PostgreSQL
 * (store-api.ts `Repos`; docs/architecture.md § Storage engines). Each engine runs the same body on a fresh database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../service/db/store-api.ts';
import { ENGINES, openEngine, type EngineUnderTest } from './engines.ts';

describe.each(ENGINES)('repositories on %s', (engine) => {
  let e: EngineUnderTest;
  let store: Store;
  beforeAll(async () => {
    e = await openEngine(engine);
    store = e.store;
  });
  afterAll(() => e?.close());

  /** A local user and one of its connections. */
  async function userWithConnection(name: string) {
    const user = await store.read.users.create(name);
    const conn = await store.read.connections.insert({ id: `${name}-c1`, userId: user.id, name: 'phone', workerId: 'w1' });
    return { user, conn };
  }

  it('users: local and JWT namespaces, owner, count, disable', async () => {
    const u = store.read.users;
    const alice = await u.create('alice', 'a@example.com');
    expect(alice).toMatchObject({ kind: 'local', name: 'alice', email: 'a@example.com', disabled: false, issuer: null, subject: null });
    await expect(u.create('alice')).rejects.toThrow();
    expect(await u.byLocalName('alice')).toEqual(alice);
    expect(await u.get(alice.id)).toEqual(alice);
    expect(await u.ensure('alice')).toEqual(alice);
    const bob = await u.ensure('bob');
    expect(bob.name).toBe('bob');
    const jwt = await u.ensureJwtUser('https://idp', 'sub-1', { preferredName: 'alice' });
    expect(jwt).toMatchObject({ kind: 'jwt', name: 'alice', issuer: 'https://idp', subject: 'sub-1' });
    expect(await u.ensureJwtUser('https://idp', 'sub-1', { email: 'other' })).toEqual(jwt);
    expect(await u.byJwtIdentity('https://idp', 'sub-1')).toEqual(jwt);
    expect(await u.byLocalName('nobody')).toBeUndefined();
    expect((await u.owner())?.id).toBe(alice.id);
    expect(await u.count()).toBe(3);
    expect((await u.list()).map((x) => x.name).sort()).toEqual(['alice', 'alice', 'bob']);
    await u.setDisabled(bob.id, true);
    expect((await u.get(bob.id))?.disabled).toBe(true);
  });

  it('tokens: insert, look up by hash, touch, revoke', async () => {
    const { user } = await userWithConnection('tok');
    const t = store.read.tokens;
    const rec = await t.insert({ id: 'tk1', userId: user.id, name: 'ci', prefix: 'sb_ab', hash: 'h1' });
    expect(rec).toMatchObject({ id: 'tk1', name: 'ci', prefix: 'sb_ab', lastUsedAt: null });
    expect(await t.findActiveByHash('h1')).toMatchObject({ id: 'tk1', userId: user.id });
    expect(await t.credentialByHash('h1')).toEqual({ tokenId: 'tk1', userId: user.id, lastUsedAt: null, userName: 'tok', userDisabled: false });
    await t.touch('tk1', '2026-01-01T00:00:00.000Z');
    expect((await t.get('tk1'))?.lastUsedAt).toBe('2026-01-01T00:00:00.000Z');
    expect((await t.listActive(user.id)).map((r) => r.id)).toEqual(['tk1']);
    expect(await t.revoke('tk1')).toBe(true);
    expect(await t.revoke('tk1')).toBe(false);
    expect(await t.findActiveByHash('h1')).toBeUndefined();
    expect(await t.credentialByHash('h1')).toBeUndefined();
    expect((await t.get('tk1'))?.revokedAt).toEqual(expect.any(String));
    expect(await t.listActive(user.id)).toEqual([]);
  });

  it('connections: insert, status, account, rename, call settings, lists and counts', async () => {
    const { user, conn } = await userWithConnection('con');
    const c = store.read.connections;
    expect(conn).toMatchObject({ userId: user.id, name: 'phone', status: 'starting', rejectCalls: false, jid: null });
    expect(conn.sessionName).toMatch(/^u_[0-9a-f]{8}_s_conc1$/);
    expect((await c.findIdle(user.id))?.id).toBe(conn.id);
    await c.setAccount(conn.id, { phoneNumber: '+1555', jid: '1555@s.whatsapp.net', lid: '99@lid', pushName: 'Me' });
    await c.setAccount(conn.id, { phoneNumber: '+1555', jid: '1555@s.whatsapp.net' }); // lid and pushName kept
    await c.setStatus(conn.id, 'online', null);
    await c.rename(conn.id, 'work');
    await c.setCallSettings(conn.id, true, 'busy');
    expect(await c.get(conn.id)).toMatchObject({
      phoneNumber: '+1555', jid: '1555@s.whatsapp.net', lid: '99@lid', pushName: 'Me', status: 'online', name: 'work',
      rejectCalls: true, rejectCallsMessage: 'busy',
    });
    expect(await c.findIdle(user.id)).toBeUndefined();
    const c2 = await c.insert({ id: 'con-c2', userId: user.id, name: null, workerId: 'w1' });
    expect(await c.countActiveByUser(user.id)).toBe(2);
    await c.setStatus(c2.id, 'stopped', 'deleted');
    expect((await c.listByUser(user.id)).map((r) => r.id)).toEqual([conn.id]);
    expect((await c.listByUser(user.id, { includeStopped: true })).map((r) => r.id)).toEqual([conn.id, c2.id]);
    expect(await c.countActiveByUser(user.id)).toBe(1);
    expect((await c.listActive()).map((r) => r.id)).toContain(conn.id);
    expect(await c.countActive()).toBe((await c.listActive()).length);
    expect(await c.get('nope')).toBeUndefined();
  });

  it('auth state: creds, key batches (null deletes), clear', async () => {
    const { conn } = await userWithConnection('auth');
    const a = store.read.authState;
    expect(await a.getCreds(conn.id)).toBeUndefined();
    await a.putCreds(conn.id, '{"a":1}');
    await a.putCreds(conn.id, '{"a":2}');
    expect(await a.getCreds(conn.id)).toBe('{"a":2}');
    await a.setKeys(conn.id, [['session', 'x', 'v1'], ['session', 'y', 'v2'], ['pre-key', '1', 'p1']]);
    await a.setKeys(conn.id, [['session', 'x', 'v3'], ['session', 'y', null]]);
    expect([...(await a.getKeys(conn.id, 'session', ['y', 'x', 'z']))]).toEqual([['x', 'v3']]);
    await store.tx(async (t) => {
      await t.authState.writeKeys(conn.id, [['session', 'z', 'vz'], ['session', 'z', 'vz2']]);
    });
    expect([...(await a.getKeys(conn.id, 'session', ['x', 'z']))]).toEqual([['x', 'v3'], ['z', 'vz2']]);
    expect((await a.getKeys(conn.id, 'session', [])).size).toBe(0);
    await a.clear(conn.id);
    expect(await a.getCreds(conn.id)).toBeUndefined();
    expect((await a.getKeys(conn.id, 'pre-key', ['1'])).size).toBe(0);
  });

  it('events: seq per user, pages, filters, prune keeps undelivered', async () => {
    const { user, conn } = await userWithConnection('ev');
    const other = await store.read.users.create('ev-other');
    const appended = await store.tx(async (t) => [
      await t.events.append(user.id, conn.id, 'message', { n: 1 }),
      await t.events.append(user.id, null, 'connection.status', { n: 2 }),
      await t.events.append(other.id, null, 'message', { n: 1 }),
      await t.events.append(user.id, conn.id, 'message', { n: 3 }),
    ]);
    expect(appended.map((x) => x.seq)).toEqual([1, 2, 1, 3]);
    await expect(store.tx((t) => t.events.append('no-such-user', null, 'x', {}))).rejects.toThrow(/unknown user/);
    const ev = store.read.events;
    expect(await ev.lastSeq(user.id)).toBe(3);
    expect(await ev.lastSeq('nobody')).toBe(0);
    expect(await ev.firstSeq(user.id)).toBe(1);
    expect(await ev.firstSeq('nobody')).toBeUndefined();
    const all = await ev.after(user.id, 0, 10);
    expect(all.map((x) => [x.seq, x.event, x.connectionId, x.payload])).toEqual([
      [1, 'message', conn.id, { n: 1 }],
      [2, 'connection.status', null, { n: 2 }],
      [3, 'message', conn.id, { n: 3 }],
    ]);
    expect(all[0]!.timestamp).toBe(appended[0]!.timestamp);
    expect((await ev.after(user.id, 1, 1)).map((x) => x.seq)).toEqual([2]);
    expect((await ev.afterFiltered(user.id, 0, 10, { types: ['message'] })).map((x) => x.seq)).toEqual([1, 3]);
    expect((await ev.afterFiltered(user.id, 0, 10, { connectionId: conn.id })).map((x) => x.seq)).toEqual([1, 3]);
    expect((await ev.afterFiltered(user.id, 0, 10, { types: ['connection.status'], connectionId: conn.id }))).toEqual([]);
    expect((await ev.afterFiltered(user.id, 0, 10)).length).toBe(3);
    // An undelivered outbox row keeps its event.
    const hook = await store.read.webhooks.insert({ id: 'ev-h', userId: user.id, connectionId: conn.id, url: 'https://x', events: ['message'], secret: 's', active: true });
    await store.read.deliveries.insert({ id: 'ev-d', webhookId: hook.id, userId: user.id, eventSeq: 3, msgId: 'm', eventType: 'message', body: '{}', status: 'pending', nextAttemptAt: 0 });
    expect(await ev.prune('9999-01-01T00:00:00.000Z')).toBe(3);
    expect((await ev.after(user.id, 0, 10)).map((x) => x.seq)).toEqual([3]);
    expect(await ev.lastSeq(user.id)).toBe(3);
  });

  it('webhooks: insert, update, targets, settings, delete', async () => {
    const { user, conn } = await userWithConnection('wh');
    const w = store.read.webhooks;
    const hook = await w.insert({ id: 'wh1', userId: user.id, connectionId: conn.id, url: 'https://a', events: ['message'], secret: 'whsec_x', active: true });
    expect(hook).toMatchObject({ id: 'wh1', url: 'https://a', events: ['message'], active: true, disabledReason: null });
    expect(await w.getCached('wh1')).toEqual(hook);
    expect(await w.targets(conn.id)).toEqual([{ id: 'wh1', events: ['message'], active: true, sessionName: conn.sessionName }]);
    expect(await w.activeIds()).toContain('wh1');
    const off = await w.update('wh1', { active: false, disabledReason: 'HTTP 410' });
    expect(off).toMatchObject({ active: false, disabledReason: 'HTTP 410', url: 'https://a' });
    expect(await w.activeIds()).not.toContain('wh1');
    expect(await w.update('wh1', { active: true, events: ['*'] })).toMatchObject({ active: true, disabledReason: null, events: ['*'] });
    expect(await w.update('nope', { url: 'x' })).toBeUndefined();
    await w.forgetCache();
    expect((await w.listByConnection(conn.id)).map((r) => r.id)).toEqual(['wh1']);
    expect(await w.allowLanSetting()).toBe(false);
    await w.setAllowLanSetting(true);
    expect(await w.allowLanSetting()).toBe(true);
    expect(await w.delete('wh1')).toBe(true);
    expect(await w.delete('wh1')).toBe(false);
    expect(await w.get('wh1')).toBeUndefined();
  });

  it('deliveries: outbox rows, claims, outcomes, requeue, prune', async () => {
    const { user, conn } = await userWithConnection('dl');
    const hook = await store.read.webhooks.insert({ id: 'dl-h', userId: user.id, connectionId: conn.id, url: 'https://a', events: ['*'], secret: 's', active: true });
    const d = store.read.deliveries;
    const open = await d.countOpen(); // other tests' rows
    const base = { webhookId: hook.id, userId: user.id, msgId: 'm', eventType: 'message', body: '{"x":1}' };
    await d.insert({ ...base, id: 'd1', eventSeq: 1, status: 'pending', nextAttemptAt: 100 }, '2026-01-01T00:00:00.000Z');
    await d.insert({ ...base, id: 'd2', eventSeq: 2, status: 'pending', nextAttemptAt: 50 }, '2026-01-01T00:00:00.000Z');
    await d.insert({ ...base, id: 'd3', eventSeq: 3, status: 'delivering', nextAttemptAt: 0, leaseUntil: 10 }, '2026-01-01T00:00:01.000Z');
    expect(await d.get('d3')).toMatchObject({ status: 'delivering', attempts: 1 });
    expect((await d.logs(hook.id)).map((r) => r.id)).toEqual(['d3', 'd2', 'd1']);
    expect((await d.logs(hook.id, 1)).map((r) => r.id)).toEqual(['d3']);
    expect(await d.countOpen()).toBe(open + 3);
    expect(await d.hasDue(hook.id, 60)).toBe(true);
    expect(await d.hasDue(hook.id, 10)).toBe(false);
    expect(await d.nextDue(hook.id)).toBe(50);
    expect(await d.nextDue('none')).toBeUndefined();
    const claimed = await d.claim(new Map([[hook.id, 5]]), 100, 1_000);
    expect(claimed.map((c) => [c.id, c.attempts, c.nextAttemptAt])).toEqual([['d2', 1, 50], ['d1', 1, 100]]);
    expect(await d.claim(new Map([[hook.id, 5]]), 100, 1_000)).toEqual([]);
    await d.complete([
      { id: 'd1', kind: 'delivered', status: 200, response: 'ok' },
      { id: 'd2', kind: 'retry', status: 500, error: 'HTTP 500', response: null, nextAttemptAt: 5_000 },
    ]);
    await d.complete([]);
    expect(await d.get('d1')).toMatchObject({ status: 'delivered', lastStatus: 200, deliveredAt: expect.any(String) });
    expect(await d.get('d2')).toMatchObject({ status: 'pending', lastStatus: 500, lastError: 'HTTP 500', nextAttemptAt: 5_000 });
    expect(await d.dueNow('d2', 7)).toBe(true);
    expect(await d.dueNow('d1', 7)).toBe(false);
    const [again] = await d.claim(new Map([[hook.id, 1]]), 10, 2_000);
    expect(again).toMatchObject({ id: 'd2', attempts: 2 });
    await d.complete([{ id: 'd2', kind: 'release' }]);
    expect(await d.get('d2')).toMatchObject({ status: 'pending', attempts: 1 });
    // d3's lease (10) expired; a requeue at 20 puts it back, unless its attempt was the last.
    expect(await d.requeue({ all: false, maxAttempts: 5, now: 5 })).toEqual({ requeued: 0, failed: 0 });
    expect(await d.requeue({ all: false, maxAttempts: 1, now: 20 })).toEqual({ requeued: 0, failed: 1 });
    expect(await d.get('d3')).toMatchObject({ status: 'failed', lastError: 'interrupted during the last attempt' });
    await d.claim(new Map([[hook.id, 1]]), 10_000, 20_000);
    await d.complete([{ id: 'd2', kind: 'failed', status: null, error: 'gone', response: null }]);
    expect(await d.get('d2')).toMatchObject({ status: 'failed', lastError: 'gone' });
    await d.insert({ ...base, id: 'd4', eventSeq: 4, status: 'pending', nextAttemptAt: 0 }, '2026-01-01T00:00:00.000Z');
    await store.read.webhooks.update(hook.id, { active: false });
    expect(await d.prune('2026-06-01T00:00:00.000Z')).toBe(4); // d4 held by a paused webhook fails, then goes too
    expect(await d.countOpen()).toBe(open);
    await d.insert({ ...base, id: 'd5', eventSeq: 5, status: 'delivering', nextAttemptAt: 0, leaseUntil: 1e15 });
    expect(await d.requeue({ all: true, maxAttempts: 5 })).toEqual({ requeued: 1, failed: 0 });
  });

  it('idempotency keys: reserve, name the message, answer, release, prune', async () => {
    const { user, conn } = await userWithConnection('idem');
    const k = store.read.idempotency;
    const ref = { userId: user.id, connectionId: conn.id, key: 'k1' };
    expect(await k.get(ref)).toBeUndefined();
    await k.reserve(ref, { fingerprint: 'f1', route: 'POST /send', createdAt: '2026-01-01T00:00:00.000Z' });
    expect(await k.get(ref)).toEqual({ fingerprint: 'f1', route: 'POST /send', state: 'pending', messageId: null, answer: null, createdAt: '2026-01-01T00:00:00.000Z' });
    await store.tx((t) => t.idempotency.markRecorded(ref, 'msg-1'));
    await k.complete(ref, { statusCode: 201, contentType: 'application/json', body: '{}' });
    await k.markRecorded(ref, 'msg-2'); // done: left alone
    expect(await k.get(ref)).toMatchObject({ state: 'done', messageId: 'msg-1', answer: { statusCode: 201, contentType: 'application/json', body: '{}' } });
    await k.reserve(ref, { fingerprint: 'f2', route: 'POST /send', createdAt: '2026-01-03T00:00:00.000Z' });
    expect(await k.get(ref)).toMatchObject({ fingerprint: 'f2', state: 'pending', messageId: null, answer: null });
    await k.release(ref);
    expect(await k.get(ref)).toBeUndefined();
    await k.reserve({ ...ref, key: 'old' }, { fingerprint: 'f', route: 'r', createdAt: '2026-01-01T00:00:00.000Z' });
    expect(await k.prune('2026-01-02T00:00:00.000Z')).toBe(1);
  });

  it('billing: local slots and Stripe customers per mode', async () => {
    const { user } = await userWithConnection('bill');
    const b = store.read.billing;
    expect(await b.localSlots(user.id)).toBeUndefined();
    await b.setLocalSlots(user.id, 3);
    await b.setLocalSlots(user.id, 4);
    expect(await b.localSlots(user.id)).toBe(4);
    await b.saveStripeCustomer(user.id, 'test', 'cus_1');
    await b.setStripeSubscription(user.id, 'test', 'sub_1');
    expect(await b.stripeCustomer(user.id, 'test')).toEqual({ userId: user.id, mode: 'test', customerId: 'cus_1', subscriptionId: 'sub_1' });
    expect(await b.stripeCustomer(user.id, 'live')).toBeUndefined();
    await b.saveStripeCustomer(user.id, 'test', 'cus_2');
    expect(await b.stripeCustomer(user.id, 'test')).toMatchObject({ customerId: 'cus_2', subscriptionId: null });
    await b.forgetStripeCustomer(user.id, 'test');
    expect(await b.stripeCustomer(user.id, 'test')).toBeUndefined();
  });
});
