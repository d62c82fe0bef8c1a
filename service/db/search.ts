/**
 * Full-text search over stored messages (issue 15): an SQLite FTS5 table `message_search` kept in the same
 * transaction as the `messages` row it indexes, the translation of the API's query syntax into a safe FTS5 MATCH
 * expression, the search queries, and the resumable backfill that indexes messages stored before the index existed.
 *
 * Index layout (migration 6): one FTS5 row per searchable message, tokenizer `unicode61 remove_diacritics 2`
 * (case- and diacritic-insensitive for every script SQLite's Unicode tables know; see docs/api.md "Search" for the
 * choice over `trigram`). Columns:
 * - `body`: the searchable text of the message (SEARCH_SOURCES), NFC-normalised, with a zero-width space around
 *   each Han/Kana/Hangul/Thai character so scripts written without spaces index one token per character (a query
 *   word in those scripts becomes a phrase of its characters, i.e. a substring match);
 * - `tags`: filter tokens (`c`+connection, `k`+chat, `s`+sender, `t`+type, `f0`/`f1`) that narrow a MATCH before the
 *   exact filters on the joined `messages` row;
 * - `connection_id`, `message_id` (UNINDEXED): the `messages` primary key.
 * The FTS rowid is `timestamp << 32 | (seq & 0xffffffff)`: rowid order is the chat pages' order (timestamp, then
 * arrival), so "most recent first" reads the index backwards and stops at the page size.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './database.ts';
import { badRequest } from '../errors.ts';

/**
 * What a message contributes to the index: a `messages` column and how to read its text (default: the value).
 * Text already holds captions, location names/addresses, contact names and poll names (message-model.ts textOf);
 * document file names come from the media JSON. Making a new column searchable is one line here.
 */
export const SEARCH_SOURCES: ReadonlyArray<{ column: string; text?: (value: unknown) => string | null | undefined }> = [
  { column: 'text' },
  { column: 'media', text: (v) => (typeof v === 'string' ? (JSON.parse(v) as { filename?: string | null }).filename : null) },
];

/** FTS rowid of a `messages` row, in SQL (see the module comment). */
const ROWID_SQL = `((MIN(MAX(timestamp, 0), 2147483647) << 32) | (seq & 4294967295))`;

/** Characters of scripts written without spaces between words; each is indexed as a token of its own. */
const UNSPACED = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}])/gu;
const ZWSP = '\u200b';

/** The `body` of a message's index row from its source texts (empty = nothing to index). */
export function searchBody(texts: ReadonlyArray<string | null | undefined>): string {
  return texts
    .filter((t): t is string => typeof t === 'string' && t.length > 0)
    .join('\n')
    .normalize('NFC')
    .replace(UNSPACED, `${ZWSP}$1${ZWSP}`);
}

/** A tag token: the prefix and the value's letters and digits, lowercased (a pre-filter; exact filters follow). */
export function tag(prefix: string, value: string): string {
  return prefix + value.toLowerCase().replace(/[^0-9a-z]/g, '');
}

/** The tag tokens of a `messages` row as either engine returns it (`from_me`: SQLite 0/1, PostgreSQL boolean). */
export function searchTags(r: Omit<IndexSourceRawRow, 'id'>): string[] {
  return [
    tag('c', r.connection_id),
    tag('k', r.chat_id),
    tag('s', r.sender_jid),
    tag('t', r.type),
    r.from_me ? 'f1' : 'f0',
  ];
}

/** The searchable `body` of a `messages` row read with its SEARCH_SOURCES columns ("" for a revoked message). */
export function indexBodyOf(r: { type: string; [column: string]: unknown }): string {
  if (r.type === 'revoked') return '';
  return searchBody(SEARCH_SOURCES.map((s) => (s.text ? s.text(r[s.column]) : (r[s.column] as string | null))));
}

/** A snippet as FTS5 returns it, without the zero-width spaces the index inserted. */
export function cleanSnippet(s: string): string {
  return s.replaceAll(ZWSP, '');
}

// ---- query syntax ------------------------------------------------------------------------------------------

/** One term of a query: its tokens (letters/digits runs), prefix flag and whether it is excluded. */
interface Term {
  tokens: string[];
  prefix: boolean;
  exclude: boolean;
}

const MAX_QUERY_LENGTH = 500;
const MAX_TERMS = 32;

/** Tokens of a query term as the index tokenizes them (FTS5 re-tokenizes them; this only drops empty terms). */
function termTokens(text: string): string[] {
  return text.normalize('NFC').replace(UNSPACED, ' $1 ').match(/[\p{L}\p{N}\p{M}\p{Co}]+/gu) ?? [];
}

