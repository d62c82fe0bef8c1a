/**
 * The full-text index of messages on PostgreSQL: pgSearchIndex is searchIndex (service/db/search.ts) method for
 * method, asynchronous, with the same query syntax, refusals (ServiceError 400), hits, order, cursors and snippets.
 *
 * Table `message_search` (schema/002-messages.ts) holds one row per searchable message: its `body` (search.ts
 * searchBody), the body's lexemes as a `tsvector` (fts.ts: FTS5's unicode61 tokens, so matches are FTS5's), the
 * FTS5 rowid `timestamp << 32 | seq` (the order of "recent" and its cursors), and the FTS5 tag tokens and token
 * count (bm25). A query is parsed by search.ts parseSearchQuery and becomes one `tsquery` value, bound as a
 * parameter; the filters are exact conditions on the joined `messages` row, as on SQLite. Relevance ranks the same
 * window (the RELEVANCE_WINDOW most recent matches) by FTS5's bm25 computed over the same statistics (fts.ts).
 */
import { atomically } from './message-scope.ts';
import type { PgScope, Queryable } from './scope.ts';
import {
  MAX_ROWID,
  RELEVANCE_WINDOW,
  cleanSnippet,
  encodeSearchCursor,
  filterTags,
  indexBodyOf,
  parseSearchQuery,
  rowidLowerBound,
  rowidUpperBound,
  searchCursorOf,
  searchTags,
  tag,
  backfillAdvance,
  type BackfillMarker,
  type IndexSourceRawRow,
  type SearchFilters,
  type SearchPage,
} from '../../search.ts';
import {
  bm25,
  bm25Weights,
  instancesOf,
  phraseOf,
  phraseTsquery,
  snippet,
  tokenize,
  tsqueryLiteral,
  tsvectorLiteral,
  type Phrase,
} from '../fts.ts';

/** A `messages` row as the index reads it (on PostgreSQL: `from_me` boolean; SEARCH_SOURCES `text`, `media`). */
export interface PgIndexSource extends IndexSourceRawRow {
  from_me: boolean;
  timestamp: number;
  seq: number;
  text: string;
  media: string | null;
}

/** The FTS5 rowid of a message (search.ts ROWID_SQL). */
function rowidOf(timestamp: number, seq: number): bigint {
  return (BigInt(Math.min(Math.max(timestamp, 0), 2147483647)) << 32n) | (BigInt(seq) & 0xffffffffn);
}

const SOURCE_COLUMNS = 'connection_id, id, chat_id, sender_jid, type, from_me, timestamp, seq, text, media';

/** What the index holds for a message (search.ts indexRow), or null when it has nothing to search. */
export interface IndexEntry {
  body: string;
  ntokens: number;
  tags: string[];
  tsv: string;
}

/** The index entry of a `messages` row (its columns as stored; `timestamp` and `seq` are not read). */
export function indexEntryOf(r: Omit<PgIndexSource, 'timestamp' | 'seq'>): IndexEntry | null {
  const body = indexBodyOf(r as unknown as Record<string, unknown> & { type: string });
  if (body.trim() === '') return null;
  const tokens = tokenize(body);
  return { body, ntokens: tokens.length, tags: searchTags(r), tsv: tsvectorLiteral(tokens) };
}

/**
 * Writes (or removes) the index row of a message from its `messages` row: search.ts indexRow. Exported for the
 * messages repository, which has the row at hand after its writes.
 */
export async function writeIndexRow(sql: Queryable, r: PgIndexSource, fresh = false): Promise<void> {
  const e = indexEntryOf(r);
  if (!e) {
    if (!fresh) await sql`DELETE FROM message_search WHERE connection_id = ${r.connection_id} AND message_id = ${r.id}`;
    return;
  }
  await sql`
    INSERT INTO message_search (connection_id, message_id, rowid, body, ntokens, tags, tsv)
    VALUES (${r.connection_id}, ${r.id}, ${rowidOf(r.timestamp, r.seq).toString()}::bigint, ${e.body}, ${e.ntokens},
            ${e.tags}::text[], ${e.tsv}::tsvector)
    ON CONFLICT (connection_id, message_id) DO UPDATE SET
      rowid = excluded.rowid, body = excluded.body, ntokens = excluded.ntokens, tags = excluded.tags, tsv = excluded.tsv`;
}

/** The snippet of a hit: FTS5's snippet(message_search, 0, '«', '»', '…', 16) without the index's zero-width spaces. */
function snippetOf(body: string, include: readonly Phrase[]): string {
  const tokens = tokenize(body);
  const lengths = include.map((p) => p.tokens.length);
  return cleanSnippet(snippet(body, tokens, instancesOf(tokens, include), lengths, '«', '»', '…', 16));
}

