/**
 * `npm run bench -- store [--database postgres://…] [--units 6000] [--sessions 64] [--rounds 3] [--engines sqlite,postgres]`
 *
 * The storage engines' group commit through the asynchronous Store (docs/architecture.md § Storage engines), the
 * part of an ingested message's cost that the database makes: `--sessions` concurrent producers each write one
 * unit at a time and wait for it to be durable (as a session's receipt waits for its message's commit), until
 * `--units` units are committed in all. A unit is what the engine writes for one incoming text: the message row
 * (with its search index entry), the chat's preview, the `message` event with the user's next seq and its webhook
 * outbox row. Both engines run on fresh databases in the same run, alternating rounds: SQLite (a data dir in the
 * temporary folder, the desktop default) and PostgreSQL (a database created on the server of `--database`, a URL of
 * its maintenance database — default postgres://postgres@127.0.0.1:5432/postgres — and dropped afterwards), both
 * opened as the storage contract suite opens them (test/storage/engines.ts). Reports committed units/s, the latency from asking to durable (p50/p99), this process's
 * CPU per unit, and PostgreSQL's units/s as a share of SQLite's (issue 26's goal for ingest: ≥ 0.7×).
 */
import type { StorageEngine } from '../service/db/store-api.ts';
import { storedText } from '../test/helpers/messages.ts';
import { PG_ADMIN_URL } from '../test/helpers/pg.ts';
import { openEngine } from '../test/storage/engines.ts';
import type { BenchResult } from './index.ts';
import { flag, percentile, round } from './lib.ts';

const CHATS = 50;

/** A flag's string value (`--name value`), or `fallback`. */
function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
}

interface Round {
  engine: StorageEngine;
  unitsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerUnit: number;
}

/** One round: `units` units from `sessions` producers on a fresh database of `engine`. */
async function measure(engine: StorageEngine, adminUrl: string, units: number, sessions: number, round_: number): Promise<Round> {
  const { store, close } = await openEngine(engine, {}, adminUrl);
  try {
    const user = await store.read.users.create('bench');
    const connectionId = `c-${round_}`;
    await store.tx(async (t) => {
      await t.connections.insert({ id: connectionId, userId: user.id, name: 'bench', workerId: 'w' });
    });
    const webhook = await store.tx((t) =>
      t.webhooks.insert({ id: `h-${round_}`, userId: user.id, connectionId, url: 'http://127.0.0.1:9/hook', events: ['message'], secret: 'whsec_bench', active: true }),
    );
    let next = 0;
    const latencies: number[] = [];
    const unit = async (i: number): Promise<void> => {
      const chatId = `1555${String(i % CHATS).padStart(7, '0')}@s.whatsapp.net`;
      const m = storedText(chatId, `K${round_}-${i}`, 1_700_000_000 + i, `message ${i} about the invoice for order ${i * 7}`);
      const asked = performance.now();
      await store.ingest(async (t) => {
        await t.messages.upsert(connectionId, m);
        await t.chats.touch(connectionId, { chatId, isGroup: false, messageId: m.id, kind: 'text', timestamp: m.timestamp, body: m.text ?? '', fromMe: false, unreadDelta: 1 });
        const event = await t.events.append(user.id, connectionId, 'message', { id: m.id, chatId, text: m.text });
        await t.deliveries.insert({
          id: `d-${round_}-${i}`,
          webhookId: webhook.id,
          userId: user.id,
          eventSeq: event.seq,
          msgId: `${user.id}:${event.seq}`,
          eventType: 'message',
          body: JSON.stringify({ id: m.id, text: m.text }),
          status: 'pending',
          nextAttemptAt: 0,
        });
      });
      latencies.push(performance.now() - asked);
    };
    const producer = async () => {
      for (let i = next++; i < units; i = next++) await unit(i);
    };
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: sessions }, producer));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    latencies.sort((a, b) => a - b);
    return {
      engine,
      unitsPerSec: Math.round((units / ms) * 1000),
      p50Ms: round(percentile(latencies, 50), 2),
      p99Ms: round(percentile(latencies, 99), 2),
      cpuUsPerUnit: Math.round((cpu.user + cpu.system) / units),
    };
  } finally {
    await close();
  }
}

export async function run(args: string[]): Promise<BenchResult> {
  const units = flag(args, 'units', 6000);
  const sessions = flag(args, 'sessions', 64);
  const engines = option(args, 'engines', 'sqlite,postgres').split(',') as StorageEngine[];
  const rounds = flag(args, 'rounds', 3);
  const adminUrl = option(args, 'database', PG_ADMIN_URL);
  const shown = new URL(adminUrl);
  shown.password = shown.password ? '***' : '';
  const rows: Round[] = [];
  // A warm-up round of each (JIT, the server's caches), not counted.
  for (const engine of engines) await measure(engine, adminUrl, Math.min(units, 1000), sessions, 0);
  for (let r = 1; r <= rounds; r++) {
    for (const engine of engines) rows.push(await measure(engine, adminUrl, units, sessions, r));
  }
  const med = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
  const summary = engines.map((engine) => {
    const rs = rows.filter((r) => r.engine === engine);
    return {
      engine,
      unitsPerSec: med(rs.map((r) => r.unitsPerSec)),
      all: rs.map((r) => r.unitsPerSec),
      p50Ms: med(rs.map((r) => r.p50Ms)),
      p99Ms: med(rs.map((r) => r.p99Ms)),
      cpuUsPerUnit: med(rs.map((r) => r.cpuUsPerUnit)),
    };
  });
  const sqlite = summary.find((s) => s.engine === 'sqlite');
  const pg = summary.find((s) => s.engine === 'postgres');
  const markdown = [
    `### Store: ${units} message units from ${sessions} concurrent producers, group commit, ${rounds} alternating rounds (PostgreSQL: ${shown.host})`,
    '',
    '| engine | units/s (median) | each round | vs SQLite | ask → durable p50 / p99 | CPU µs per unit (this process) |',
    '|---|---:|---|---:|---:|---:|',
    ...summary.map(
      (s) =>
        `| ${s.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | **${s.unitsPerSec}** | ${s.all.join(', ')} | **${sqlite ? `${round(s.unitsPerSec / sqlite.unitsPerSec, 2)}×` : '–'}** | ${s.p50Ms} / ${s.p99Ms} ms | ${s.cpuUsPerUnit} |`,
    ),
    '',
    'A unit: the message row (and its search entry), the chat preview, the `message` event with its seq, its webhook outbox row.',
    "PostgreSQL's server CPU is not in the last column (it runs in its own processes).",
  ].join('\n');
  return {
    name: 'store',
    markdown,
    data: { units, sessions, rounds, server: shown.host, summary, rows, pgVsSqlite: pg && sqlite ? round(pg.unitsPerSec / sqlite.unitsPerSec, 2) : null },
  };
}