/**
 * Parses the API's query syntax: words, "phrases", prefix* (a word or phrase ending in `*`), -exclusion (of a word,
 * prefix or phrase). Words are ANDed; punctuation inside a word separates tokens (`e-mail` = the phrase "e mail").
 * @throws ServiceError 400 for an empty query, an unbalanced quote, only exclusions, or too long/many terms.
 */
export function parseSearchQuery(q: string): Term[] {
  if (q.length > MAX_QUERY_LENGTH) throw badRequest(`q is longer than ${MAX_QUERY_LENGTH} characters`);
  const terms: Term[] = [];
  let i = 0;
  while (i < q.length) {
    if (/\s/u.test(q[i]!)) {
      i++;
      continue;
    }
    let exclude = false;
    if (q[i] === '-' && i + 1 < q.length && !/\s/u.test(q[i + 1]!)) {
      exclude = true;
      i++;
    }
    let text: string;
    if (q[i] === '"') {
      const end = q.indexOf('"', i + 1);
      if (end < 0) throw badRequest('q has an unbalanced quote (")');
      text = q.slice(i + 1, end);
      i = end + 1;
    } else {
      const start = i;
      while (i < q.length && !/\s/u.test(q[i]!) && q[i] !== '"') i++;
      text = q.slice(start, i);
    }
    let prefix = false;
    if (text.endsWith('*')) prefix = true;
    if (q[i] === '*') {
      prefix = true;
      i++;
    }
    const tokens = termTokens(text);
    if (tokens.length > 0) terms.push({ tokens, prefix, exclude });
  }
  if (terms.length === 0) throw badRequest('q must contain at least one word to search for');
  if (terms.length > MAX_TERMS) throw badRequest(`q has more than ${MAX_TERMS} terms`);
  if (terms.every((t) => t.exclude)) throw badRequest('q must contain at least one word that is not excluded (-word)');
  return terms;
}

/** FTS5 phrase of a term: its tokens quoted (tokens hold only letters, digits and marks: no quote to escape). */
function phrase(t: Term): string {
  return `"${t.tokens.join(' ').replaceAll('"', '""')}"${t.prefix ? ' *' : ''}`;
}

/** The MATCH expression for parsed terms and filter tags (never contains user text outside a quoted phrase). */
export function matchExpression(terms: Term[], tags: { any?: string[]; all?: string[] } = {}): string {
  const include = terms.filter((t) => !t.exclude).map(phrase);
  const exclude = terms.filter((t) => t.exclude).map(phrase);
  let expr = `({body} : (${include.join(' AND ')}))`;
  if (exclude.length > 0) expr = `(${expr} NOT ({body} : (${exclude.join(' OR ')})))`;
  const tagExprs: string[] = [];
  if (tags.any && tags.any.length > 0) tagExprs.push(`(${tags.any.map((t) => `"${t}"`).join(' OR ')})`);
  for (const t of tags.all ?? []) tagExprs.push(`"${t}"`);
  if (tagExprs.length > 0) expr = `${expr} AND ({tags} : (${tagExprs.join(' AND ')}))`;
  return expr;
}

// ---- search ------------------------------------------------------------------------------------------------

export interface SearchFilters {
  /** Connections to search (the caller's own). */
  connectionIds: string[];
  chatId?: string;
  senderJid?: string;
  type?: string;
  /** The message model's `kind` (a `messages.kind` column, where the schema has one). */
  kind?: string;
  fromMe?: boolean;
  /** Unix seconds, inclusive. */
  since?: number;
  /** Unix seconds, inclusive. */
  until?: number;
}

/** One hit: the `messages` primary key, the snippet and where it sits in the result order. */
export interface SearchHit {
  connectionId: string;
  messageId: string;
  /** Body text around the matches, matches marked «…», cut text marked … */
  snippet: string;
}

export interface SearchPage {
  hits: SearchHit[];
  /** Opaque cursor of the next page, null at the end. */
  nextBefore: string | null;
}

/**
 * A decoded search cursor: an FTS rowid to continue below (recent), or an offset into the ranking together with
 * the rowid floor of the ranked window (relevance), so every page ranks the same window.
 */
export type SearchCursor = { rowid: bigint } | { offset: number; floor: bigint };

