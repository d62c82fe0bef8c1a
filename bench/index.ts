/**
 * Benchmark runner: `npm run bench -- <name> [args]` runs bench/<name>.ts's `run(args)`, prints its markdown table
 * and writes its JSON to bench/results/<name>-<timestamp>.json. Loopback only, bounded in time.
 * `npm run bench` (or `npm run bench -- all`) runs every benchmark in sequence with its defaults; a failing one is
 * reported and the others still run (exit code 1 at the end).
 * Add a benchmark by adding a file that exports `run(args: string[]): Promise<BenchResult>` and a line below.
 *
 * The service processes the benchmarks start run what users run in production: the compiled service (dist/), built
 * here first (`tsc -p tsconfig.build.json`, ~7 s; `bin/switchboard.js` picks it up when it is current).
 * SWITCHBOARD_FROM_SOURCE=1 measures the tsx-loaded sources instead.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BenchResult {
  name: string;
  markdown: string;
  data: unknown;
}

const BENCHES: Record<string, () => Promise<{ run(args: string[]): Promise<BenchResult> }>> = {
  webhooks: () => import('./webhooks.ts'),
  messages: () => import('./messages.ts'),
  ingest: () => import('./ingest.ts'),
  scale: () => import('./scale.ts'),
  history: () => import('./history.ts'),
  api: () => import('./api.ts'),
  coldstart: () => import('./coldstart.ts'),
  groups: () => import('./groups.ts'),
  search: () => import('./search.ts'),
  writers: () => import('./writers.ts'),
  fairness: () => import('./fairness.ts'),
  retries: () => import('./retries.ts'),
  store: () => import('./store.ts'),
};

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'bench', 'results');

/** Builds the service into dist/ (what `switchboard serve` then runs); returns how it is run. */
function buildService(): string {
  if (process.env.SWITCHBOARD_FROM_SOURCE === '1') return 'sources through tsx (SWITCHBOARD_FROM_SOURCE=1)';
  const started = performance.now();
  const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error(`building the service failed (tsc exit ${tsc.status})`);
  return `compiled dist/ (built in ${((performance.now() - started) / 1000).toFixed(1)} s)`;
}

async function runOne(name: string, args: string[], serviceBuild: string): Promise<void> {
  const started = performance.now();
  const result = await (await BENCHES[name]!()).run(args);
  process.stdout.write(`\n${result.markdown}\n`);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify({ name: result.name, at: new Date().toISOString(), node: process.version, serviceBuild, data: result.data }, null, 2));
  process.stdout.write(`\nJSON: ${path.relative(process.cwd(), file)} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
}

const [name = 'all', ...args] = process.argv.slice(2);
if (name !== 'all' && !BENCHES[name]) {
  process.stderr.write(`Usage: npm run bench -- <all|${Object.keys(BENCHES).join('|')}> [args]\n`);
  process.exit(2);
}
const serviceBuild = buildService();
process.stdout.write(`Service under test: ${serviceBuild}\n`);
let failed = false;
for (const n of name === 'all' ? Object.keys(BENCHES) : [name]) {
  try {
    await runOne(n, name === 'all' ? [] : args, serviceBuild);
  } catch (err) {
    if (name !== 'all') throw err;
    failed = true;
    process.stderr.write(`\nbench ${n} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
}
process.exit(failed ? 1 : 0);
