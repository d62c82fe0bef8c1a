/**
 * `switchboard migrate --from DATA_DIR --to postgres://…`: copies a desktop data dir's SQLite database into an empty
 * PostgreSQL database (issue 26 item 4; docs/scaling.md § Moving a desktop data dir to PostgreSQL), the sessions'
 * auth state included, so the same linked connections can come online from a server without a new scan.
 *
 * - The source is left untouched: its SQLite file is opened read-only, and the data dir's lock
 *   (config/data-dir-lock.ts) is held while copying — a data dir a running `serve` holds is refused ("stop the
 *   service first"), and a `serve` started meanwhile is refused in turn.
 * - The target must hold no rows (any table). Its schema is created or brought up to date (pg/migrations.ts) and
 *   the rows copied in one transaction, each table counted before it commits (pg/copy-from-sqlite.ts): all or
 *   nothing, the schema included.
 * - The target's password is never printed (config/database-url.ts): messages show the URL with `***`.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { causeWithoutPassword, databaseRefusal, parseDatabaseUrl, type DatabaseUrl } from '../config/database-url.ts';
import { DataDirInUseError, lockDataDir, StartupError } from '../config/data-dir-lock.ts';
import { migrations } from '../db/migrations.ts';
import { openPg, type Sql } from '../db/pg/client.ts';
import {
  CopySourceError,
  CopyVerificationError,
  TargetNotEmptyError,
  COPIED_TABLES,
  copySqliteToPg,
  firstNonEmptyTable,
  type CopyProgress,
  type TableCount,
} from '../db/pg/copy-from-sqlite.ts';
import { PgSchemaError } from '../db/pg/migrations.ts';
import { isPgStorageError } from '../db/pg/store.ts';
import { CommandError, parseCommandLine, UsageError } from './args.ts';

export const MIGRATE_USAGE = `Usage:
  switchboard migrate --from DATA_DIR --to postgres://USER:PASSWORD@HOST:5432/DATABASE

Copies the data dir's SQLite database (DATA_DIR/switchboard.db) into an empty PostgreSQL database: users, tokens,
connections with their sessions' auth state (no new scan), chats, messages, contacts, groups, the event log,
webhooks and their deliveries, billing and settings; the search index is rebuilt on PostgreSQL. One transaction:
every table's row count is checked before it commits, and on any error nothing is written.

The source is not changed (opened read-only). Stop the service that uses DATA_DIR first: a data dir in use is
refused. A target that holds any row is refused. Media files stay in DATA_DIR/media (see --media-dir).

Options:
  --from DATA_DIR  The desktop data dir to copy (the folder holding switchboard.db)
  --to URL         The PostgreSQL database (env SWITCHBOARD_DATABASE_URL); its password is never shown. A password
                   can also come from the PGPASSWORD variable instead of the URL
  -h, --help       Show this help
`;

/** What `migrate` adds to its report while `serve --database` refuses PostgreSQL (service/data-plane.ts). */
export const SERVE_ON_POSTGRES_NOTE =
  'Note: serving from PostgreSQL (serve --database) lands with the rest of issue 26; this build still serves only ' +
  'the SQLite file. Until then keep serving from the data dir, and migrate again into an empty database when it does.';

/** The SQLite file's application_id (db/database.ts): "SWBD". */
const APPLICATION_ID = 0x53574244;

/**
 * Opens `file` read-only and checks it is a Switchboard database at this build's schema version.
 * @throws CommandError when it is not
 */
