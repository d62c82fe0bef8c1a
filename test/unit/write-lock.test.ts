/**
 * The threads' write lock (db/write-lock.ts) and the writes that must take it. With session threads, a writer that
 * bypasses the lock finds SQLite's own lock taken by a thread's group commit and sleeps in SQLite's busy handler
 * (up to 100 ms a step) with its event loop stopped: the webhook dispatcher's claims and outcomes did, and webhook
 * deliveries lagged by up to a second (docs/scaling.md). Here a real worker thread holds the lock (only the lock, not
 * SQLite's: a write that skips the lock would go through at once) and the test sees each write wait for it, and a
 * bounded wait give up with SQLITE_BUSY, having written nothing. The main thread's lock never blocks
 * (docs/architecture.md § Threads and the write lock): `acquire` only tries, and `txAsync` waits with
 * `Atomics.waitAsync` while the event loop keeps turning.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { isBusyError, openStore, type Store } from '../../service/db/store.ts';
import { WriteLock } from '../../service/db/write-lock.ts';

const HOLD_MS = 300;

/** A worker thread that takes the lock word, says so, holds it HOLD_MS, and lets go (as WriteLock.release does). */
function holdLockInAnotherThread(buffer: SharedArrayBuffer): Promise<Worker> {
  const worker = new Worker(
    `const { workerData, parentPort, threadId } = require('node:worker_threads');
     const word = new Int32Array(workerData.buffer, 0, 1);
     if (Atomics.compareExchange(word, 0, 0, threadId + 1) !== 0) throw new Error('lock not free');
     parentPort.postMessage('held');
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs);
     Atomics.store(word, 0, 0);
     Atomics.notify(word, 0, 1);`,
    { eval: true, workerData: { buffer, holdMs: HOLD_MS } },
  );
  return new Promise((resolve, reject) => worker.once('message', () => resolve(worker)).once('error', reject));
}

describe('write lock', () => {
  let dir: string | undefined;
  let store: Store | undefined;
  afterEach(() => {
    store?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    store = dir = undefined;
  });

  const open = (buffer: SharedArrayBuffer) => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-lock-'));
    store = openStore(dir, { writeLock: new WriteLock(buffer) });
    return store;
  };

  it('blocks a writer until the holding thread lets go', async () => {
    const buffer = new SharedArrayBuffer(4);
    const lock = new WriteLock(buffer);
    const holder = await holdLockInAnotherThread(buffer);
    const started = performance.now();
    lock.acquire();
    expect(performance.now() - started).toBeGreaterThanOrEqual(HOLD_MS * 0.8);
    lock.release();
    await holder.terminate();
  });

  it('gives up after giveUpMs with SQLITE_BUSY (the main thread bounds its wait); the write wrote nothing', async () => {
    const buffer = new SharedArrayBuffer(4);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-lock-'));
    const s = (store = openStore(dir, { writeLock: new WriteLock(buffer, undefined, { giveUpMs: HOLD_MS / 3 }) }));
    const holder = await holdLockInAnotherThread(buffer);
    let error: unknown;
    try {
      s.tx(() => s.users.ensure('u'));
    } catch (err) {
      error = err;
    }
    expect(isBusyError(error)).toBe(true);
    expect((error as { code?: string }).code).toBe('SQLITE_BUSY');
    await holder.terminate();
    expect(s.users.list()).toEqual([]);
  });

  // Each of the store's own writes outside tx/ingest that the main thread makes while session threads commit.
  const writes: Array<[string, (s: Store) => unknown]> = [
    ['deliveries.claim (the dispatcher)', (s) => s.deliveries.claim(new Map([['no-such-webhook', 10]]), Date.now(), Date.now() + 1_000)],
    ['deliveries.complete (the dispatcher)', (s) => s.deliveries.complete([{ id: 'no-such-delivery', kind: 'release' }])],
    ['deliveries.requeue (lease sweep)', (s) => s.deliveries.requeue({ all: false, maxAttempts: 5 })],
    ['deliveries.prune (retention)', (s) => s.deliveries.prune(new Date(0).toISOString())],
    ['events.prune (retention)', (s) => s.events.prune(new Date(0).toISOString())],
    ['idempotency.prune (retention)', (s) => s.idempotency.prune(new Date(0).toISOString())],
    ['idempotency.release (an idempotent request that did nothing)', (s) => s.idempotency.release({ userId: 'u', connectionId: 'c', key: 'k' })],
    ['idempotency.complete (the answer of an idempotent request)', (s) => s.idempotency.complete({ userId: 'u', connectionId: 'c', key: 'k' }, { statusCode: 200, contentType: null, body: '' })],
    ['a tx', (s) => s.tx(() => s.users.ensure('u'))],
  ];
  for (const [name, write] of writes) {
    it(`${name} waits for the lock instead of SQLite's busy handler`, async () => {
      const buffer = new SharedArrayBuffer(4);
      const s = open(buffer);
      const holder = await holdLockInAnotherThread(buffer);
      const started = performance.now();
      write(s);
      expect(performance.now() - started).toBeGreaterThanOrEqual(HOLD_MS * 0.8);
      await holder.terminate();
    });
  }

  describe("the main thread's lock (blocking: false)", () => {
    it('acquire only tries: SQLITE_BUSY at once while another thread holds the lock', async () => {
      const buffer = new SharedArrayBuffer(4);
      const lock = new WriteLock(buffer, undefined, { blocking: false });
      const holder = await holdLockInAnotherThread(buffer);
      const started = performance.now();
      expect(() => lock.acquire()).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
      expect(performance.now() - started).toBeLessThan(HOLD_MS / 3);
      expect(WriteLock.holderOf(buffer)).toBe(holder.threadId);
      await holder.terminate();
    });

    it('txAsync waits for the lock with the event loop turning, then writes', async () => {
      const buffer = new SharedArrayBuffer(4);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-lock-'));
      const s = (store = openStore(dir, { writeLock: new WriteLock(buffer, undefined, { blocking: false }), busyTimeoutMs: 0 }));
      const holder = await holdLockInAnotherThread(buffer);
      const ticks: number[] = [];
      const timer = setInterval(() => ticks.push(performance.now()), 10);
      const started = performance.now();
      const user = await s.txAsync(() => s.users.ensure('u'));
      clearInterval(timer);
      expect(performance.now() - started).toBeGreaterThanOrEqual(HOLD_MS * 0.8);
      expect(ticks.length).toBeGreaterThanOrEqual(HOLD_MS / 10 / 2);
      expect(s.users.list().map((u) => u.id)).toEqual([user.id]);
      expect(WriteLock.holderOf(buffer)).toBeUndefined();
      await holder.terminate();
    });

    it('txAsync gives up with SQLITE_BUSY after asyncWriteWaitMs; the write wrote nothing', async () => {
      const buffer = new SharedArrayBuffer(4);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-lock-'));
      const s = (store = openStore(dir, { writeLock: new WriteLock(buffer, undefined, { blocking: false }), busyTimeoutMs: 0, asyncWriteWaitMs: HOLD_MS / 3 }));
      const holder = await holdLockInAnotherThread(buffer);
      const error = await s.txAsync(() => s.users.ensure('u')).catch((err: unknown) => err);
      expect(isBusyError(error)).toBe(true);
      await holder.terminate();
      expect(s.users.list()).toEqual([]);
    });
  });
});
