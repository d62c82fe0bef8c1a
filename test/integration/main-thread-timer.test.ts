/**
 * The main thread never sleeps (issue 26 item 5, docs/architecture.md § Threads and the write lock): the real
 * service with one session thread and a real SQLite file. The session thread holds the write lock (the threads'
 * lock and SQLite's, in a transaction) for 200 ms with its event loop stopped while an API write on the main
 * thread wants it: the main thread's timer keeps firing on time (it waits for the lock with `Atomics.waitAsync`
 * and timers, never `Atomics.wait` or SQLite's busy handler), and the write completes once the lock is free.
 * Then the thread hangs holding the lock: API writes answer 503 within the main thread's bound meanwhile, the
 * watchdog logs an error naming the thread and stops it, the pool replaces it, and writes go through again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../service/index.ts';
import { offlineServiceConfig } from './api-harness.ts';

const HOLD_MS = 200;
const TICK_MS = 10;
/**
 * The longest gap allowed between two ticks of the main thread's 10 ms timer: a main thread sleeping in the lock
 * leaves one of ~200 ms; 120 leaves room for a loaded machine's scheduling.
 */
const MAX_GAP_MS = 120;

describe('the main thread while a session thread holds the write lock', () => {
  let dataDir: string;
  let service: RunningService;
  let token: string;
  const logLines: string[] = [];
  const call = (method: string, route: string, body?: unknown) =>
    fetch(`${service.apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-main-timer-'));
    const config = offlineServiceConfig(dataDir, { workers: 1 });
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) });
    service = await startService(config, { logger, openKeychain: null, testHooks: true });
    token = await service.issueLocalToken('alice', 'test');
  });
  afterAll(async () => {
    await service?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a main-thread timer fires on time while a session thread holds the lock for 200 ms', { timeout: 30_000 }, async () => {
    const created = await call('POST', '/connections', { name: 'before' });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };

    const ticks: number[] = [];
    const timer = setInterval(() => ticks.push(performance.now()), TICK_MS);
    try {
      await sleep(100);
      await service.sessionThreads!.testHoldWriteLock(0, HOLD_MS);
      const heldAt = performance.now();
      const res = await call('PATCH', `/connections/${id}`, { name: 'after' });
      const doneAt = performance.now();
      await sleep(50);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { name: string }).name).toBe('after');
      // The write waited for the session thread's commit (it could not have gone through while the lock was held).
      expect(doneAt - heldAt).toBeGreaterThanOrEqual(HOLD_MS * 0.7);
      const during = ticks.filter((t) => t >= heldAt - TICK_MS * 2 && t <= doneAt + TICK_MS * 2);
      const gaps = during.slice(1).map((t, i) => t - during[i]!);
      expect(Math.max(...gaps), `gaps between ticks (ms): ${gaps.map((g) => g.toFixed(0)).join(' ')}`).toBeLessThan(MAX_GAP_MS);
      expect(during.length).toBeGreaterThanOrEqual(Math.floor(HOLD_MS / TICK_MS / 2));
    } finally {
      clearInterval(timer);
    }
  });

  it('the watchdog stops a session thread that hangs holding the lock; the lock is freed and writes go through again', { timeout: 60_000 }, async () => {
    const threads = service.sessionThreads!;
    const { id } = ((await (await call('GET', '/connections')).json()) as Array<{ id: string }>)[0]!;
    const hung = threads.threads()[0]!.threadId;
    await threads.testHoldWriteLock(0, 120_000);

    // Meanwhile an API write gives up within the main thread's bound (503), and the main thread keeps answering.
    const started = performance.now();
    const refused = await call('PATCH', `/connections/${id}`, { name: 'while hung' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(performance.now() - started).toBeLessThan(3_000);
    expect((await call('GET', `/connections/${id}`)).status).toBe(200);

    // Within the watchdog's bound (5 s of silence, checked every second) the thread is stopped and replaced.
    const deadline = Date.now() + 20_000;
    while (threads.threads()[0]!.threadId === hung && Date.now() < deadline) await sleep(100);
    expect(threads.threads()[0]!.threadId).not.toBe(hung);
    const report = logLines.map((l) => JSON.parse(l) as { msg: string; thread?: number; threadId?: number; level: number }).find((l) => /holding the write lock/.test(l.msg));
    expect(report).toMatchObject({ level: 50, thread: 0, threadId: hung });

    const after = await call('PATCH', `/connections/${id}`, { name: 'after the watchdog' });
    expect(after.status).toBe(200);
    expect(((await after.json()) as { name: string }).name).toBe('after the watchdog');
  });
});
