/**
 * The console build check `switchboard serve` runs on start (service/cli/console-build.ts): stale when
 * dist/console is missing or older than renderer/ sources, current otherwise; the checkout is found from the code.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkoutRoot, consoleIsStale } from '../../service/cli/console-build.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-console-build-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const write = (rel: string, at: number) => {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, 'x');
  fs.utimesSync(p, at, at);
};

describe('console build check', () => {
  it('is stale when missing or older than a source, current after a build', () => {
    write('renderer/index.html', 1000);
    write('renderer/src/main.tsx', 2000);
    expect(consoleIsStale(root)).toBe(true);
    write('dist/console/index.html', 3000);
    expect(consoleIsStale(root)).toBe(false);
    write('renderer/src/views/New.tsx', 4000);
    expect(consoleIsStale(root)).toBe(true);
  });

  it('finds this checkout', () => {
    expect(checkoutRoot()).toBe(path.resolve('.'));
  });
});
