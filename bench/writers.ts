/**
 * `npm run bench -- writers [--threads 1,2,4] [--seconds 4] [--work-us 300]`
 *
 * Prototype for issue 16: how should writes from several session threads reach one SQLite file? Each of `threads`
 * worker threads produces message-sized rows (600 bytes) as fast as it can, spending `--work-us` µs of CPU on each
 * first (standing in for Signal decryption and the message model), and counts a row only once it is durable
 * (what a receipt waits for). Two strategies, each with 4 ms group commits (the store's BATCH_WINDOW_MS):
 *   - `per-thread`: every thread has its own connection and group-commits with BEGIN IMMEDIATE on the WAL
 *     (writers wait for each other through busy_timeout);
 *   - `per-thread-turn`: the same, but each thread commits at the end of its event-loop turn (setImmediate), so
 *     it holds the write lock only while it writes, not while it computes the next rows;
 *   - `main-writer`: threads post their rows to the main thread, which group-commits them on one connection and
 *     posts the acknowledgements back.
 * Every commit is made as the store makes it: synchronous=NORMAL, then the WAL is fdatasync'ed on the thread pool
 * (wal-sync.ts) and the rows count once that sync is done. Reports durable rows/s and the p50/p99 latency from "row ready" to "row durable".
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { BenchResult } from './index.ts';
import { flag, list, round } from './lib.ts';

// Plain JavaScript evaluated in each worker (no loader needed).
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const { strategy, file, seconds, workUs, driver, id } = workerData;
const body = 'x'.repeat(600);
const lat = [];
let done = 0;
const spin = () => { const end = process.hrtime.bigint() + BigInt(workUs) * 1000n; let h = 0; while (process.hrtime.bigint() < end) h = crypto.createHash('sha1').update(body).digest()[0] ^ h; return h; };
const deadline = Date.now() + seconds * 1000;
if (strategy !== 'main-writer') {
  const Database = require(driver);
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  const fs = require('node:fs');
  const ins = db.prepare('INSERT INTO m (thread, body) VALUES (?, ?)');
  let walFd;
  let open = false, batch = [], syncing = 0;
  const commit = () => {
    if (!open) return;
    db.exec('COMMIT');
    open = false;
    walFd ??= fs.openSync(file + '-wal', 'r+');
    const b = batch; batch = []; syncing++;
    fs.fdatasync(walFd, () => { syncing--; const t = performance.now(); for (const s of b) lat.push(t - s); done += b.length; });
  };
  const step = () => {
    if (Date.now() > deadline) { commit(); const end = () => syncing ? setTimeout(end, 5) : (db.close(), parentPort.postMessage({ done, lat })); end(); return; }
    for (let i = 0; i < 4; i++) {
      spin();
      const t = performance.now();
      if (!open) { db.exec('BEGIN IMMEDIATE'); open = true; if (strategy === 'per-thread') setTimeout(commit, 4); else setImmediate(commit); }
      ins.run(id, body);
      batch.push(t);
    }
    setImmediate(step);
  };
  step();
} else {
  const sent = new Map();
  let n = 0, inflight = 0;
  parentPort.on('message', (acks) => { const t = performance.now(); for (const k of acks) { lat.push(t - sent.get(k)); sent.delete(k); done++; inflight--; } });
  const step = () => {
    if (Date.now() > deadline) { const wait = () => inflight === 0 ? parentPort.postMessage({ done, lat, final: true }) : setTimeout(wait, 5); wait(); return; }
    const rows = [];
    for (let i = 0; i < 4; i++) { spin(); const k = n++; sent.set(k, performance.now()); rows.push(k); inflight++; }
    parentPort.postMessage({ rows, body });
    setImmediate(step);
  };
  step();
}
`;

type Strategy = 'per-thread' | 'per-thread-turn' | 'main-writer';

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function runCase(strategy: Strategy, threads: number, seconds: number, workUs: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-writers-'));
  const file = path.join(dir, 'w.db');
  const main = new Database(file);
  main.pragma('journal_mode = WAL');
  main.exec('CREATE TABLE m (id INTEGER PRIMARY KEY, thread INTEGER, body TEXT)');
  const ins = main.prepare('INSERT INTO m (thread, body) VALUES (?, ?)');
  const driver = require_resolve('better-sqlite3');
  // main-writer: one group commit on the main thread for every thread's rows.
  main.pragma('synchronous = NORMAL');
  const walFd = fs.openSync(`${file}-wal`, 'r+');
  let open = false;
  let waiting: Array<[Worker, number[]]> = [];
  const commit = () => {
    if (!open) return;
    main.exec('COMMIT');
    open = false;
    const batch = waiting;
    waiting = [];
    fs.fdatasync(walFd, () => ack(batch));
  };
  const ack = (batch: Array<[Worker, number[]]>) => {
    const byWorker = new Map<Worker, number[]>();
    for (const [w, ks] of batch) byWorker.set(w, [...(byWorker.get(w) ?? []), ...ks]);
    for (const [w, ks] of byWorker) w.postMessage(ks);
  };
  const results = await Promise.all(
    Array.from({ length: threads }, (_, id) => {
      const w = new Worker(WORKER, { eval: true, workerData: { strategy, file, seconds, workUs, driver, id } });
      return new Promise<{ done: number; lat: number[] }>((resolve, reject) => {
        w.on('error', reject);
        w.on('message', (m: { rows?: number[]; body?: string; done?: number; lat?: number[] }) => {
          if (m.rows) {
            if (!open) {
              main.exec('BEGIN IMMEDIATE');
              open = true;
              setTimeout(commit, 4);
            }
            for (let i = 0; i < m.rows.length; i++) ins.run(id, m.body);
            waiting.push([w, m.rows]);
            return;
          }
          resolve({ done: m.done!, lat: m.lat! });
          void w.terminate();
        });
      });
    }),
  );
  commit();
  const stored = (main.prepare('SELECT COUNT(*) AS n FROM m').get() as { n: number }).n;
  main.close();
  fs.closeSync(walFd);
  fs.rmSync(dir, { recursive: true, force: true });
  const done = results.reduce((a, r) => a + r.done, 0);
  const lat = results.flatMap((r) => r.lat);
  return { strategy, threads, durablePerSec: round(done / seconds, 0), stored, p50Ms: round(pct(lat, 50), 2), p99Ms: round(pct(lat, 99), 2) };
}

function require_resolve(name: string): string {
  return path.join(path.resolve(path.dirname(new URL(import.meta.url).pathname), '..'), 'node_modules', name);
}

export async function run(args: string[]): Promise<BenchResult> {
  const threadsList = list(args, 'threads', [1, 2, 4]);
  const seconds = flag(args, 'seconds', 4);
  const workUs = flag(args, 'work-us', 300);
  const rows = [];
  for (const threads of threadsList) {
    for (const strategy of ['per-thread', 'per-thread-turn', 'main-writer'] as const) rows.push(await runCase(strategy, threads, seconds, workUs));
  }
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  const markdown = [
    `Writers prototype: ${seconds} s per case, ${workUs} µs CPU per row, 4 ms group commits; ${os.cpus().length} cores, load average ${load}`,
    '',
    '| strategy | threads | durable rows/s | p50 ms | p99 ms |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.strategy} | ${r.threads} | ${r.durablePerSec} | ${r.p50Ms} | ${r.p99Ms} |`),
  ].join('\n');
  return { name: 'writers', markdown, data: { rows, loadavg: os.loadavg(), workUs, seconds } };
}
