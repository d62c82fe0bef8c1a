/**
 * Full-text search on PostgreSQL with the results of the SQLite index (service/db/search.ts): the same tokens, the
 * same matches, the same snippets and the same bm25 ranking.
 *
 * SQLite's index tokenizes with FTS5's `unicode61 remove_diacritics 2`. PostgreSQL's own parser splits text
 * differently (file names, e-mail addresses and hyphenated words are single tokens there), so the lexemes are not
 * left to it: `tokenize` is that tokenizer ported (its category, case-folding and diacritic tables in fts-tables.ts),
 * `tsvectorLiteral` writes the body's lexemes at their token positions as a `tsvector` value, and `tsqueryLiteral`
 * the parsed query as a `tsquery` value (phrases `<->`, prefixes `:*`, exclusions `!`). Both are passed to
 * PostgreSQL as bound parameters, never as SQL text; no text search configuration is involved, so `@@` compares
 * exactly these lexemes. `snippet` is FTS5's snippet() and `bm25` its bm25() over the same instances.
 *
 * Limits of PostgreSQL's tsvector where the two may differ: positions past 16,383 are stored as 16,383 and a lexeme
 * keeps at most 256 positions (phrases deep inside a very long message), and a token longer than 2,047 bytes is not
 * indexed.
 */
import {
  DIACRITIC_CHARS,
  DIACRITIC_RANGES,
  FOLD_ENTRIES,
  FOLD_OFFSETS,
  UNICODE_BLOCK,
  UNICODE_DATA,
  UNICODE_MAP,
} from './fts-tables.ts';

// ---- the unicode61 tokenizer ---------------------------------------------------------------------------------

/** Categories that are token characters: "L* N* Co" plus 0 (code points the tables do not know). */
const TOKEN_CATEGORY = (() => {
  const a = new Uint8Array(32);
  for (const c of [0, 5, 6, 7, 8, 9, 30, 13, 14, 15, 31]) a[c] = 1;
  return a;
})();

/** sqlite3Fts5UnicodeCategory. */
function category(cp: number): number {
  if (cp >= 1 << 20) return 0;
  let lo = UNICODE_BLOCK[cp >> 16]!;
  let hi = UNICODE_BLOCK[1 + (cp >> 16)]!;
  const key = cp & 0xffff;
  let res = -1;
  while (hi > lo) {
    const test = (hi + lo) >> 1;
    if (key >= UNICODE_MAP[test]!) {
      res = test;
      lo = test + 1;
    } else hi = test;
  }
  if (res < 0) return 0;
  if (key >= UNICODE_MAP[res]! + (UNICODE_DATA[res]! >> 5)) return 0;
  const ret = UNICODE_DATA[res]! & 0x1f;
  if (ret !== 30) return ret;
  return (key - UNICODE_MAP[res]!) & 1 ? 5 : 9;
}

const isAlnum = (cp: number): boolean => (cp === 0 ? false : TOKEN_CATEGORY[category(cp)] === 1);

/** sqlite3Fts5UnicodeIsdiacritic. */
function isDiacritic(c: number): boolean {
  if (c < 768 || c > 817) return false;
  return c < 768 + 32 ? (0x08029fdf & (1 << (c - 768))) !== 0 : (0x000361f8 & (1 << (c - 768 - 32))) !== 0;
}

/** fts5_remove_diacritic with bComplex (remove_diacritics 2). */
function removeDiacritic(c: number): number {
  const key = ((c << 3) | 7) >>> 0;
  let res = 0;
  let hi = DIACRITIC_RANGES.length - 1;
  let lo = 0;
  while (hi >= lo) {
    const test = (hi + lo) >> 1;
    if (key >= DIACRITIC_RANGES[test]!) {
      res = test;
      lo = test + 1;
    } else hi = test - 1;
  }
  const range = DIACRITIC_RANGES[res]!;
  return c > (range >> 3) + (range & 7) ? c : DIACRITIC_CHARS[res]! & 0x7f;
}

