/**
 * Copies a desktop data dir's SQLite database (service/db/migrations.ts schema) into an empty PostgreSQL database
 * (schema/*.ts), for `switchboard migrate` (service/cli/migrate.ts; docs/scaling.md § Moving a desktop data dir to
 * PostgreSQL). See docs/architecture.md § Storage engines for how the two schemas correspond.
 *
 * - **All or nothing.** Every row is written in one PostgreSQL transaction; the row counts of each table are compared
 *   in it before the COMMIT, and a mismatch (or any error) rolls everything back.
 * - **Streamed.** Rows are read from SQLite with `.iterate()` inside one read transaction (one snapshot for reads and
 *   counts) and written in multi-row INSERTs of at most BATCH_ROWS rows / BATCH_BYTES bytes: a 1M-message table is
 *   never held in memory.
 * - **Column for column.** Each table's columns come from both catalogs: every SQLite column must exist in
 *   PostgreSQL (0/1 flags become booleans, BLOBs bytea); a PostgreSQL column SQLite lacks must have a default (the
 *   `ord` insertion-order columns, filled in SQLite's rowid order). A SQLite table this build cannot place is an
 *   error naming it, not a silent skip.
 * - **Derived data as the PostgreSQL repositories make it.** The full-text index (`message_search`) is rebuilt for
 *   exactly the messages SQLite's FTS5 index holds, each entry computed by pg/repos/search.ts `indexEntryOf` (an
 *   unfinished SQLite backfill stays unfinished: its `search.backfill` marker is copied with the settings, and the
 *   backfill resumes on PostgreSQL). Sequences behind copied columns (`messages_seq`) are moved past the copied
 *   values.
 * - Free text goes through pgText (U+0000 cannot be stored in PostgreSQL text), as the repositories write it.
 */
import type { Database } from 'better-sqlite3';
import type postgres from 'postgres';
import type { Sql } from './client.ts';
import { migratePg } from './migrations.ts';
import { pgText } from './repos/message-scope.ts';
import { SEARCH_SOURCES } from '../search.ts';
import { indexEntryOf, type PgIndexSource } from './repos/search.ts';

/** The SQLite tables copied, parents before children (foreign keys are checked row by row). */
export const COPIED_TABLES: readonly string[] = [
  'users',
  'api_tokens',
  'connections',
  'auth_creds',
  'auth_keys',
  'settings',
  'events',
  'webhooks',
  'webhook_deliveries',
  'billing_accounts',
  'stripe_customers',
  'idempotency_keys',
  'chats',
  'contacts',
  'messages',
  'message_edits',
  'message_reactions',
  'poll_votes',
  'group_metadata',
];

/** The search index: not copied but rebuilt (see the module comment); its rows are counted like the others. */
const SEARCH_TABLE = 'message_search';

/**
 * SQLite tables with no PostgreSQL counterpart on purpose, and why. `cache_generations` is SQLite's cache-coherence
 * counter between the connections of one file (docs/architecture.md § Data plane); it holds no user data.
 */
export const SQLITE_ONLY_TABLES: Readonly<Record<string, string>> = {
  cache_generations: 'cache counters of the SQLite file',
};

/** Most rows in one INSERT (PostgreSQL takes at most 65,535 parameters per statement; see batchRows). */
const BATCH_ROWS = 1000;
/** Most bytes of values (approximately) in one INSERT. */
const BATCH_BYTES = 8 * 1024 * 1024;
const MAX_PARAMETERS = 65_000;

/** One line of the verification: the rows of `table` in SQLite and, after the copy, in PostgreSQL. */
export interface TableCount {
  table: string;
  sqlite: number;
  postgres: number;
}

/** Progress of a copy: called after each table with its line. */
export type CopyProgress = (count: TableCount) => void;

/** The source is not a database this build can copy (another schema version, an unknown table). */
export class CopySourceError extends Error {
  override name = 'CopySourceError';
}

/** The copy wrote a different number of rows than the source holds; the transaction was rolled back. */
export class CopyVerificationError extends Error {
  override name = 'CopyVerificationError';
  constructor(readonly counts: TableCount[]) {
    const bad = counts.filter((c) => c.sqlite !== c.postgres);
    super(`row counts differ after the copy (${bad.map((c) => `${c.table}: ${c.sqlite} → ${c.postgres}`).join(', ')})`);
  }
}

