/**
 * One data plane (issue 26 item 1, docs/architecture.md § Data plane): the store, the event log and the webhook
 * outbox are assembled by service/data-plane.ts only, so no program, harness or benchmark can log events without
 * their webhook rows; and no repository is patched at run time (caches follow other connections' writes through
 * the database's generation counter). A grep over the sources, like the other lint tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SELF = path.join('test', 'lint', 'data-plane.test.ts');
const FACTORY = path.join('service', 'data-plane.ts');

/** Every TypeScript source under `dirs`, relative to the checkout. */
const sourcesOf = (...dirs: string[]) =>
  dirs.flatMap((dir) =>
    fs
      .readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|mts|cts)$/.test(f) && !f.includes('node_modules'))
      .map((f) => path.join(dir, f)),
  );

const files = sourcesOf('service', 'test', 'bench', 'scripts').filter((f) => f !== SELF);

/** `file:line` of each line of the sources that matches `pattern`, outside the files `allowed` accepts. */
function offenders(pattern: RegExp, allowed: (file: string) => boolean): string[] {
  const found: string[] = [];
  for (const file of files) {
    if (allowed(file)) continue;
    fs.readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (pattern.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

/** The store's own unit tests (a bare store on a temporary file), which test/unit holds. */
/** The store's own tests: unit tests, and the storage contract suite (test/storage), which tests the engines themselves. */
const storeUnitTest = (file: string) =>
  file.startsWith(path.join('test', 'unit') + path.sep) || file.startsWith(path.join('test', 'storage') + path.sep);

describe('the data plane', () => {
  it('is where the webhook outbox is built: nowhere else', () => {
    expect(files).toContain(FACTORY);
    expect(offenders(/\bnew WebhookOutbox\s*\(/, (f) => f === FACTORY)).toEqual([]);
  });

  it('is where the event log is built, besides the event log’s own unit tests over a bare store', () => {
    const eventLogTests = path.join('test', 'unit', 'db.test.ts');
    expect(offenders(/\bnew EventLog\s*\(/, (f) => f === FACTORY || f === eventLogTests)).toEqual([]);
  });

  it('is how the service, the CLI, the harnesses and the benchmarks open the store', () => {
    const allowed = (f: string) => f === FACTORY || f.startsWith(path.join('service', 'db') + path.sep) || storeUnitTest(f);
    expect(offenders(/\b(openStore|createStore)\s*\(/, allowed)).toEqual([]);
  });

  it('leaves the repositories as the store made them: no method replaced at run time', () => {
    // e.g. `store.webhooks.targets = …` (what a thread once did to drop its cached webhooks)
    const service = (f: string) => !f.startsWith('service' + path.sep);
    expect(offenders(/\bstore\.[A-Za-z]+\.[A-Za-z]+\s*=(?!=)/, service)).toEqual([]);
    // or a repository cast to a bag of methods to wrap them (what the main thread once did to count webhook changes)
    expect(offenders(/\bstore\.[A-Za-z]+ as unknown as/, service)).toEqual([]);
  });
});
