/**
 * `npm run bench -- coldstart [--connections 10] [--rounds 3]`
 *
 * `switchboard serve` (child process running what `npm run bench` built, sandbox in its own process) from spawn to
 *   - its `API:` line on stdout, and to `GET /api/` answering 200 (healthy);
 *   - every one of `--connections` linked connections `online` again (after a SIGTERM restart on the same data dir).
 * First an empty data dir (no connections), then `--rounds` restarts with the linked connections.
 */
import { startServe } from '../test/helpers/service-process.ts';
import type { BenchResult } from './index.ts';
import { flag, jsonClient, percentile, phones, pool, round, startStack, until } from './lib.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

async function healthy(apiUrl: string) {
  const health = jsonClient(apiUrl);
  await until('GET /api/ 200', async () => ((await health('GET', '/').catch(() => ({ status: 0 }))).status === 200 ? true : undefined), 30_000, 10);
}

export async function run(args: string[]): Promise<BenchResult> {
  const n = flag(args, 'connections', 10);
  const rounds = flag(args, 'rounds', 3);

  // Empty data dir (a sandbox only to satisfy --wa-url).
  const stack = await startStack();
  const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-empty-'));
  try {
    const e0 = performance.now();
    const empty = await startServe(['--sandbox', '--wa-url', stack.sandbox.wsUrl, '--port', '0', '--data-dir', emptyDir, '--log-level', 'warn']);
    const emptyListening = performance.now() - e0;
    await healthy(empty.apiUrl);
    const emptyHealthy = performance.now() - e0;
    await empty.stop('SIGTERM');

    const accounts = phones('500', n);
    await stack.createAccounts(accounts);
    await pool(n, 5, (i) => stack.pair(accounts[i]!));
    const samples: Array<{ listeningMs: number; healthyMs: number; allOnlineMs: number }> = [];
    for (let r = 0; r < rounds; r++) {
      await stack.service.stop('SIGTERM');
      const t0 = performance.now();
      await stack.restartService(); // stops the (already stopped) service, starts it, waits for `API:`
      const listeningMs = performance.now() - t0;
      await healthy(stack.service.apiUrl);
      const healthyMs = performance.now() - t0;
      await until(
        `${n} connections online`,
        async () => {
          const r = await stack.api('GET', '/connections');
          return r.status === 200 && (r.body as Array<{ status: string }>).filter((c) => c.status === 'online').length === n ? true : undefined;
        },
        60_000,
        20,
      );
      samples.push({ listeningMs: round(listeningMs, 0), healthyMs: round(healthyMs, 0), allOnlineMs: round(performance.now() - t0, 0) });
    }
    const med = (k: keyof (typeof samples)[0]) => percentile(samples.map((s) => s[k]).sort((a, b) => a - b), 50);
    const markdown = [
      `### Cold start of \`switchboard serve\` (child process, compiled service unless SWITCHBOARD_FROM_SOURCE=1; median of ${rounds} restarts with ${n} linked connections)`,
      '',
      '| data dir | spawn → `API:` line | spawn → `GET /api/` 200 | spawn → all connections online |',
      '|---|---:|---:|---:|',
      `| empty | ${round(emptyListening, 0)} ms | **${round(emptyHealthy, 0)} ms** | – |`,
      `| ${n} linked connections | ${med('listeningMs')} ms | **${med('healthyMs')} ms** | **${med('allOnlineMs')} ms** |`,
      '',
      `All rounds (ms, spawn → API / healthy / all online): ${samples.map((s) => `${s.listeningMs} / ${s.healthyMs} / ${s.allOnlineMs}`).join('; ')}.`,
    ].join('\n');
    return { name: 'coldstart', markdown, data: { connections: n, empty: { listeningMs: round(emptyListening, 0), healthyMs: round(emptyHealthy, 0) }, samples } };
  } finally {
    fs.rmSync(emptyDir, { recursive: true, force: true });
    await stack.close();
  }
}