/** The target already holds rows; nothing was written. */
export class TargetNotEmptyError extends Error {
  override name = 'TargetNotEmptyError';
  constructor(readonly table: string) {
    super(`the target database is not empty (table ${table} has rows); migrate copies into an empty database only`);
  }
}

interface PgColumn {
  name: string;
  type: string;
  hasDefault: boolean;
  nullable: boolean;
  /** The sequence of a `nextval(...)` default, if any. */
  sequence: string | null;
}

interface TablePlan {
  table: string;
  /** The columns copied (SQLite's), in order. */
  columns: string[];
  /** Copied columns that are booleans in PostgreSQL. */
  booleans: Set<string>;
  /** Whether the SQLite table has a rowid (its insertion order, given to PostgreSQL's `ord` defaults). */
  hasRowid: boolean;
  /** Sequences behind copied columns: set past the copied maximum. */
  sequences: Array<{ column: string; sequence: string }>;
}

/** The SQLite tables of the source: name → whether it has a rowid. FTS5 shadow tables and sqlite_* are left out. */
function sqliteTables(db: Database): Map<string, boolean> {
  const rows = db
    .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`)
    .all() as Array<{ name: string; sql: string | null }>;
  const virtual = rows.filter((r) => /^CREATE VIRTUAL TABLE/i.test(r.sql ?? '')).map((r) => r.name);
  const tables = new Map<string, boolean>();
  for (const r of rows) {
    if (virtual.some((v) => r.name.startsWith(`${v}_`))) continue; // an FTS5 shadow table
    tables.set(r.name, !/WITHOUT\s+ROWID\s*$/i.test((r.sql ?? '').trim()) && !virtual.includes(r.name));
  }
  return tables;
}

/** The columns of every table of the target's current schema. */
async function pgColumns(sql: postgres.TransactionSql): Promise<Map<string, PgColumn[]>> {
  const rows = await sql<Array<{ table_name: string; column_name: string; data_type: string; column_default: string | null; is_nullable: string }>>`
    SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns
    WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`;
  const out = new Map<string, PgColumn[]>();
  for (const r of rows) {
    const list = out.get(r.table_name) ?? [];
    list.push({
      name: r.column_name,
      type: r.data_type,
      hasDefault: r.column_default !== null,
      nullable: r.is_nullable === 'YES',
      sequence: /^nextval\('([^']+)'/.exec(r.column_default ?? '')?.[1] ?? null,
    });
    out.set(r.table_name, list);
  }
  return out;
}

/**
 * How each table is copied, from both catalogs.
 * @throws CopySourceError for a SQLite table or column the target has no place for
 */
function plan(source: Database, tables: Map<string, boolean>, target: Map<string, PgColumn[]>): TablePlan[] {
  const known = new Set([...COPIED_TABLES, SEARCH_TABLE, ...Object.keys(SQLITE_ONLY_TABLES)]);
  const unknown = [...tables.keys()].filter((t) => !known.has(t));
  if (unknown.length > 0) {
    throw new CopySourceError(`this build cannot copy SQLite table(s) ${unknown.join(', ')}: no PostgreSQL counterpart`);
  }
  const plans: TablePlan[] = [];
  for (const table of COPIED_TABLES) {
    if (!tables.has(table)) throw new CopySourceError(`the SQLite database has no table ${table}`);
    const pg = target.get(table);
    if (!pg) throw new CopySourceError(`the PostgreSQL schema has no table ${table}`);
    const columns = (source.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as Array<{ name: string }>).map(
      (c) => c.name,
    );
    const byName = new Map(pg.map((c) => [c.name, c]));
    const missing = columns.filter((c) => !byName.has(c));
    if (missing.length > 0) throw new CopySourceError(`PostgreSQL table ${table} has no column(s) ${missing.join(', ')}`);
    const unfilled = pg.filter((c) => !columns.includes(c.name) && !c.hasDefault && !c.nullable);
    if (unfilled.length > 0) {
      throw new CopySourceError(`PostgreSQL column(s) ${unfilled.map((c) => `${table}.${c.name}`).join(', ')} have no SQLite source`);
    }
    plans.push({
      table,
      columns,
      booleans: new Set(columns.filter((c) => byName.get(c)!.type === 'boolean')),
      hasRowid: tables.get(table)!,
      sequences: columns.flatMap((c) => {
        const sequence = byName.get(c)!.sequence;
        return sequence ? [{ column: c, sequence }] : [];
      }),
    });
  }
  return plans;
}

/** A row as written: column → value. */
type Row = Record<string, postgres.SerializableParameter>;

/** A SQLite value as the PostgreSQL column takes it. */
function convert(value: unknown, boolean: boolean): postgres.SerializableParameter {
  if (value === null || value === undefined) return null;
  if (boolean) return value !== 0 && value !== 0n && value !== '0';
  if (typeof value === 'string') return pgText(value);
  return value as postgres.SerializableParameter;
}

/** Approximate size of a row's values, in bytes (for BATCH_BYTES). */
function sizeOf(row: Row): number {
  let n = 0;
  for (const v of Object.values(row)) n += typeof v === 'string' ? v.length : v instanceof Uint8Array ? v.length : 8;
  return n;
}

/**
 * Reads `rows` in batches and writes each with `write`; returns how many were written. A batch holds at most
 * BATCH_ROWS rows, MAX_PARAMETERS values and about BATCH_BYTES bytes.
 */
async function inBatches(
  rows: Iterable<Row>,
  columnCount: number,
  write: (batch: Array<Row>) => Promise<unknown>,
): Promise<number> {
  const maxRows = Math.max(1, Math.min(BATCH_ROWS, Math.floor(MAX_PARAMETERS / Math.max(1, columnCount))));
  let batch: Array<Row> = [];
  let bytes = 0;
  let written = 0;
  for (const row of rows) {
    batch.push(row);
    bytes += sizeOf(row);
    if (batch.length >= maxRows || bytes >= BATCH_BYTES) {
      await write(batch);
      written += batch.length;
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) {
    await write(batch);
    written += batch.length;
  }
  return written;
}

/** Copies one table's rows (see the module comment); returns the rows written. */
async function copyTable(source: Database, t: postgres.TransactionSql, p: TablePlan): Promise<number> {
  const list = p.columns.map((c) => `"${c}"`).join(', ');
  const stmt = source.prepare(`SELECT ${list} FROM "${p.table}"${p.hasRowid ? ' ORDER BY rowid' : ''}`);
  function* converted(): Generator<Row> {
    for (const raw of stmt.iterate() as Iterable<Record<string, unknown>>) {
      const row: Row = {};
      for (const c of p.columns) row[c] = convert(raw[c], p.booleans.has(c));
      yield row;
    }
  }
  return inBatches(converted(), p.columns.length, (batch) => t`INSERT INTO ${t(p.table)} ${t(batch, p.columns)}`);
}

/** SQLite's count of the index: its rows whose message is stored (what rebuildSearch reads). */
const SEARCH_COUNT = `SELECT count(*) AS n FROM message_search s JOIN messages m ON m.connection_id = s.connection_id AND m.id = s.message_id`;

/** The `messages` columns an index entry is made of (pg/repos/search.ts PgIndexSource). */
const INDEX_SOURCE_COLUMNS = [
  ...new Set(['connection_id', 'id', 'chat_id', 'sender_jid', 'type', 'from_me', 'timestamp', 'seq', ...SEARCH_SOURCES.map((c) => c.column)]),
];

/** The FTS5 rowid of a message: timestamp << 32 | seq (service/db/search.ts ROWID_SQL). */
function rowidOf(timestamp: number, seq: number): string {
  return ((BigInt(Math.min(Math.max(timestamp, 0), 2147483647)) << 32n) | (BigInt(seq) & 0xffffffffn)).toString();
}

/**
 * Writes PostgreSQL's `message_search` rows for exactly the messages SQLite's FTS5 index holds, each entry made by
 * indexEntryOf from the message's row (as the PostgreSQL messages repository writes it); returns the rows written.
 */
async function rebuildSearch(source: Database, t: postgres.TransactionSql): Promise<number> {
  const stmt = source.prepare(
    `SELECT ${INDEX_SOURCE_COLUMNS.map((c) => `m."${c}"`).join(', ')}
     FROM message_search s JOIN messages m ON m.connection_id = s.connection_id AND m.id = s.message_id`,
  );
  const SEARCH_COLUMNS = ['connection_id', 'message_id', 'rowid', 'body', 'ntokens', 'tags', 'tsv'];
  function* entries(): Generator<Row> {
    for (const raw of stmt.iterate() as Iterable<Record<string, unknown>>) {
      const m: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(raw)) m[k] = convert(v, k === 'from_me');
      const e = indexEntryOf(m as unknown as PgIndexSource);
      if (!e) continue; // nothing to search (as writeIndexRow): the verification reports the difference
      yield {
        connection_id: m.connection_id as string,
        message_id: m.id as string,
        rowid: rowidOf(Number(m.timestamp), Number(m.seq)),
        body: e.body,
        ntokens: e.ntokens,
        tags: `{${e.tags.map((x) => `"${x}"`).join(',')}}`, // a text[] literal; tag tokens are [0-9a-z] only
        tsv: e.tsv,
      };
    }
  }
  return inBatches(entries(), SEARCH_COLUMNS.length, (batch) => t`INSERT INTO message_search ${t(batch, SEARCH_COLUMNS)}`);
}

/** Rows of each table of the target (current schema), for the emptiness check. Returns the first table with rows. */
export async function firstNonEmptyTable(sql: Sql | postgres.TransactionSql): Promise<string | undefined> {
  const tables = await sql<Array<{ tablename: string }>>`
    SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'schema_migrations' ORDER BY tablename`;
  for (const { tablename } of tables) {
    const [row] = await sql<Array<{ any: boolean }>>`SELECT EXISTS (SELECT 1 FROM ${sql(tablename)}) AS any`;
    if (row?.any) return tablename;
  }
  return undefined;
}

/** Key of the advisory lock migratePg takes (pg/migrations.ts): held while copying, so no host migrates meanwhile. */
const MIGRATION_LOCK_KEY = 0x53574244;

/**
 * Copies every table of `source` (a read-only SQLite handle at this build's schema version) into the database
 * behind `sql`, which must hold no rows; its schema is created or migrated first (migratePg), in the same
 * transaction.
 * Calls `progress` after each table. Resolves with the verified counts (the copy is committed);
 * @throws TargetNotEmptyError, CopySourceError, CopyVerificationError, or the database's error — in every case
 *   after rolling back: nothing is written.
 */
export async function copySqliteToPg(source: Database, sql: Sql, progress: CopyProgress = () => undefined): Promise<TableCount[]> {
  const tables = sqliteTables(source);
  // One read transaction: the counts and the rows are one snapshot of the source.
  source.prepare('BEGIN').run();
  try {
    const expected = new Map<string, number>();
    for (const table of COPIED_TABLES) {
      if (!tables.has(table)) continue;
      expected.set(table, (source.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n);
    }
    // The index rows of stored messages (an index row whose message is gone would have nothing to rebuild from).
    if (tables.has(SEARCH_TABLE)) expected.set(SEARCH_TABLE, (source.prepare(SEARCH_COUNT).get() as { n: number }).n);
    return (await sql.begin(async (t) => {
      await t`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
      const occupied = await firstNonEmptyTable(t);
      if (occupied) throw new TargetNotEmptyError(occupied);
      // The schema is created (or brought up to date) in this same transaction: a failed copy leaves no schema
      // either. migratePg opens its transaction with `begin`; here that is this one (its advisory lock is re-entrant).
      await migratePg({ begin: (fn: (tx: postgres.TransactionSql) => Promise<unknown>) => fn(t) } as unknown as Sql);
      const plans = plan(source, tables, await pgColumns(t));
      const counts: TableCount[] = [];
      const verify = async (table: string) => {
        const [row] = await t<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM ${t(table)}`;
        const count = { table, sqlite: expected.get(table) ?? 0, postgres: row?.n ?? 0 };
        counts.push(count);
        progress(count);
      };
      for (const p of plans) {
        await copyTable(source, t, p);
        for (const { column, sequence } of p.sequences) {
          await t`SELECT setval(${sequence}, m, true) FROM (SELECT max(${t(column)}) AS m FROM ${t(p.table)}) AS x WHERE m IS NOT NULL`;
        }
        await verify(p.table);
      }
      if (tables.has(SEARCH_TABLE)) {
        await rebuildSearch(source, t);
        await verify(SEARCH_TABLE);
      }
      if (counts.some((c) => c.sqlite !== c.postgres)) throw new CopyVerificationError(counts);
      return counts;
    })) as TableCount[];
  } finally {
    source.prepare('COMMIT').run();
  }
}
