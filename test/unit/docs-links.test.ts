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
