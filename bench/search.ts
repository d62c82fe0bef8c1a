/**
 * `npm run bench -- search [--messages 1000000] [--chats 1000] [--requests 200] [--exports 40]`: full-text search
 * over a connection with `--messages` stored messages across `--chats` chats, inserted straight through the store
 * (so the index is written as in production, in the message's transaction). Measures, over real HTTP on loopback
 * (keep-alive, concurrency 1) against the real app and SQLite: `GET /api/connections/:id/search` latency p50/p99
 * for common words, rare words, prefixes, phrases, an exclusion and a chat filter (most recent first), and for
 * relevance order; then export throughput (messages/s) of JSONL and HTML transcripts of whole chats.
 * Text is generated from a Zipf-distributed vocabulary of 2,000 words plus one of 20,000 rare words in a third of
 * the messages (≈ 15 hits each at 1M). The goal is p99 < 50 ms for the recent-first queries.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { issueToken } from '../service/auth/api-tokens.ts';
import { openDataPlane } from '../service/data-plane.ts';
import { createEngine } from '../service/engine/engine.ts';
import { buildApp } from '../service/http/app.ts';
import type { BenchResult } from './index.ts';
import { benchTextMessage, flag, percentile, round } from './lib.ts';

const COMMON = [
  'the', 'and', 'you', 'for', 'meeting', 'order', 'payment', 'tomorrow', 'please', 'thanks', 'invoice', 'delivery',
  'call', 'today', 'price', 'send', 'photo', 'address', 'office', 'week', 'monday', 'friday', 'client', 'project',
];

export async function run(args: string[]): Promise<BenchResult> {
  const total = flag(args, 'messages', 1_000_000);
  const chats = flag(args, 'chats', 1_000);
  const requests = flag(args, 'requests', 200);
  const exports = flag(args, 'exports', 40);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-search-'));
  const logger = pino({ level: 'silent' });
  const { store, asyncStore, events, outbox } = openDataPlane({ dataDir, role: 'tool' });
  const user = store.users.ensure('bench');
  const { token } = issueToken(store.tokens, user.id, 'bench');
  const conn = store.connections.insert({ id: 'bench-search-connection', userId: user.id, name: 'bench', workerId: 'bench' });
  store.connections.setStatus(conn.id, 'online', null);

  // Deterministic text: Zipf over COMMON + 2,000 filler words, one rare word in a third of the messages.
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const syllables = ['ka', 'lo', 'mi', 'ne', 'su', 'ta', 'ri', 'vo', 'be', 'du', 'ga', 'pe', 'zu', 'xi', 'qo', 'ha'];
  const word = (n: number, parts: number) =>
    Array.from({ length: parts }, (_, i) => syllables[Math.floor(n / syllables.length ** i) % syllables.length]).join('');
  const vocabulary = [...COMMON, ...Array.from({ length: 2000 }, (_, i) => word(i, 3))];
  const rare = Array.from({ length: 20_000 }, (_, i) => `${word(i, 4)}x`);
  const harmonic = vocabulary.reduce((s, _, i) => s + 1 / (i + 1), 0);
  const cumulative: number[] = [];
  vocabulary.reduce((s, _, i) => (cumulative[i] = s + 1 / (i + 1) / harmonic), 0);
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

  const t0 = performance.now();
  const base = 1_600_000_000;
  const chatIds = Array.from({ length: chats }, (_, c) => `1555${String(c).padStart(7, '0')}@s.whatsapp.net`);
  const BATCH = 10_000;
  for (let start = 0; start < total; start += BATCH) {
    store.tx(() => {
      for (let i = start; i < Math.min(total, start + BATCH); i++) {
        const chatId = chatIds[i % chats]!;
        const keyId = `BENCH${String(i).padStart(9, '0')}`;
        const words = Array.from({ length: 6 + Math.floor(random() * 8) }, pick);
        if (random() < 1 / 3) words.splice(Math.floor(random() * words.length), 0, rare[Math.floor(random() * rare.length)]!);
        store.messages.upsert(conn.id, benchTextMessage(chatId, keyId, i, base + Math.floor(i / 3), words.join(' ')));
      }
    });
  }
  const insertMs = performance.now() - t0;
  const dbBytes = fs.statSync(path.join(dataDir, 'switchboard.db')).size + (fs.existsSync(path.join(dataDir, 'switchboard.db-wal')) ? fs.statSync(path.join(dataDir, 'switchboard.db-wal')).size : 0);
  store.db.pragma('wal_checkpoint(TRUNCATE)');

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
  const headers = { authorization: `Bearer ${token}` };

  const search = async (params: Record<string, string>) => {
    const started = process.hrtime.bigint();
    const res = await request(`${origin}/api/connections/${conn.id}/search?${new URLSearchParams({ limit: '20', ...params })}`, { dispatcher: agent, headers });
    const body = (await res.body.json()) as { results: unknown[] };
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (res.statusCode !== 200) throw new Error(`search answered ${res.statusCode}: ${JSON.stringify(body)}`);
    return { ms, hits: body.results.length };
  };

  const rareWord = () => rare[Math.floor(random() * rare.length)]!;
  const commonWord = () => COMMON[Math.floor(random() * COMMON.length)]!;
  const filler = () => vocabulary[COMMON.length + Math.floor(random() * 200)]!;
  const kinds: Array<{ kind: string; params: () => Record<string, string> }> = [
    { kind: 'common word', params: () => ({ q: commonWord() }) },
    { kind: 'two common words', params: () => ({ q: `${commonWord()} ${commonWord()}` }) },
    { kind: 'rare word', params: () => ({ q: rareWord() }) },
    { kind: 'prefix (3 letters)', params: () => ({ q: `${filler().slice(0, 3)}*` }) },
    { kind: 'prefix of a common word', params: () => ({ q: `${commonWord().slice(0, 3)}*` }) },
    { kind: 'phrase', params: () => ({ q: `"${commonWord()} ${commonWord()}"` }) },
    { kind: 'word -exclusion', params: () => ({ q: `${commonWord()} -${commonWord()}` }) },
    { kind: 'common word in one chat', params: () => ({ q: commonWord(), chatId: chatIds[Math.floor(random() * chats)]! }) },
    { kind: 'common word, page 5 (cursor)', params: () => ({ q: commonWord(), before: '' }) },
    { kind: 'rare word, relevance', params: () => ({ q: rareWord(), order: 'relevance' }) },
    { kind: 'common word, relevance', params: () => ({ q: commonWord(), order: 'relevance' }) },
  ];
  // Cursor for "page 5": walk four pages first (not timed).
  const deepCursor = async (q: string) => {
    let before = '';
    for (let p = 0; p < 4; p++) {
      const res = await request(`${origin}/api/connections/${conn.id}/search?${new URLSearchParams({ q, limit: '20', ...(before && { before }) })}`, { dispatcher: agent, headers });
      before = ((await res.body.json()) as { nextBefore: string }).nextBefore;
    }
    return before;
  };

  for (let i = 0; i < 30; i++) for (const k of kinds) if (!k.kind.includes('cursor')) await search(k.params());
  const rows: Array<{ query: string; requests: number; p50: number; p99: number; max: number; meanHits: number }> = [];
  for (const k of kinds) {
    const n = k.kind.includes('relevance') && k.kind.includes('common') ? Math.min(requests, 40) : requests;
    const samples: number[] = [];
    let hits = 0;
    for (let i = 0; i < n; i++) {
      const params = k.params();
      if ('before' in params) params.before = await deepCursor(params.q!);
      const r = await search(params);
      samples.push(r.ms);
      hits += r.hits;
    }
    samples.sort((a, b) => a - b);
    rows.push({ query: k.kind, requests: n, p50: round(percentile(samples, 50)), p99: round(percentile(samples, 99)), max: round(samples.at(-1)!), meanHits: round(hits / n, 1) });
  }

  // Export throughput: whole chats streamed over HTTP, JSONL and HTML.
  const exportRows: Array<{ format: string; chats: number; messages: number; seconds: number; messagesPerSecond: number; mibPerSecond: number }> = [];
  for (const format of ['jsonl', 'html'] as const) {
    let messages = 0;
    let bytes = 0;
    const started = performance.now();
    for (let e = 0; e < exports; e++) {
      const chatId = chatIds[(e * 37) % chats]!;
      const res = await request(`${origin}/api/connections/${conn.id}/chats/${chatId}/export?format=${format}`, { dispatcher: agent, headers });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`export answered ${res.statusCode}`);
      bytes += Buffer.byteLength(text);
      messages += format === 'jsonl' ? text.split('\n').length - 1 : (text.match(/class="row"/g) ?? []).length;
    }
    const seconds = (performance.now() - started) / 1000;
    exportRows.push({ format, chats: exports, messages, seconds: round(seconds), messagesPerSecond: Math.round(messages / seconds), mibPerSecond: round(bytes / 1024 / 1024 / seconds) });
  }

  await app.close();
  await engine.close();
  store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  const markdown = [
    `### Search: ${total.toLocaleString('en')} messages in ${chats.toLocaleString('en')} chats (one connection)`,
    '',
    `Inserted through the store with the index in ${round(insertMs / 1000, 1)} s (${Math.round(total / (insertMs / 1000)).toLocaleString('en')} messages/s, batches of ${BATCH.toLocaleString('en')}); database ${round(dbBytes / 1024 / 1024, 0)} MiB.`,
    '',
    '| query (limit 20, most recent first unless noted) | requests | p50 ms | p99 ms | max ms | hits/page |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.query} | ${r.requests} | ${r.p50} | ${r.p99} | ${r.max} | ${r.meanHits} |`),
    '',
    '| export | chats | messages | seconds | messages/s | MiB/s |',
    '|---|---|---|---|---|---|',
    ...exportRows.map((r) => `| ${r.format} | ${r.chats} | ${r.messages} | ${r.seconds} | ${r.messagesPerSecond.toLocaleString('en')} | ${r.mibPerSecond} |`),
  ].join('\n');
  return { name: 'search', markdown, data: { total, chats, insertMs, dbBytes, search: rows, export: exportRows } };
}
