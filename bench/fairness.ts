/**
 * `npm run bench -- fairness [--messages 240000] [--chats 48] [--exports 24] [--searches 20] [--seconds 6] [--skip-uncapped]`: one
 * user's heavy reads against another user's light requests (issue 25 item 4). The compiled service runs as a child
 * process (`serve`, sessions on threads as by default, no WhatsApp: the connections are logged out) over a data dir
 * prepared through the store: user A's connection holds `--messages` messages in `--chats` chats (text from a
 * Zipf vocabulary, as `bench search`), user B has two connections. User B polls `GET /api/connections` back to back
 * from a worker thread of its own (its own event loop, so A's client work does not delay B's clock) while A runs:
 *
 * 1. nothing (B's baseline);
 * 2. `--exports` concurrent JSONL exports of whole chats, each read to the end as fast as the client can, again
 *    as soon as it ends, for `--seconds` — with the default per-user export cap (the answers past it are 429)
 *    and, in a second service, with the cap off (`--max-exports-per-user 0`);
 * 3. `--searches` concurrent `order=relevance` searches of a common word, round after round, for `--seconds`.
 *
 * Reports B's p50 / p99 / max per phase and what A got done (exports finished, 429s, messages/s; searches/s).
 * The goal is B's p99 < 50 ms in every phase.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Agent, request } from 'undici';
import { issueToken } from '../service/auth/api-tokens.ts';
import { openDataPlane } from '../service/data-plane.ts';
import { startServe, type ServiceProcess } from '../test/helpers/service-process.ts';
import type { BenchResult } from './index.ts';
import { benchTextMessage, flag, percentile, round } from './lib.ts';

const COMMON = ['the', 'and', 'you', 'for', 'meeting', 'order', 'payment', 'tomorrow', 'please', 'thanks', 'invoice', 'delivery'];

/** User B's poller: `GET /api/connections` back to back until told to stop; posts its latencies (ms). */
const POLLER = `
const { parentPort, workerData } = require('node:worker_threads');
const { Agent, request } = require(workerData.undici);
const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
let stop = false;
let samples = [];
let errors = 0;
parentPort.on('message', (m) => {
  if (m === 'stop') stop = true;
  if (m === 'take') { parentPort.postMessage({ samples, errors }); samples = []; errors = 0; }
});
(async () => {
  while (!stop) {
    const t = performance.now();
    try {
      const res = await request(workerData.url, { dispatcher: agent, headers: { authorization: 'Bearer ' + workerData.token } });
      await res.body.text();
      if (res.statusCode !== 200) errors++;
      else samples.push(performance.now() - t);
    } catch { errors++; await new Promise((r) => setTimeout(r, 10)); }
  }
  await agent.close();
  parentPort.close();
})();
`;

interface Phase {
  phase: string;
  bRequests: number;
  bErrors: number;
  p50: number;
  p99: number;
  max: number;
  a: string;
}

