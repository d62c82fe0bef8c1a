/**
 * The Node range in package.json `engines` matches what the service's dependencies declare (issue 17 item 13:
 * `npm ci` warned that cookie@2 and content-disposition@3 want Node ≥ 22 while engines said 20.18): the oldest
 * Node the range admits satisfies the `engines.node` of every package in package-lock.json (dev tools too: the
 * packager, whose rebuilder wants Node 22.12, is fetched by `npm run dist` instead of installed), and the Node
 * running this test is inside the range. `semver` is npm's own range logic (installed with the toolchain, not a direct
 * dependency).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

interface LockPackage {
  dev?: boolean;
  optional?: boolean;
  engines?: { node?: string } | string[];
}

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockPackage> };

describe('engines', () => {
  const range = pkg.engines.node;
  const oldest = semver.minVersion(range)!.version;

  it(`the oldest Node of ${range} satisfies every installed package, dev tools included`, () => {
    const unmet = Object.entries(lock.packages)
      .filter(([name, p]) => name !== '' && !Array.isArray(p.engines) && p.engines?.node)
      .filter(([, p]) => !semver.satisfies(oldest, (p.engines as { node: string }).node))
      .map(([name, p]) => `${name.replace(/^node_modules\//, '')} wants ${(p.engines as { node: string }).node}`);
    expect(unmet).toEqual([]);
  });

  it('the Node running the tests is inside the range', () => {
    expect(semver.satisfies(process.versions.node, range)).toBe(true);
  });
});
