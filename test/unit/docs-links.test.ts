/**
 * The README and docs/ link only to files inside the repository that exist, and to headings that exist (issue 17
 * item 13: links into `../shared/` broke in a clone). Fenced code blocks are skipped; `http(s):` and `mailto:` links
 * are not followed. Heading anchors are GitHub's: lower case, punctuation dropped, spaces as `-`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve('.');
const files = ['README.md', ...fs.readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced code blocks. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor of a heading. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');

const anchorsOf = (file: string) =>
  new Set([...prose(fs.readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1]!)));

describe('documentation links', () => {
  it.each(files)('%s links only to existing files and headings inside the repository', (file) => {
    const text = prose(fs.readFileSync(file, 'utf8'));
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^(https?:|mailto:)/.test(target!)) continue;
      const [filePart, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = filePart ? path.resolve(path.dirname(file), decodeURIComponent(filePart)) : path.resolve(file);
      if (!resolved.startsWith(root + path.sep)) broken.push(`${target} (outside the repository)`);
      else if (!fs.existsSync(resolved)) broken.push(`${target} (no such file)`);
      else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(`${target} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });
});

/** Every source the project writes (comments and messages cite docs from there). */
const SOURCE_DIRS = ['service', 'main', 'preload', 'renderer/src', 'test', 'bench', 'scripts', 'bin'];
const sources = [
  'eslint.config.js',
  'vitest.config.ts',
  ...SOURCE_DIRS.flatMap((dir) =>
    fs
      .readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|tsx|cts|js|mjs)$/.test(f) && !f.endsWith('.gen.ts'))
      .map((f) => path.join(dir, f)),
  ),
];

/** The headings of a doc, as written. */
const headingsOf = (file: string) =>
  [...prose(fs.readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => m[1]!.trim());

describe('documentation cited by the code', () => {
  it('is in the repository: docs/*.md files that exist, sections (`docs/x.md § Heading`) that exist, no DESIGN.md', () => {
    const broken: string[] = [];
    for (const file of sources) {
      if (file === path.join('test', 'unit', 'docs-links.test.ts')) continue; // its own examples
      // Comments wrap: join their lines so a citation split over two reads as one.
      const text = fs.readFileSync(file, 'utf8').replace(/\s*\n\s*(?:\*(?!\/)|\/\/)\s*/g, ' ');
      for (const m of text.matchAll(/\bDESIGN(?:\.md\b|\s*§)/g)) broken.push(`${file}: ${m[0]} (not in the repository)`);
      for (const [cited, doc] of text.matchAll(/\bdocs\/([\w-]+\.md)/g)) {
        if (!fs.existsSync(path.join('docs', doc!))) broken.push(`${file}: ${cited} (no such file)`);
      }
      for (const [, doc, rest] of text.matchAll(/\bdocs\/([\w-]+\.md)(?: §|, ")\s*([^\n]{0,80})/g)) {
        if (!fs.existsSync(path.join('docs', doc!))) continue;
        if (!headingsOf(path.join('docs', doc!)).some((h) => rest!.startsWith(h)))
          broken.push(`${file}: docs/${doc} § ${rest!.slice(0, 40)}… (no such heading)`);
      }
    }
    expect(sources.length).toBeGreaterThan(100);
    expect([...new Set(broken)]).toEqual([]);
  });
});