/** The opaque `nextBefore` of a search cursor (decodeSearchCursor reads it back). */
export function encodeSearchCursor(c: SearchCursor): string {
  return Buffer.from('rowid' in c ? `r${c.rowid}` : `o${c.offset}:${c.floor}`).toString('base64url');
}

/** Relevance ranks at most this many of the most recent matches (bm25 scores every row it ranks). */
export const RELEVANCE_WINDOW = 5000;

/** Decodes a search `before` cursor; undefined when it is not one this service issued. */
export function decodeSearchCursor(s: string): SearchCursor | undefined {
  const m = /^(?:r(\d{1,19})|o(\d{1,7}):(\d{1,19}))$/.exec(Buffer.from(s, 'base64url').toString('utf8'));
  if (!m) return undefined;
  return m[1] !== undefined ? { rowid: BigInt(m[1]) } : { offset: Number(m[2]), floor: BigInt(m[3]!) };
}

/** The largest FTS rowid: an upper bound of MAX_ROWID bounds nothing. */
export const MAX_ROWID = (1n << 63n) - 1n;

/** The tags every hit must carry for the filters `f` (chat, sender, type, side); the connection tags are any-of. */
export function filterTags(f: SearchFilters): string[] {
  const all: string[] = [];
  if (f.chatId !== undefined) all.push(tag('k', f.chatId));
  if (f.senderJid !== undefined) all.push(tag('s', f.senderJid));
  if (f.type !== undefined) all.push(tag('t', f.type));
  if (f.fromMe !== undefined) all.push(f.fromMe ? 'f1' : 'f0');
  return all;
}

/**
 * The cursor of a search's `before` (undefined without one).
 * @throws ServiceError 400 when it is not a cursor this service issued for this order.
 */
export function searchCursorOf(before: string | undefined, order: 'recent' | 'relevance'): SearchCursor | undefined {
  const cursor = before === undefined ? undefined : decodeSearchCursor(before);
  if (before !== undefined && (!cursor || ('rowid' in cursor) !== (order === 'recent'))) {
    throw badRequest('querystring/before is not a valid cursor for this order');
  }
  return cursor;
}

/** The lowest rowid a hit may have (the first of `since`'s second), undefined without `since`. */
export function rowidLowerBound(f: SearchFilters): bigint | undefined {
  return f.since !== undefined ? BigInt(Math.max(0, f.since)) << 32n : undefined;
}

/** The highest rowid a hit may have: before `until`'s next second and below a `recent` cursor; MAX_ROWID for none. */
export function rowidUpperBound(f: SearchFilters, cursor: SearchCursor | undefined): bigint {
  let upper = MAX_ROWID;
  if (f.until !== undefined) upper = f.until < 0 ? -1n : ((BigInt(Math.min(f.until, 2147483647)) + 1n) << 32n) - 1n;
  if (cursor && 'rowid' in cursor && cursor.rowid - 1n < upper) upper = cursor.rowid - 1n;
  return upper;
}

/** The `messages` columns an index row is made of besides SEARCH_SOURCES, as either engine returns them. */
export interface IndexSourceRawRow {
  connection_id: string;
  id: string;
  chat_id: string;
  sender_jid: string;
  type: string;
  from_me: number | boolean;
}

/** An IndexSourceRawRow as SQLite returns it, with its SEARCH_SOURCES columns. */
interface IndexSourceRow extends IndexSourceRawRow {
  from_me: number;
  [column: string]: unknown;
}

/** The `search.backfill` marker's value: the seqs still to index, (`after`, `upTo`], and the progress so far. */
export interface BackfillMarker {
  after: number;
  upTo: number;
  done: number;
  total: number;
}

/**
 * After a backfill step indexed `rows` (by seq, at most `batch`) from `marker`: the marker's next value (null: the
 * backfill is finished, drop the marker) and the progress to report.
 */
export function backfillAdvance(
  marker: BackfillMarker,
  rows: ReadonlyArray<{ seq: number }>,
  batch: number,
): { next: BackfillMarker | null; progress: { done: number; total: number; finished: boolean } } {
  const last = rows[rows.length - 1];
  if (!last || rows.length < batch) {
    return { next: null, progress: { done: marker.done + rows.length, total: marker.total, finished: true } };
  }
  const next = { ...marker, after: last.seq, done: marker.done + rows.length };
  return { next, progress: { done: next.done, total: next.total, finished: false } };
}

export type SearchIndex = ReturnType<typeof searchIndex>;