export async function run(args: string[]): Promise<BenchResult> {
  const total = flag(args, 'messages', 240_000);
  const chats = flag(args, 'chats', 48);
  const exportsAtOnce = flag(args, 'exports', 24);
  const searchesAtOnce = flag(args, 'searches', 20);
  const seconds = flag(args, 'seconds', 6);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-fairness-'));

  // ---- the data set --------------------------------------------------------------------------------------
  const { store } = openDataPlane({ dataDir, role: 'tool' });
  const alice = store.users.ensure('alice');
  const bob = store.users.ensure('bob');
  const tokenA = issueToken(store.tokens, alice.id, 'bench').token;
  const tokenB = issueToken(store.tokens, bob.id, 'bench').token;
  const conn = store.connections.insert({ id: 'bench-fairness-a', userId: alice.id, name: 'A', workerId: 'bench' });
  store.connections.setStatus(conn.id, 'logged_out', null);
  for (const n of [1, 2]) {
    const b = store.connections.insert({ id: `b${n}-bench-fairness`, userId: bob.id, name: `B${n}`, workerId: 'bench' });
    store.connections.setStatus(b.id, 'logged_out', null);
  }
  let seed = 11;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const syllables = ['ka', 'lo', 'mi', 'ne', 'su', 'ta', 'ri', 'vo', 'be', 'du', 'ga', 'pe', 'zu', 'xi', 'qo', 'ha'];
  const word = (n: number) => Array.from({ length: 3 }, (_, i) => syllables[Math.floor(n / syllables.length ** i) % syllables.length]).join('');
  const vocabulary = [...COMMON, ...Array.from({ length: 2000 }, (_, i) => word(i))];
  const weights = vocabulary.map((_, i) => 1 / (i + 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const cumulative: number[] = [];
  weights.reduce((s, w, i) => (cumulative[i] = s + w / sum), 0);
  const pick = () => {
    const r = random();
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < r) lo = mid + 1;
      else hi = mid;
    }
    return vocabulary[lo]!;
  };
  const chatIds = Array.from({ length: chats }, (_, c) => `1555${String(c).padStart(7, '0')}@s.whatsapp.net`);
  const base = 1_700_000_000;
  const BATCH = 10_000;
  const t0 = performance.now();
  for (let start = 0; start < total; start += BATCH) {
    store.tx(() => {
      for (let i = start; i < Math.min(total, start + BATCH); i++) {
        const chatId = chatIds[i % chats]!;
        const keyId = `FAIR${String(i).padStart(9, '0')}`;
        const text = Array.from({ length: 6 + Math.floor(random() * 10) }, pick).join(' ');
        store.messages.upsert(conn.id, benchTextMessage(chatId, keyId, i, base + Math.floor(i / 3), text));
      }
    });
  }
  const insertMs = performance.now() - t0;
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  store.close();

  // ---- the runs ----------------------------------------------------------------------------------------
  const undici = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'node_modules', 'undici', 'index.js');
  const phases: Phase[] = [];

  async function withService(extra: string[], fn: (api: string) => Promise<void>): Promise<void> {
    const service: ServiceProcess = await startServe(['--port', '0', '--data-dir', dataDir, '--rate-limit', '0', '--log-level', 'warn', ...extra], {}, { timeoutMs: 300_000 });
    try {
      await fn(service.apiUrl);
    } finally {
      await service.stop();
    }
  }

  /** Runs `load` (A) for `seconds` while B polls; records B's latencies under `name`. */
  async function phase(api: string, name: string, load: (until: number) => Promise<string>): Promise<void> {
    const poller = new Worker(POLLER, { eval: true, workerData: { undici, url: `${api}/connections`, token: tokenB } });
    const take = () =>
      new Promise<{ samples: number[]; errors: number }>((resolve) => {
        const on = (m: unknown) => {
          if (typeof m === 'object' && m !== null && 'samples' in m) {
            poller.off('message', on);
            resolve(m as { samples: number[]; errors: number });
          }
        };
        poller.on('message', on);
        poller.postMessage('take');
      });
    await new Promise((r) => setTimeout(r, 500)); // B's first requests (connection set-up, JIT) are not measured
    await take();
    const a = await load(performance.now() + seconds * 1000);
    const { samples, errors } = await take();
    poller.postMessage('stop');
    await new Promise<void>((resolve) => poller.once('exit', () => resolve()));
    samples.sort((x, y) => x - y);
    phases.push({ phase: name, bRequests: samples.length, bErrors: errors, p50: round(percentile(samples, 50)), p99: round(percentile(samples, 99)), max: round(samples.at(-1) ?? NaN), a });
  }

  const agentA = new Agent({ connections: Math.max(exportsAtOnce, searchesAtOnce) + 2, keepAliveTimeout: 30_000 });
  const headersA = { authorization: `Bearer ${tokenA}` };

  const exportsLoad = (api: string) => async (until: number) => {
    let done = 0;
    let refused = 0;
    let messages = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: exportsAtOnce }, async (_, k) => {
        for (let round = 0; performance.now() < until; round++) {
          const chatId = chatIds[(k + round * exportsAtOnce) % chats]!;
          const res = await request(`${api}/connections/${conn.id}/chats/${chatId}/export?format=jsonl`, { dispatcher: agentA, headers: headersA });
          if (res.statusCode === 429) {
            await res.body.text();
            refused++;
            const wait = Number(res.headers['retry-after'] ?? 1) * 1000;
            await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, until - performance.now()))));
            continue;
          }
          if (res.statusCode !== 200) throw new Error(`export answered ${res.statusCode}: ${await res.body.text()}`);
          for await (const chunk of res.body) for (const byte of chunk as Buffer) if (byte === 10) messages++;
          done++;
        }
      }),
    );
    const s = (performance.now() - started) / 1000;
    return `${done} exports finished, ${refused} answered 429; ${Math.round(messages / s).toLocaleString('en')} messages/s`;
  };

  const searchLoad = (api: string) => async (until: number) => {
    let done = 0;
    let rounds = 0;
    const started = performance.now();
    while (performance.now() < until) {
      await Promise.all(
        Array.from({ length: searchesAtOnce }, async (_, k) => {
          const q = COMMON[(k + rounds) % COMMON.length]!;
          const res = await request(`${api}/connections/${conn.id}/search?q=${q}&order=relevance&limit=20`, { dispatcher: agentA, headers: headersA });
          const text = await res.body.text();
          if (res.statusCode !== 200) throw new Error(`search answered ${res.statusCode}: ${text}`);
          done++;
        }),
      );
      rounds++;
    }
    const s = (performance.now() - started) / 1000;
    return `${done} searches in ${rounds} rounds of ${searchesAtOnce}: ${round(done / s, 1)} searches/s, ${round((s * 1000) / rounds, 0)} ms a round`;
  };

  await withService([], async (api) => {
    await phase(api, 'B alone', async (until) => {
      await new Promise((r) => setTimeout(r, until - performance.now()));
      return 'idle';
    });
    await phase(api, `A: ${exportsAtOnce} exports at once (default cap)`, exportsLoad(api));
    await phase(api, `A: ${searchesAtOnce} relevance searches at once`, searchLoad(api));
  });
  if (!args.includes('--skip-uncapped')) {
    await withService(['--max-exports-per-user', '0'], async (api) => {
      await phase(api, `A: ${exportsAtOnce} exports at once (no cap)`, exportsLoad(api));
    });
  }
  await agentA.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  const markdown = [
    `### Fairness: user B's \`GET /api/connections\` while user A runs heavy reads (${total.toLocaleString('en')} messages in ${chats} chats, ${round(insertMs / 1000, 1)} s to insert)`,
    '',
    '| phase | B requests | B p50 ms | B p99 ms | B max ms | A got |',
    '|---|---|---|---|---|---|',
    ...phases.map((p) => `| ${p.phase} | ${p.bRequests}${p.bErrors ? ` (${p.bErrors} errors)` : ''} | ${p.p50} | ${p.p99} | ${p.max} | ${p.a} |`),
  ].join('\n');
  return { name: 'fairness', markdown, data: { total, chats, exportsAtOnce, searchesAtOnce, seconds, phases } };
}