/** sqlite3Fts5UnicodeFold with remove_diacritics 2: the folded code point, 0 for a dropped diacritic. */
function fold(c: number): number {
  if (c < 128) return c >= 65 && c <= 90 ? c + 32 : c;
  if (c < 65536) {
    let hi = FOLD_ENTRIES.length - 1;
    let lo = 0;
    let res = -1;
    while (hi >= lo) {
      const test = (hi + lo) >> 1;
      if (c - FOLD_ENTRIES[test]![0] >= 0) {
        res = test;
        lo = test + 1;
      } else hi = test - 1;
    }
    let ret = c;
    const [code, flags, range] = FOLD_ENTRIES[res]!;
    if (c < code + range && (0x01 & flags & (code ^ c)) === 0) ret = (c + FOLD_OFFSETS[flags >> 1]!) & 0xffff;
    return removeDiacritic(ret);
  }
  if (c >= 66560 && c < 66600) return c + 40;
  return c;
}

/** One token of a text: its folded text and where it sits (UTF-16 offsets, end exclusive). */
export interface Token {
  text: string;
  start: number;
  end: number;
}

/** The code point at `i` (a lone surrogate reads as U+FFFD, as its UTF-8 encoding for SQLite does). */
function codePointAt(s: string, i: number): { cp: number; size: number } {
  const c = s.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return { cp: ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000, size: 2 };
  }
  if (c >= 0xd800 && c <= 0xdfff) return { cp: 0xfffd, size: 1 };
  return { cp: c, size: 1 };
}

/** The tokens of `text` as FTS5's unicode61 tokenizer with remove_diacritics 2 produces them. */
export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    // Skip separators; a token starts at a token character (not at a lone diacritic).
    let { cp, size } = codePointAt(text, i);
    if (!isAlnum(cp)) {
      i += size;
      continue;
    }
    const start = i;
    let folded = '';
    while (i < n) {
      ({ cp, size } = codePointAt(text, i));
      if (cp < 128 ? !isAlnum(cp) : !(isAlnum(cp) || isDiacritic(cp))) break;
      const f = fold(cp);
      if (f) folded += String.fromCodePoint(f);
      i += size;
    }
    out.push({ text: folded, start, end: i });
  }
  return out;
}

// ---- tsvector and tsquery values ------------------------------------------------------------------------------

/** PostgreSQL's limits: positions 1..16383, 256 positions per lexeme, lexemes shorter than 2 KiB. */
const MAX_POSITION = 16383;
const MAX_POSITIONS = 256;
const MAX_LEXEME_BYTES = 2047;

