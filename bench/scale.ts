/**
 * `npm run bench -- scale [--levels 1,10,50,100] [--rate 10] [--seconds 5] [--batch 5] [--budget-s 300]`
 *
 * Many linked connections in one `switchboard serve` (child process; sandbox in its own process): for each level
 * the service gets more connections (one sandbox account each, paired `--batch` at a time), then
 *   - idle: RSS (/proc VmRSS) and CPU (utime+stime delta) over `--seconds` after a 2 s settle and until RSS is
 *     steady (< 1 MiB change over 3 s, at most 30 s);
 *   - load: a sandbox contact sends `--rate` msg/s to every connection for `--seconds` (admin sends, ≤ 128 in
 *     flight); RSS at the end, CPU over the window, messages stored (WebSocket frames) vs sent.
 * Per-connection memory = (RSS(n) − RSS(1)) / (n − 1). Reference: a bare Baileys socket costs ~1.3 MB RSS beyond
 * the first. Goal: ≤ 3 MB per additional idle connection, 100 connections < 500 MB. Levels that would start after
 * `--budget-s` seconds are skipped (and reported).
 */
import type { BenchResult } from './index.ts';
import { cpuPercent, enc, flag, list, mib, phones, pool, procSample, round, sleep, startStack, watchMessages } from './lib.ts';

export async function run(args: string[]): Promise<BenchResult> {
  const levels = list(args, 'levels', [1, 10, 50, 100]);
  const rate = flag(args, 'rate', 10);
  const seconds = flag(args, 'seconds', 5);
  const batch = flag(args, 'batch', 5);
  const budgetMs = flag(args, 'budget-s', 300) * 1000;
  const started = Date.now();
  const stack = await startStack();
  try {
    const accounts = phones('300', Math.max(...levels));
    const sender = '+15550101';
    await stack.createAccounts(accounts);
    const pid = stack.service.child.pid!;
    const frames = await watchMessages(stack.service.apiUrl, stack.token);
    const base = procSample(pid);
    type Row = { connections: number; pairMs: number; idleRssKb: number; idleCpu: number; loadTarget: number; loadSent: number; loadStored: number; loadRssKb: number; loadCpu: number; sandboxCpu: number };
    const rows: Row[] = [];
    const skipped: number[] = [];
    let paired = 0;
    for (const level of levels) {
      if (Date.now() - started > budgetMs) {
        skipped.push(level);
        continue;
      }
      const t0 = performance.now();
      const todo = accounts.slice(paired, level);
      await pool(todo.length, batch, (i) => stack.pair(todo[i]!));
      paired = level;
      const pairMs = round(performance.now() - t0, 0);
      await sleep(2_000); // history sync, prekey uploads, app-state settle
      // Idle means steady: wait (≤ 30 s) until RSS moved < 1 MiB over 3 s, so pairing garbage that V8's memory
      // reducer gives back soon after is not counted as the connections' cost.
      for (let waited = 0, prev = procSample(pid).rssKb; waited < 30_000; waited += 3_000) {
        await sleep(3_000);
        const now = procSample(pid).rssKb;
        if (Math.abs(now - prev) < 1024) break;
        prev = now;
      }
      const i0 = procSample(pid);
      await sleep(seconds * 1000);
      const i1 = procSample(pid);

      // Load: `rate` msg/s to each of the `level` accounts, spread evenly.
      const total = level * rate * seconds;
      const before = frames.total();
      let sent = 0;
      let inFlight = 0;
      const l0 = procSample(pid);
      const s0 = procSample(stack.sandbox.child.pid!);
      const tl = performance.now();
      const sends: Array<Promise<void>> = [];
      for (let i = 0; i < total; i++) {
        const due = tl + (i * 1000) / (level * rate);
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        if (inFlight >= 128) continue; // the sandbox cannot keep up: drop rather than queue without bound
        inFlight++;
        sends.push(
          stack.admin('POST', `/accounts/${enc(sender)}/messages`, { to: accounts[i % level], text: `scale ${i}` }).then((r) => {
            inFlight--;
            if (r.status === 201) sent++;
          }),
        );
      }
      await Promise.all(sends);
      await frames.reach(before + sent, 30_000).catch(() => undefined);
      const l1 = procSample(pid);
      const s1 = procSample(stack.sandbox.child.pid!);
      rows.push({
        connections: level,
        pairMs,
        idleRssKb: i1.rssKb,
        idleCpu: cpuPercent(i0, i1),
        loadTarget: level * rate,
        loadSent: Math.round(sent / ((performance.now() - tl) / 1000)),
        loadStored: frames.total() - before,
        loadRssKb: l1.rssKb,
        loadCpu: cpuPercent(l0, l1),
        sandboxCpu: cpuPercent(s0, s1),
      });
      process.stderr.write(`scale: ${level} connections done (${Math.round((Date.now() - started) / 1000)} s)\n`);
    }
    frames.close();
    const one = rows.find((r) => r.connections === 1);
    const perConn = (r: Row) => (one && r.connections > 1 ? round((r.idleRssKb - one.idleRssKb) / 1024 / (r.connections - 1), 2) : NaN);
    const markdown = [
      `### Scale: linked connections in one service (idle ${seconds} s; load ${rate} msg/s per connection for ${seconds} s)`,
      '',
      `Service RSS before the first connection: ${mib(base.rssKb)} MiB.`,
      '',
      '| connections | pairing (batches of ' + batch + ') | idle RSS | idle CPU | MiB per extra connection (idle) | load target | sandbox sent | stored | RSS under load | CPU under load | sandbox CPU |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.connections} | ${(r.pairMs / 1000).toFixed(1)} s | ${mib(r.idleRssKb)} MiB | ${r.idleCpu} % | ${Number.isNaN(perConn(r)) ? '–' : `**${perConn(r)}**`} | ${r.loadTarget} msg/s | ${r.loadSent} msg/s | ${r.loadStored} | ${mib(r.loadRssKb)} MiB | ${r.loadCpu} % | ${r.sandboxCpu} % |`,
      ),
      '',
      'CPU in % of one core. Reference: bare Baileys sockets ≈ 1.3 MB each beyond the first. Goal: ≤ 3 MB per extra idle connection; 100 connections < 500 MB.' +
        (skipped.length ? ` Skipped (time budget): ${skipped.join(', ')}.` : ''),
    ].join('\n');
    return { name: 'scale', markdown, data: { rate, seconds, batch, baseRssKb: base.rssKb, rows: rows.map((r) => ({ ...r, mibPerExtraConnection: perConn(r) })), skipped } };
  } finally {
    await stack.close();
  }
}
