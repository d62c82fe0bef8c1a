/**
 * `npm run bench -- messages [--big 200000] [--small 2000] [--requests 400]`: latency of
 * `GET /api/connections/:id/chats/:chatId/messages?limit=50&before=<cursor>` at random depths in a chat of
 * `--big` stored messages vs one of `--small`, over real HTTP on loopback (keep-alive), against the real app and
 * SQLite. Rows are inserted straight through the db layer. Keyset paging must keep the big chat as fast as the
 * small one. The runner (bench/index.ts) prints the markdown table and writes JSON to `bench/results/`.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { issueToken } from '../service/auth/api-tokens.ts';
import { encodeCursor } from '../service/db/messages.ts';
import { openDataPlane } from '../service/data-plane.ts';
import { createEngine } from '../service/engine/engine.ts';
import { buildApp } from '../service/http/app.ts';
import type { BenchResult } from './index.ts';
import { benchTextMessage, flag, percentile } from './lib.ts';

const PAGE = 50;


export async function run(args: string[]): Promise<BenchResult> {
  const big = flag(args, 'big', 200_000);
  const small = flag(args, 'small', 2_000);
  const requests = flag(args, 'requests', 400);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  const logger = pino({ level: 'silent' });
  const { store, asyncStore, events, outbox } = openDataPlane({ dataDir, role: 'tool' });
  const user = store.users.ensure('bench');
  const { token } = issueToken(store.tokens, user.id, 'bench');
  const conn = store.connections.insert({ id: 'bench-connection', userId: user.id, name: 'bench', workerId: 'bench' });
  store.connections.setStatus(conn.id, 'online', null);

  const chats = [
    { chatId: '15550200@s.whatsapp.net', size: small },
    { chatId: '15550201@s.whatsapp.net', size: big },
  ];
  const t0 = Date.now();
  const base = 1_600_000_000;
  for (const { chatId, size } of chats) {
    for (let start = 0; start < size; start += 10_000) {
      store.tx(() => {
        for (let i = start; i < Math.min(size, start + 10_000); i++) {
          const keyId = `BENCH${String(i).padStart(8, '0')}`;
          const text = `Benchmark message number ${i} with a little body text to look realistic.`;
          // two messages per second: equal timestamps are paged too
          store.messages.upsert(conn.id, benchTextMessage(chatId, keyId, i, base + Math.floor(i / 2), text));
        }
      });
    }
  }
  const insertMs = Date.now() - t0;

  const engine = createEngine({ store, events, logger, waUrl: 'ws://127.0.0.1:9/ws/chat', workerId: 'bench', mediaDir: path.join(dataDir, 'media') });
  const app = await buildApp({
    asyncStore,
    store,
    engine,
    events,
    outbox,
    logger,
    workerId: 'bench',
    version: 'bench',
    sandbox: false,
    startedAt: Date.now(),
    rateLimit: { max: 1_000_000_000, windowMs: 60_000, authFailures: 1_000 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });

  const get = async (chatId: string, cursor: string | null) => {
    const started = process.hrtime.bigint();
    const res = await request(
      `${origin}/api/connections/${conn.id}/chats/${chatId}/messages?limit=${PAGE}${cursor ? `&before=${cursor}` : ''}`,
      { dispatcher: agent, headers: { authorization: `Bearer ${token}` } },
    );
    const body = (await res.body.json()) as { messages: unknown[] };
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (res.statusCode !== 200 || body.messages.length === 0) throw new Error(`unexpected answer ${res.statusCode}`);
    return ms;
  };

  // A cursor at depth d: the message d positions from the newest (what a client holds after d/50 pages).
  // Chats were inserted one after the other, so message i of a chat arrived as seq = offset + i + 1.
  const seqOffset = new Map(chats.map((c, n) => [c.chatId, chats.slice(0, n).reduce((sum, x) => sum + x.size, 0)]));
  const cursorAt = (chatId: string, size: number, depth: number) => {
    const i = size - 1 - depth;
    return encodeCursor({ timestamp: base + Math.floor(i / 2), seq: seqOffset.get(chatId)! + i + 1 });
  };

  const results: Array<{ chat: string; messages: number; requests: number; p50: number; p99: number; mean: number; max: number }> = [];
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  // Warm up both, then alternate between the chats so JIT, caches and the machine's load treat them alike.
  for (const { chatId, size } of chats) {
    for (let i = 0; i < 100; i++) await get(chatId, cursorAt(chatId, size, Math.floor(random() * (size - PAGE))));
  }
  const samples = chats.map(() => [] as number[]);
  for (let i = 0; i < requests; i++) {
    for (const [c, { chatId, size }] of chats.entries()) {
      // Deep pages: uniformly spread over the whole chat, plus the first page now and then.
      const cursor = i % 20 === 0 ? null : cursorAt(chatId, size, Math.floor(random() * (size - PAGE)));
      samples[c]!.push(await get(chatId, cursor));
    }
  }
  const round = (n: number) => Math.round(n * 100) / 100;
  for (const [c, { chatId, size }] of chats.entries()) {
    const sorted = samples[c]!.sort((a, b) => a - b);
    results.push({
      chat: chatId,
      messages: size,
      requests,
      p50: round(percentile(sorted, 50)),
      p99: round(percentile(sorted, 99)),
      mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
      max: round(sorted.at(-1)!),
    });
  }

  await app.close();
  await agent.close();
  await engine.close();
  store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  const [s, b] = results as [(typeof results)[0], (typeof results)[0]];
  const ratio = Math.round((b.p50 / s.p50) * 100) / 100;
  const markdown = [
    `### GET …/messages?limit=${PAGE} at random depths (${requests} requests per chat, alternating, loopback HTTP, keep-alive)`,
    '',
    '| chat size | p50 ms | p99 ms | mean ms | max ms |',
    '|---:|---:|---:|---:|---:|',
    ...results.map((r) => `| ${r.messages.toLocaleString('en')} | ${r.p50} | ${r.p99} | ${r.mean} | ${r.max} |`),
    '',
    `p50 ratio ${b.messages.toLocaleString('en')} vs ${s.messages.toLocaleString('en')}: ${ratio}× (setup: ${insertMs} ms to insert ${big + small} rows)`,
  ].join('\n');
  return { name: 'messages', markdown, data: { pageSize: PAGE, insertMs, p50Ratio: ratio, results } };
}