/** The index's named statements: keep it in step with `messages`, search it, and backfill it. */
export function searchIndex(db: Db) {
  const sourceColumns = SEARCH_SOURCES.map((s) => s.column).join(', ');
  const q = {
    row: db.prepare(
      `SELECT connection_id, id, chat_id, sender_jid, type, from_me, ${sourceColumns} FROM messages WHERE connection_id = ? AND id = ?`,
    ),
    remove: db.prepare(
      `DELETE FROM message_search WHERE rowid = (SELECT ${ROWID_SQL} FROM messages WHERE connection_id = ? AND id = ?)`,
    ),
    insert: db.prepare(
      `INSERT OR REPLACE INTO message_search (rowid, body, tags, connection_id, message_id)
       SELECT ${ROWID_SQL}, ?, ?, connection_id, id FROM messages WHERE connection_id = ? AND id = ?`,
    ),
    backfillBatch: db.prepare(
      `SELECT connection_id, id, chat_id, sender_jid, type, from_me, seq, ${sourceColumns} FROM messages
       WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
    ),
    chatName: db.prepare(
      `SELECT COALESCE((SELECT name FROM chats WHERE connection_id = @c AND id = @id),
         (SELECT COALESCE(name, push_name) FROM contacts WHERE connection_id = @c AND jid = @id)) AS name`,
    ),
    marker: db.prepare(`SELECT value FROM settings WHERE key = 'search.backfill'`),
    setMarker: db.prepare(`UPDATE settings SET value = ? WHERE key = 'search.backfill'`),
    dropMarker: db.prepare(`DELETE FROM settings WHERE key = 'search.backfill'`),
  };

  /** (Re)writes one message's index row; OR REPLACE: a stale row at the same rowid can never fail the message's write. */
  function indexRow(r: IndexSourceRow, fresh = false): void {
    if (!fresh) q.remove.run(r.connection_id, r.id);
    const body = indexBodyOf(r);
    if (body.trim() === '') return;
    q.insert.run(body, searchTags(r).join(' '), r.connection_id, r.id);
  }

  /** Search statements by their shape (filters present, order), prepared once each. */
  const searchQueries = new Map<string, Statement>();
  function searchStatement(key: string, sql: () => string): Statement {
    let s = searchQueries.get(key);
    if (!s) {
      s = db.prepare(sql()).safeIntegers(true);
      searchQueries.set(key, s);
    }
    return s;
  }

  const hasKind = db.prepare(`SELECT 1 FROM pragma_table_info('messages') WHERE name = 'kind'`).get() !== undefined;

  return {
    /** Display name of a chat (its name, else the contact's address-book or push name); null when unknown. */
    chatName(connectionId: string, chatId: string): string | null {
      return (q.chatName.get({ c: connectionId, id: chatId }) as { name: string | null }).name ?? null;
    },
    /**
     * Brings the index row of a message in line with its `messages` row: (re)written from its current text,
     * removed when it is revoked or has nothing to search. Call inside the message's transaction; `fresh`: the
     * message was just inserted (it has no index row yet).
     */
    reindex(connectionId: string, id: string, opts: { fresh?: boolean } = {}): void {
      const r = q.row.get(connectionId, id) as IndexSourceRow | undefined;
      if (r) indexRow(r, opts.fresh === true);
    },
    /** Removes a message's index row (before its `messages` row changes its position or goes away). */
    remove(connectionId: string, id: string): void {
      q.remove.run(connectionId, id);
    },
    /**
     * One page of hits for `q` (parsed with parseSearchQuery) in the given connections, most recent first
     * (`recent`, by timestamp then arrival) or best first (`relevance`, FTS5 bm25).
     * @throws ServiceError 400 for a malformed query or cursor.
     */
    search(query: string, f: SearchFilters, opts: { limit: number; before?: string; order: 'recent' | 'relevance' }): SearchPage {
      const terms = parseSearchQuery(query);
      if (f.connectionIds.length === 0) return { hits: [], nextBefore: null };
      const cursor = searchCursorOf(opts.before, opts.order);
      const match = matchExpression(terms, { any: f.connectionIds.map((c) => tag('c', c)), all: filterTags(f) });

      const where: string[] = ['message_search MATCH @match', `s.connection_id IN (SELECT value FROM json_each(@connections))`];
      const params: Record<string, unknown> = { match, connections: JSON.stringify(f.connectionIds), limit: BigInt(opts.limit + 1) };
      if (f.chatId !== undefined) {
        where.push('m.chat_id = @chatId');
        params.chatId = f.chatId;
      }
      if (f.senderJid !== undefined) {
        where.push('m.sender_jid = @senderJid');
        params.senderJid = f.senderJid;
      }
      if (f.type !== undefined) {
        where.push('m.type = @type');
        params.type = f.type;
      }
      if (f.kind !== undefined) {
        if (!hasKind) return { hits: [], nextBefore: null };
        where.push('m.kind = @kind');
        params.kind = f.kind;
      }
      if (f.fromMe !== undefined) {
        where.push('m.from_me = @fromMe');
        params.fromMe = f.fromMe ? 1n : 0n;
      }
      const lower = rowidLowerBound(f);
      if (lower !== undefined) {
        where.push('s.rowid >= @sinceRow');
        params.sinceRow = lower;
      }
      const upper = rowidUpperBound(f, cursor);
      if (upper !== MAX_ROWID) {
        where.push('s.rowid <= @upperRow');
        params.upperRow = upper;
      }
      let offset = 0;
      let floor = 0n;
      if (opts.order === 'relevance') {
        if (cursor && 'offset' in cursor) ({ offset, floor } = cursor);
        else {
          // The window: the RELEVANCE_WINDOW most recent matches (found by walking the index backwards).
          const bound = { match, ...(params.sinceRow !== undefined && { sinceRow: params.sinceRow }), ...(params.upperRow !== undefined && { upperRow: params.upperRow }) };
          const conds = ['message_search MATCH @match', ...where.filter((w) => w.startsWith('s.rowid'))];
          const floorStmt = searchStatement(
            `floor|${Object.keys(bound).sort().join(',')}`,
            () => `SELECT s.rowid AS rowid FROM message_search s WHERE ${conds.join(' AND ')} ORDER BY s.rowid DESC LIMIT 1 OFFSET ${RELEVANCE_WINDOW - 1}`,
          );
          try {
            floor = (floorStmt.get(bound) as { rowid: bigint } | undefined)?.rowid ?? 0n;
          } catch (err) {
            throw badRequest(`q cannot be searched: ${(err as Error).message}`);
          }
        }
        params.offset = BigInt(offset);
        if (floor > 0n) {
          where.push('s.rowid >= @floorRow');
          params.floorRow = floor;
        }
      }
      const key = `${opts.order}|${Object.keys(params).sort().join(',')}`;
      const stmt = searchStatement(
        key,
        () => `SELECT s.rowid AS rowid, s.connection_id AS connectionId, s.message_id AS messageId,
                 snippet(message_search, 0, '«', '»', '…', 16) AS snippet
               FROM message_search s JOIN messages m ON m.connection_id = s.connection_id AND m.id = s.message_id
               WHERE ${where.join(' AND ')}
               ORDER BY ${opts.order === 'recent' ? 's.rowid DESC' : 'rank, s.rowid DESC'}
               LIMIT @limit${opts.order === 'relevance' ? ' OFFSET @offset' : ''}`,
      );
      let rows: Array<{ rowid: bigint; connectionId: string; messageId: string; snippet: string }>;
      try {
        rows = stmt.all(params) as typeof rows;
      } catch (err) {
        // The expression is built from quoted phrases only; should FTS5 still refuse one, it is the query's fault.
        throw badRequest(`q cannot be searched: ${(err as Error).message}`);
      }
      const more = rows.length > opts.limit;
      const page = rows.slice(0, opts.limit);
      const last = page[page.length - 1];
      const nextBefore =
        more && last
          ? encodeSearchCursor(opts.order === 'recent' ? { rowid: last.rowid } : { offset: offset + opts.limit, floor })
          : null;
      return {
        hits: page.map((r) => ({ connectionId: r.connectionId, messageId: r.messageId, snippet: cleanSnippet(r.snippet) })),
        nextBefore,
      };
    },
    /**
     * Indexes up to `batch` messages stored before the index existed (migration 6 left a `search.backfill` marker
     * with the highest seq to cover), in one transaction with the marker's progress. Returns the progress, or
     * undefined when there is nothing (left) to do (the marker is then gone).
     */
    backfillStep(batch: number): { done: number; total: number; finished: boolean } | undefined {
      const row = q.marker.get() as { value: string } | undefined;
      if (!row) return undefined;
      const marker = JSON.parse(row.value) as BackfillMarker;
      const rows = q.backfillBatch.all(marker.after, marker.upTo, batch) as Array<IndexSourceRow & { seq: number }>;
      for (const r of rows) indexRow(r);
      const { next, progress } = backfillAdvance(marker, rows, batch);
      if (next) q.setMarker.run(JSON.stringify(next));
      else q.dropMarker.run();
      return progress;
    },
  };
}
