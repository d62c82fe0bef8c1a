/**
 * Benchmark runner: `npm run bench -- <name> [args]` runs bench/<name>.ts's `run(args)`, prints its markdown table
 * and writes its JSON to bench/results/<name>-<timestamp>.json. Loopback only, bounded in time.
 * Add a benchmark by adding a file that exports `run(args: string[]): Promise<BenchResult>` and a line below.
 */
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
};

const [name, ...args] = process.argv.slice(2);
if (!name || !BENCHES[name]) {
  process.stderr.write(`Usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> [args]\n`);
  process.exit(2);
}
const result = await (await BENCHES[name]()).run(args);
process.stdout.write(`\n${result.markdown}\n`);
const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
fs.mkdirSync(dir, { recursive: true });
const file = path.join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.writeFileSync(file, JSON.stringify({ name: result.name, at: new Date().toISOString(), node: process.version, data: result.data }, null, 2));
process.stdout.write(`\nJSON: ${path.relative(process.cwd(), file)}\n`);
process.exit(0);
