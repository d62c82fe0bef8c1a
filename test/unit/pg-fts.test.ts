/**
 * The PostgreSQL index's tokenizer (service/db/pg/fts.ts) against SQLite FTS5's own `unicode61 remove_diacritics 2`:
 * the same tokens (folded text and position) for random text over many scripts, marks, digits, emoji, unpaired
 * surrogates and code points the tables do not know — read back from SQLite through an fts5vocab 'instance'
 * table. And the tsvector/tsquery values it writes: lexemes quoted, positions 1-based, nothing of the input outside
 * a quoted lexeme.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { phraseOf, tokenize, tsqueryLiteral, tsvectorLiteral } from '../../service/db/pg/fts.ts';

/** Deterministic pseudo-random numbers (a linear congruential generator). */
function lcg(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

/** Code point ranges to draw from: ASCII, Latin, Greek, Cyrillic, marks, Hebrew, Arabic, CJK, Hangul, emoji, Deseret, … */
const RANGES: Array<[number, number]> = [
  [0x20, 0x7e],
  [0x20, 0x7e],
  [0xa0, 0x24f],
  [0x1e00, 0x1eff],
  [0x300, 0x36f],
  [0x370, 0x3ff],
  [0x400, 0x52f],
  [0x5d0, 0x5ea],
  [0x620, 0x64a],
  [0x3040, 0x30ff],
  [0x4e00, 0x4e40],
  [0xac00, 0xac40],
  [0x2000, 0x206f],
  [0x2160, 0x2188],
  [0x24b6, 0x24e9],
  [0xff10, 0xff5a],
  [0x1f600, 0x1f64f],
  [0x1f970, 0x1f9ff],
  [0x10400, 0x1044f],
  [0xe000, 0xe010],
  [0xd800, 0xdfff],
];

function randomText(rnd: (n: number) => number): string {
  let out = '';
  const n = rnd(30);
  for (let i = 0; i < n; i++) {
    const [lo, hi] = RANGES[rnd(RANGES.length)]!;
    const cp = lo + rnd(hi - lo + 1);
    out += cp >= 0xd800 && cp <= 0xdfff ? String.fromCharCode(cp) : String.fromCodePoint(cp);
  }
  return out;
}

describe('the unicode61 tokenizer port', () => {
  it('gives the tokens SQLite FTS5 gives, at the same positions', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');`);
    const insert = db.prepare(`INSERT INTO t (rowid, body) VALUES (?, ?)`);
    const rnd = lcg(7);
    const texts: string[] = [];
    for (let i = 1; i <= 3000; i++) {
      const text = randomText(rnd);
      texts.push(text);
      insert.run(i, text);
    }
    const rows = db.prepare(`SELECT doc, term, offset FROM v ORDER BY doc, offset`).all() as Array<{
      doc: number;
      term: string;
      offset: number;
    }>;
    const sqlite = new Map<number, string[]>();
    for (const r of rows) {
      const list = sqlite.get(r.doc) ?? [];
      list[r.offset] = r.term;
      sqlite.set(r.doc, list);
    }
    let compared = 0;
    texts.forEach((text, i) => {
      // fts5vocab lists no empty tokens; positions still count them.
      const ours: string[] = [];
      tokenize(text).forEach((t, pos) => {
        if (t.text !== '') ours[pos] = t.text;
      });
      expect({ text, tokens: ours }).toEqual({ text, tokens: sqlite.get(i + 1) ?? [] });
      compared += ours.filter(Boolean).length;
    });
    expect(compared).toBeGreaterThan(10_000);
    db.close();
  });

  it('writes tsvector and tsquery values whose only input text is inside quoted lexemes', () => {
    expect(tsvectorLiteral(tokenize('The café, the CAFE; naïve x2'))).toBe(`'the':1,3 'cafe':2,4 'naive':5 'x2':6`);
    const p = (tokens: string[], prefix = false) => phraseOf({ tokens, prefix });
    expect(tsqueryLiteral([p(['São', 'Paulo']), p(['inv'], true)], [p(['draft']), p(['a', 'b'], true)])).toBe(
      `(('sao' <-> 'paulo') & 'inv':*) & !('draft' | ('a' <-> 'b':*))`,
    );
    expect(tsqueryLiteral([p(['x'])], [])).toBe(`'x'`);
    expect(tsqueryLiteral([p(['\u0301'])], [])).toBeNull(); // a phrase of no tokens matches nothing
  });
});
