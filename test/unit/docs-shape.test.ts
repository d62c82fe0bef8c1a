/**
 * The shape the team's rule gives the documentation (issue 25 item 8): the README is the front door, the reference
 * lives in docs/, and every docs/ page opens with a worked example — a ```sh (or ```js) block before its first
 * reference table and before its second `##` section — and no table cell is a wall of text (cells over
 * MAX_CELL characters are split into prose or lists). test/e2e/docs-examples.test.ts runs the examples.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const MAX_CELL = 400;
const pages = fs
  .readdirSync('docs')
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);

/** The lines of `text`, each with whether it is inside a fenced code block (fence lines count as inside). */
function lines(text: string): Array<{ line: string; fenced: boolean }> {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return { line, fenced: true };
    }
    return { line, fenced };
  });
}

/** The table cells of `text` outside code blocks (escaped `\|` stays inside a cell). */
function cells(text: string): string[] {
  return lines(text)
    .filter(({ line, fenced }) => !fenced && line.startsWith('|'))
    .flatMap(({ line }) => line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim()));
}

describe('documentation shape', () => {
  it.each(pages)('%s opens with a worked example', (page) => {
    const all = lines(fs.readFileSync(page, 'utf8'));
    const firstExample = all.findIndex(({ line }) => /^```(sh|js)\s*$/.test(line));
    const firstTable = all.findIndex(({ line, fenced }) => !fenced && line.startsWith('|'));
    const sections = all.flatMap(({ line, fenced }, i) => (!fenced && /^## /.test(line) ? [i] : []));
    expect(firstExample, 'a ```sh or ```js block').toBeGreaterThanOrEqual(0);
    if (firstTable >= 0) expect(firstExample, 'the example comes before the first table').toBeLessThan(firstTable);
    if (sections.length > 1) expect(firstExample, 'the example comes in the first section').toBeLessThan(sections[1]!);
  });

  it.each(['README.md', ...pages])(`%s has no table cell over ${MAX_CELL} characters`, (page) => {
    const long = cells(fs.readFileSync(page, 'utf8'))
      .filter((c) => c.length > MAX_CELL)
      .map((c) => `${c.length}: ${c.slice(0, 80)}…`);
    expect(long).toEqual([]);
  });
});