function openSource(file: string): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true, timeout: 5000 });
  } catch (err) {
    throw new CommandError(`cannot open ${file}: ${(err as Error).message}`);
  }
  try {
    const appId = db.pragma('application_id', { simple: true }) as number;
    const version = db.pragma('user_version', { simple: true }) as number;
    if (appId !== APPLICATION_ID) throw new CommandError(`${file} is not a Switchboard database`);
    if (version > migrations.length) {
      throw new CommandError(`${file} has schema version ${version}, newer than this build supports (${migrations.length}): use a newer Switchboard`);
    }
    if (version < migrations.length) {
      throw new CommandError(
        `${file} has schema version ${version}, older than this build's (${migrations.length}): start this version's ` +
          `service on it once (or run 'switchboard user list --data-dir ${path.dirname(file)}'), then migrate`,
      );
    }
    return db;
  } catch (err) {
    db.close();
    if (err instanceof CommandError) throw err;
    throw new CommandError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/**
 * Takes the data dir's lock, so no service runs on it while it is copied.
 * @throws StartupError "stop the service first" when a running service holds it
 */
function lockSource(dir: string): { release(): void } {
  try {
    return lockDataDir(dir);
  } catch (err) {
    if (err instanceof DataDirInUseError) {
      throw new StartupError(
        `data dir ${dir} is in use by a running Switchboard service${err.pid ? ` (PID ${err.pid})` : ''}: stop the service first, then run migrate again`,
      );
    }
    throw err;
  }
}

/** An error of the PostgreSQL side as one line for the user (password masked); nothing was written. */
function targetFailure(err: unknown, target: DatabaseUrl): Error {
  if (err instanceof TargetNotEmptyError) {
    return new CommandError(`refusing to migrate into ${target.display}: ${err.message}; nothing was written`);
  }
  if (err instanceof CopyVerificationError || err instanceof CopySourceError || err instanceof PgSchemaError) {
    return new CommandError(`cannot migrate into ${target.display}: ${err.message}; nothing was written`);
  }
  // Unreachable, refused sign-in (SQLSTATE 28…), no such database (3D000): the database cannot be used at all.
  const code = (err as { code?: unknown } | null)?.code;
  if (isPgStorageError(err) || (typeof code === 'string' && /^(28|3D)/.test(code))) return databaseRefusal(err, target);
  return new CommandError(`migrate failed, nothing was written to ${target.display}: ${causeWithoutPassword(err, target)}`);
}

/** `n` with thousands separators (1,234,567). */
const grouped = (n: number) => n.toLocaleString('en-US');

/** Width of the count table's first column: the longest table name. */
const NAME_WIDTH = Math.max(...[...COPIED_TABLES, 'message_search'].map((t) => t.length));
/** Width of a count column (up to 999,999,999 rows). */
const COUNT_WIDTH = 11;

/**
 * One line of the report's count table (`table  sqlite  postgres`, counts right-aligned): printed as each table is
 * copied and counted, so a long copy shows its progress.
 */
function countLine(table: string, sqlite: string, postgres: string): string {
  return `${table.padEnd(NAME_WIDTH)}  ${sqlite.padStart(COUNT_WIDTH)}  ${postgres.padStart(COUNT_WIDTH)}\n`;
}

/** A shell word: quoted when it holds anything beyond safe characters. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./*-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/** Copies the source into the target (see the module comment); resolves with the verified counts. */
async function copy(
  source: Database.Database,
  sql: Sql,
  target: DatabaseUrl,
  onStart: () => void,
  progress: CopyProgress,
): Promise<TableCount[]> {
  try {
    // Checked before the schema is touched, and again inside the copy's transaction.
    const occupied = await firstNonEmptyTable(sql);
    if (occupied) throw new TargetNotEmptyError(occupied);
    onStart();
    return await copySqliteToPg(source, sql, progress);
  } catch (err) {
    if (err instanceof CommandError) throw err;
    throw targetFailure(err, target);
  }
}

/** `switchboard migrate`: resolves with the exit code. */
export async function migrateCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseCommandLine('migrate', argv, { from: { type: 'string' }, to: { type: 'string' } });
  if (values.help) {
    process.stdout.write(MIGRATE_USAGE);
    return 0;
  }
  if (values.from === undefined || values.from.trim() === '') throw new UsageError('--from DATA_DIR is required', 'migrate');
  const toValue = values.to ?? env.SWITCHBOARD_DATABASE_URL;
  if (toValue === undefined || toValue.trim() === '') {
    throw new UsageError('--to postgres://… is required (or SWITCHBOARD_DATABASE_URL)', 'migrate');
  }
  const target = parseDatabaseUrl(toValue, values.to !== undefined ? '--to' : 'SWITCHBOARD_DATABASE_URL');
  const dir = path.resolve(values.from);
  const file = path.join(dir, 'switchboard.db');
  if (!fs.existsSync(file)) throw new CommandError(`no Switchboard database at ${file}`);

  const started = Date.now();
  const lock = lockSource(dir);
  try {
    const source = openSource(file);
    try {
      const sql = openPg(target.reveal(), { max: 2, applicationName: 'switchboard migrate', idleTimeoutSeconds: 0 });
      let counts: TableCount[];
      try {
        counts = await copy(
          source,
          sql,
          target,
          () => process.stdout.write(`Copying ${file} into ${target.display}\n\n${countLine('table', 'sqlite', 'postgres')}`),
          (c) => process.stdout.write(countLine(c.table, grouped(c.sqlite), grouped(c.postgres))),
        );
      } finally {
        await sql.end({ timeout: 5 }).catch(() => undefined);
      }
      const rows = counts.reduce((n, c) => n + c.postgres, 0);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(
        `\nCopied ${counts.length} tables, ${grouped(rows)} rows in ${seconds} s; every count matches. ` +
          `${file} was not changed.\n` +
          `Next: switchboard serve --database ${shellWord(target.display)} --media-dir ${shellWord(path.join(dir, 'media'))}\n` +
          `  (media files stay in ${path.join(dir, 'media')}: copy that folder to the server and point --media-dir at it)\n` +
          `${SERVE_ON_POSTGRES_NOTE}\n`,
      );
      return 0;
    } finally {
      source.close();
    }
  } finally {
    lock.release();
  }
}