export type PgSearchIndex = ReturnType<typeof pgSearchIndex>;

export function pgSearchIndex(scope: PgScope) {
  const { sql } = scope;
  return {
    /** searchIndex.chatName. */
    async chatName(connectionId: string, chatId: string): Promise<string | null> {
      const [r] = await sql<Array<{ name: string | null }>>`
        SELECT COALESCE((SELECT name FROM chats WHERE connection_id = ${connectionId} AND id = ${chatId}),
          (SELECT COALESCE(name, push_name) FROM contacts WHERE connection_id = ${connectionId} AND jid = ${chatId})) AS name`;
      return r?.name ?? null;
    },
    /** searchIndex.reindex. */
    async reindex(connectionId: string, id: string, opts: { fresh?: boolean } = {}): Promise<void> {
      const [r] = await sql<
        PgIndexSource[]
      >`SELECT ${sql.unsafe(SOURCE_COLUMNS)} FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
      if (r) await writeIndexRow(sql, r, opts.fresh === true);
    },
    /** searchIndex.remove. */
    async remove(connectionId: string, id: string): Promise<void> {
      await sql`DELETE FROM message_search WHERE connection_id = ${connectionId} AND message_id = ${id}`;
    },
    /**
     * searchIndex.search: one page of hits, most recent first or by bm25.
     * @throws ServiceError 400 for a malformed query or cursor.
     */
    async search(
      query: string,
      f: SearchFilters,
      opts: { limit: number; before?: string; order: 'recent' | 'relevance' },
    ): Promise<SearchPage> {
      const terms = parseSearchQuery(query);
      if (f.connectionIds.length === 0) return { hits: [], nextBefore: null };
      const cursor = searchCursorOf(opts.before, opts.order);
      const include = terms.filter((t) => !t.exclude).map(phraseOf);
      const exclude = terms.filter((t) => t.exclude).map(phraseOf);
      const tsq = tsqueryLiteral(include, exclude);
      if (tsq === null) return { hits: [], nextBefore: null };
      const anyTags = f.connectionIds.map((c) => tag('c', c));
      const allTags = filterTags(f);

      const lower = rowidLowerBound(f);
      const upper = rowidUpperBound(f, cursor);
      const bounds = sql`${lower !== undefined ? sql`AND s.rowid >= ${lower.toString()}::bigint` : sql``}
        ${upper !== MAX_ROWID ? sql`AND s.rowid <= ${upper.toString()}::bigint` : sql``}`;

      let offset = 0;
      let floor = 0n;
      if (opts.order === 'relevance') {
        if (cursor && 'offset' in cursor) ({ offset, floor } = cursor);
        else {
          // The window: the RELEVANCE_WINDOW most recent matches of the query and its tags (search.ts).
          const [r] = await sql<Array<{ rowid: string }>>`
            SELECT s.rowid::text AS rowid FROM message_search s
            WHERE s.tsv @@ ${tsq}::tsquery AND s.tags && ${anyTags}::text[] AND s.tags @> ${allTags}::text[] ${bounds}
            ORDER BY s.rowid DESC LIMIT 1 OFFSET ${RELEVANCE_WINDOW - 1}`;
          floor = r ? BigInt(r.rowid) : 0n;
        }
      }
      const where = sql`s.tsv @@ ${tsq}::tsquery AND s.connection_id = ANY(${f.connectionIds}::text[])
        ${f.chatId !== undefined ? sql`AND m.chat_id = ${f.chatId}` : sql``}
        ${f.senderJid !== undefined ? sql`AND m.sender_jid = ${f.senderJid}` : sql``}
        ${f.type !== undefined ? sql`AND m.type = ${f.type}` : sql``}
        ${f.kind !== undefined ? sql`AND m.kind = ${f.kind}` : sql``}
        ${f.fromMe !== undefined ? sql`AND m.from_me = ${f.fromMe}` : sql``}
        ${floor > 0n ? sql`AND s.rowid >= ${floor.toString()}::bigint` : sql``} ${bounds}`;

      type Row = {
        rowid: string;
        connection_id: string;
        message_id: string;
        body: string;
        ntokens: number;
        tags: string[];
      };
      let page: Row[];
      let more: boolean;
      if (opts.order === 'recent') {
        const rows = await sql<Row[]>`
          SELECT s.rowid::text AS rowid, s.connection_id, s.message_id, s.body, s.ntokens, s.tags
          FROM message_search s JOIN messages m ON m.connection_id = s.connection_id AND m.id = s.message_id
          WHERE ${where} ORDER BY s.rowid DESC LIMIT ${opts.limit + 1}`;
        more = rows.length > opts.limit;
        page = rows.slice(0, opts.limit);
      } else {
        // bm25 over the window, with FTS5's phrases in its order: included, excluded, connection tags, filter tags.
        const rows = await sql<Row[]>`
          SELECT s.rowid::text AS rowid, s.connection_id, s.message_id, s.body, s.ntokens, s.tags
          FROM message_search s JOIN messages m ON m.connection_id = s.connection_id AND m.id = s.message_id
          WHERE ${where}`;
        const phrases = [...include, ...exclude];
        const phraseQueries = phrases.map((p) => phraseTsquery(p) ?? '');
        const tagPhrases = [...anyTags, ...allTags];
        const [stats] = await sql<Array<{ rows: number; tokens: number; phrase_hits: number[]; tag_hits: number[] }>>`
          SELECT (SELECT count(*) FROM message_search) AS rows,
                 (SELECT COALESCE(sum(ntokens + cardinality(tags)), 0) FROM message_search)::bigint AS tokens,
                 ARRAY(SELECT CASE WHEN q = '' THEN 0 ELSE (SELECT count(*) FROM message_search WHERE tsv @@ q::tsquery) END
                       FROM unnest(${phraseQueries}::text[]) WITH ORDINALITY AS u(q, i) ORDER BY i) AS phrase_hits,
                 ARRAY(SELECT (SELECT count(*) FROM message_search WHERE tags @> ARRAY[t])
                       FROM unnest(${tagPhrases}::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i) AS tag_hits`;
        const weights = bm25Weights({
          rows: stats!.rows,
          tokens: Number(stats!.tokens),
          hits: [...stats!.phrase_hits.map(Number), ...stats!.tag_hits.map(Number)],
        });
        const scored = rows.map((r) => {
          const tokens = tokenize(r.body);
          const freq = new Array<number>(phrases.length + tagPhrases.length).fill(0);
          for (const inst of instancesOf(tokens, include)) freq[inst.phrase]!++;
          tagPhrases.forEach((t, i) => (freq[phrases.length + i] = r.tags.filter((x) => x === t).length));
          return { row: r, rank: bm25(weights, freq, r.ntokens + r.tags.length), rowid: BigInt(r.rowid) };
        });
        scored.sort((a, b) => a.rank - b.rank || (a.rowid < b.rowid ? 1 : a.rowid > b.rowid ? -1 : 0));
        more = scored.length > offset + opts.limit;
        page = scored.slice(offset, offset + opts.limit).map((s) => s.row);
      }
      const last = page[page.length - 1];
      const nextBefore =
        more && last
          ? encodeSearchCursor(
              opts.order === 'recent' ? { rowid: BigInt(last.rowid) } : { offset: offset + opts.limit, floor },
            )
          : null;
      return {
        hits: page.map((r) => ({
          connectionId: r.connection_id,
          messageId: r.message_id,
          snippet: snippetOf(r.body, include),
        })),
        nextBefore,
      };
    },
    /** searchIndex.backfillStep: indexes up to `batch` messages after the `search.backfill` marker. */
    backfillStep(batch: number): Promise<{ done: number; total: number; finished: boolean } | undefined> {
      return atomically(scope, (sql) => backfillStep(sql, batch));
    },
  };
}

/** searchIndex.backfillStep's statements. */
async function backfillStep(
  sql: Queryable,
  batch: number,
): Promise<{ done: number; total: number; finished: boolean } | undefined> {
  const [row] = await sql<Array<{ value: string }>>`SELECT value FROM settings WHERE key = 'search.backfill'`;
  if (!row) return undefined;
  const marker = JSON.parse(row.value) as BackfillMarker;
  const rows = await sql<PgIndexSource[]>`
        SELECT ${sql.unsafe(SOURCE_COLUMNS)} FROM messages WHERE seq > ${marker.after} AND seq <= ${marker.upTo} ORDER BY seq LIMIT ${batch}`;
  for (const r of rows) await writeIndexRow(sql, r);
  const { next, progress } = backfillAdvance(marker, rows, batch);
  if (next) await sql`UPDATE settings SET value = ${JSON.stringify(next)} WHERE key = 'search.backfill'`;
  else await sql`DELETE FROM settings WHERE key = 'search.backfill'`;
  return progress;
}
