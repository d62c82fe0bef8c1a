/**
 * Idempotency keys at the data layer (db/idempotency.ts) on a real SQLite file: a reserved key, the message the
 * engine names on it, the stored answer, release, expiry by the retention after 24 h; and the request fingerprint
 * (plugins/idempotency.ts), which ignores key order but nothing else.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_TTL_MS } from '../../service/db/idempotency.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { startRetention } from '../../service/events/retention.ts';
import { requestFingerprint } from '../../service/http/plugins/idempotency.ts';

const CONNECTION = '11111111-2222-4333-8444-555555555555';

describe('idempotency keys', () => {
  let dir: string;
  let store: Store;
  let userId: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-idem-'));
    store = openStore(dir);
    userId = store.users.ensure('u').id;
    store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
  });
  afterEach(() => {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reserves, names the recorded message, stores the answer, releases', () => {
    const ref = { userId, connectionId: CONNECTION, key: 'k1' };
    expect(store.idempotency.get(ref)).toBeUndefined();
    const createdAt = new Date().toISOString();
    store.idempotency.reserve(ref, { fingerprint: 'f1', route: 'POST /api/connections/:id/send', createdAt });
    expect(store.idempotency.get(ref)).toEqual({
      fingerprint: 'f1',
      route: 'POST /api/connections/:id/send',
      state: 'pending',
      messageId: null,
      answer: null,
      createdAt,
    });
    store.idempotency.markRecorded(ref, 'true_x@s.whatsapp.net_ABC');
    expect(store.idempotency.get(ref)?.messageId).toBe('true_x@s.whatsapp.net_ABC');
    store.idempotency.complete(ref, {
      statusCode: 201,
      contentType: 'application/json; charset=utf-8',
      body: '{"id":"1"}',
    });
    expect(store.idempotency.get(ref)).toMatchObject({
      state: 'done',
      answer: { statusCode: 201, contentType: 'application/json; charset=utf-8', body: '{"id":"1"}' },
    });
    // A done key is not named again (a late record of a request that was answered cannot rewrite it).
    store.idempotency.markRecorded(ref, 'other');
    expect(store.idempotency.get(ref)?.messageId).toBe('true_x@s.whatsapp.net_ABC');
    // Another key, user or connection is another row.
    expect(store.idempotency.get({ ...ref, key: 'k2' })).toBeUndefined();
    store.idempotency.release(ref);
    expect(store.idempotency.get(ref)).toBeUndefined();
  });

  it('a reserve over an expired row starts afresh', () => {
    const ref = { userId, connectionId: CONNECTION, key: 'k1' };
    store.idempotency.reserve(ref, { fingerprint: 'old', route: 'r', createdAt: new Date(0).toISOString() });
    store.idempotency.markRecorded(ref, 'm');
    store.idempotency.complete(ref, { statusCode: 201, contentType: null, body: '{}' });
    const now = new Date().toISOString();
    store.idempotency.reserve(ref, { fingerprint: 'new', route: 'r', createdAt: now });
    expect(store.idempotency.get(ref)).toEqual({
      fingerprint: 'new',
      route: 'r',
      state: 'pending',
      messageId: null,
      answer: null,
      createdAt: now,
    });
  });

  it('the retention prunes keys older than 24 h, whatever the event retention', () => {
    const now = Date.now();
    const fresh = { userId, connectionId: CONNECTION, key: 'fresh' };
    const old = { userId, connectionId: CONNECTION, key: 'old' };
    store.idempotency.reserve(fresh, {
      fingerprint: 'f',
      route: 'r',
      createdAt: new Date(now - IDEMPOTENCY_TTL_MS + 60_000).toISOString(),
    });
    store.idempotency.reserve(old, {
      fingerprint: 'f',
      route: 'r',
      createdAt: new Date(now - IDEMPOTENCY_TTL_MS - 60_000).toISOString(),
    });
    const retention = startRetention({ store, logger: { info: () => undefined, error: () => undefined }, days: 30 });
    try {
      expect(retention.pruneNow(now)).toMatchObject({ idempotencyKeys: 1 });
    } finally {
      retention.stop();
    }
    expect(store.idempotency.get(fresh)).toBeDefined();
    expect(store.idempotency.get(old)).toBeUndefined();
  });

  it('goes with its connection', () => {
    const ref = { userId, connectionId: CONNECTION, key: 'k' };
    store.idempotency.reserve(ref, { fingerprint: 'f', route: 'r', createdAt: new Date().toISOString() });
    store.tx(() => store.db.prepare('DELETE FROM connections WHERE id = ?').run(CONNECTION));
    expect(store.idempotency.get(ref)).toBeUndefined();
  });
});

describe('request fingerprint', () => {
  const route = 'POST /api/connections/:id/send';
  const req = (body: unknown, params: unknown = { id: 'c' }, query: unknown = {}) => ({ body, params, query });

  it('ignores the order of keys, at any depth', () => {
    expect(requestFingerprint(route, req({ a: 1, b: { x: [1, { p: 1, q: 2 }], y: 'z' } }))).toBe(
      requestFingerprint(route, req({ b: { y: 'z', x: [1, { q: 2, p: 1 }] }, a: 1 })),
    );
  });

  it('tells apart anything else: values, array order, types, route, parameters, query', () => {
    const base = requestFingerprint(route, req({ text: 'hi', n: 1 }));
    for (const other of [
      requestFingerprint(route, req({ text: 'hi!', n: 1 })),
      requestFingerprint(route, req({ text: 'hi', n: '1' })),
      requestFingerprint(route, req({ text: 'hi', n: 1, extra: null })),
      requestFingerprint('POST /api/connections/:id/send-image', req({ text: 'hi', n: 1 })),
      requestFingerprint(route, req({ text: 'hi', n: 1 }, { id: 'd' })),
      requestFingerprint(route, req({ text: 'hi', n: 1 }, { id: 'c' }, { chatId: 'x' })),
    ]) {
      expect(other).not.toBe(base);
    }
    expect(requestFingerprint(route, req({ list: [1, 2] }))).not.toBe(requestFingerprint(route, req({ list: [2, 1] })));
  });
});