/** A lexeme as a quoted tsvector/tsquery element (tokens hold letters and digits, but quote anyway). */
function quoteLexeme(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

const indexable = (t: string): boolean => t.length > 0 && Buffer.byteLength(t) <= MAX_LEXEME_BYTES;

/** The `tsvector` value of tokens: each lexeme with its 1-based token positions. */
export function tsvectorLiteral(tokens: readonly Token[]): string {
  const positions = new Map<string, number[]>();
  tokens.forEach((t, i) => {
    if (!indexable(t.text)) return;
    let list = positions.get(t.text);
    if (!list) positions.set(t.text, (list = []));
    const pos = Math.min(i + 1, MAX_POSITION);
    if (list.length < MAX_POSITIONS && list[list.length - 1] !== pos) list.push(pos);
  });
  return [...positions].map(([lexeme, list]) => `${quoteLexeme(lexeme)}:${list.join(',')}`).join(' ');
}

/** One phrase of a query: its tokens (folded) and whether its last token is a prefix. */
export interface Phrase {
  tokens: string[];
  prefix: boolean;
}

/** The phrase FTS5 makes of a parsed query term (search.ts `phrase`): its tokens re-tokenized. */
export function phraseOf(term: { tokens: string[]; prefix: boolean }): Phrase {
  return { tokens: tokenize(term.tokens.join(' ')).map((t) => t.text).filter(indexable), prefix: term.prefix };
}

/** A phrase as tsquery text; null for a phrase without tokens. */
function phraseQuery(p: Phrase): string | null {
  if (p.tokens.length === 0) return null;
  const parts = p.tokens.map((t, i) => quoteLexeme(t) + (p.prefix && i === p.tokens.length - 1 ? ':*' : ''));
  return parts.length === 1 ? parts[0]! : `(${parts.join(' <-> ')})`;
}

/** The phrase alone as a tsquery (to count the rows that hold it); null when it has no tokens. */
export function phraseTsquery(p: Phrase): string | null {
  return phraseQuery(p);
}

/**
 * The tsquery of included phrases (all must match) without any of the excluded ones; null when it can match
 * nothing (an included phrase without tokens).
 */
export function tsqueryLiteral(include: readonly Phrase[], exclude: readonly Phrase[]): string | null {
  const inc = include.map(phraseQuery);
  if (inc.length === 0 || inc.some((q) => q === null)) return null;
  const exc = exclude.map(phraseQuery).filter((q): q is string => q !== null);
  let q = inc.join(' & ');
  if (exc.length > 0) q = `${inc.length > 1 ? `(${q})` : q} & !(${exc.join(' | ')})`;
  return q;
}

// ---- instances, snippet, bm25 ---------------------------------------------------------------------------------

/** A phrase instance in the body: the phrase's index and its first token's position (FTS5's xInst). */
export interface Instance {
  phrase: number;
  position: number;
}

/** Where the phrases occur among `tokens`, by position then phrase index (FTS5's instance order). */
export function instancesOf(tokens: readonly Token[], phrases: readonly Phrase[]): Instance[] {
  const out: Instance[] = [];
  for (let pos = 0; pos < tokens.length; pos++) {
    phrases.forEach((p, index) => {
      if (p.tokens.length === 0 || pos + p.tokens.length > tokens.length) return;
      for (let k = 0; k < p.tokens.length; k++) {
        const have = tokens[pos + k]!.text;
        const want = p.tokens[k]!;
        const last = k === p.tokens.length - 1;
        if (last && p.prefix ? !have.startsWith(want) : have !== want) return;
      }
      out.push({ phrase: index, position: pos });
    });
  }
  return out;
}

/**
 * FTS5's snippet(table, col, open, close, ellipsis, nToken) of one column: the best window of `nToken` tokens
 * (the most distinct phrases, a sentence start preferred), matches between `open` and `close`, cut text marked
 * with `ellipsis`. `phraseSizes[i]` is the token count of phrase i; `instances` those in this column.
 */
export function snippet(
  text: string,
  tokens: readonly Token[],
  instances: readonly Instance[],
  phraseSizes: readonly number[],
  open: string,
  close: string,
  ellipsis: string,
  nToken: number,
): string {
  const nDocsize = tokens.length;
  // Sentence starts: the first token, and each token after whitespace that follows a '.' or ':'.
  const firsts: number[] = [];
  tokens.forEach((t, pos) => {
    if (pos === 0) return void firsts.push(0);
    let i = t.start - 1;
    let c = '';
    for (; i >= 0; i--) {
      c = text[i]!;
      if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') break;
    }
    if (i !== t.start - 1 && (c === '.' || c === ':')) firsts.push(pos);
  });
  const score = (iPos: number): { score: number; adj: number } => {
    const seen = new Set<number>();
    let s = 0;
    let first = -1;
    let last = 0;
    const end = iPos + nToken;
    for (const inst of instances) {
      if (inst.position >= iPos && inst.position < end) {
        s += seen.has(inst.phrase) ? 1 : 1000;
        seen.add(inst.phrase);
        if (first < 0) first = inst.position;
        last = inst.position + phraseSizes[inst.phrase]!;
      }
    }
    let adj = first - Math.trunc((nToken - (last - first)) / 2);
    if (adj + nToken > nDocsize) adj = nDocsize - nToken;
    if (adj < 0) adj = 0;
    return { score: s, adj };
  };
  let bestScore = 0;
  let bestStart = 0;
  for (const inst of instances) {
    const a = score(inst.position);
    if (a.score > bestScore) {
      bestScore = a.score;
      bestStart = a.adj;
    }
    if (firsts.length > 0 && nDocsize > nToken) {
      let jj = 0;
      for (; jj < firsts.length - 1; jj++) if (firsts[jj + 1]! > inst.position) break;
      if (firsts[jj]! < inst.position) {
        const b = score(firsts[jj]!).score + (firsts[jj] === 0 ? 120 : 100);
        if (b > bestScore) {
          bestScore = b;
          bestStart = firsts[jj]!;
        }
      }
    }
  }

  // The coalesced instance iterator (overlapping instances merge into one highlight).
  let next = 0;
  const iter = { start: -1, end: -1 };
  const advance = () => {
    iter.start = -1;
    iter.end = -1;
    while (next < instances.length) {
      const inst = instances[next]!;
      const end = inst.position - 1 + phraseSizes[inst.phrase]!;
      if (iter.start < 0) {
        iter.start = inst.position;
        iter.end = end;
      } else if (inst.position <= iter.end) {
        if (end > iter.end) iter.end = end;
      } else break;
      next++;
    }
  };
  advance();

  const rangeStart = bestStart;
  const rangeEnd = bestStart + nToken - 1;
  let out = bestStart > 0 ? ellipsis : '';
  while (iter.start >= 0 && iter.start < bestStart) advance();
  let off = 0;
  let isOpen = false;
  tokens.forEach((t, pos) => {
    if (pos < rangeStart || pos > rangeEnd) return;
    if (rangeStart && pos === rangeStart) off = t.start;
    if (isOpen && (pos <= iter.start || iter.start < 0) && t.start > off) {
      out += close;
      isOpen = false;
    }
    if (pos === iter.start && !isOpen) {
      out += text.slice(off, t.start) + open;
      off = t.start;
      isOpen = true;
    }
    if (pos === iter.end) {
      if (!isOpen) {
        out += open;
        isOpen = true;
      }
      out += text.slice(off, t.end);
      off = t.end;
      advance();
    }
    if (pos === rangeEnd) {
      if (isOpen) {
        if (iter.start >= 0 && pos >= iter.start) {
          out += text.slice(off, t.end);
          off = t.end;
        }
        out += close;
        isOpen = false;
      }
      out += text.slice(off, t.end);
      off = t.end;
    }
  });
  if (isOpen) out += close;
  out += rangeEnd >= nDocsize - 1 ? text.slice(off) : ellipsis;
  return out;
}

/** Corpus statistics of bm25: rows in the index, their total tokens, and rows holding each phrase. */
export interface Bm25Corpus {
  rows: number;
  tokens: number;
  hits: readonly number[];
}

/** The IDF of each phrase (FTS5 fts5Bm25GetData), and the average row length. */
export function bm25Weights(c: Bm25Corpus): { idf: number[]; avgdl: number } {
  return {
    avgdl: c.tokens / c.rows,
    idf: c.hits.map((nHit) => {
      const idf = Math.log((c.rows - nHit + 0.5) / (nHit + 0.5));
      return idf <= 0 ? 1e-6 : idf;
    }),
  };
}

/** FTS5's bm25() of a row: `freq[i]` instances of phrase i, `size` tokens in the row (all columns). */
export function bm25(w: { idf: readonly number[]; avgdl: number }, freq: readonly number[], size: number): number {
  const k1 = 1.2;
  const b = 0.75;
  let score = 0.0;
  for (let i = 0; i < w.idf.length; i++) {
    const f = freq[i] ?? 0;
    score += w.idf[i]! * ((f * (k1 + 1.0)) / (f + k1 * (1 - b + (b * size) / w.avgdl)));
  }
  return -1.0 * score;
}
