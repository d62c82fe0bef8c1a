/**
 * Versioned schema migrations of the PostgreSQL database, recorded in the database itself:
 * `schema_migrations(version, name, applied_at)`, one row per applied migration.
 *
 * `migratePg(sql)` applies the missing ones in order, all in one transaction under a transaction-scoped advisory
 * lock (`pg_advisory_xact_lock`), so hosts starting together against one database migrate it once: the others wait
 * for the lock, then find nothing left to do. A database whose newest version is beyond this build's list is refused
 * (PgSchemaError), untouched, and so is one that holds tables but no `schema_migrations` (another application's) — as openDatabase refuses a newer SQLite file (service/db/database.ts).
 *
 * To add a migration: a new file `schema/00N-<name>.ts` exporting its SQL, appended to PG_MIGRATIONS. Never edit or
 * reorder a shipped one.
 */
import type { Sql } from './client.ts';
import { coreSchema } from './schema/001-core.ts';
import { messagesSchema } from './schema/002-messages.ts';

export interface PgMigration {
  /** 1, 2, …: its position in PG_MIGRATIONS. */
  version: number;
  /** Short name, recorded in schema_migrations. */
  name: string;
  /** SQL run as one multi-statement script (no parameters). */
  sql: string;
}

/** Every migration of this build, in order (version = index + 1). */
export const PG_MIGRATIONS: readonly PgMigration[] = [
  { version: 1, name: 'core', sql: coreSchema },
  { version: 2, name: 'messages', sql: messagesSchema },
];

/** The database cannot be used by this build (its schema is newer, or not Switchboard's). */
export class PgSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PgSchemaError';
  }
}

/** Key of the advisory lock taken while migrating ("SWBD" as a 32-bit integer, the SQLite file's application_id). */
const MIGRATION_LOCK_KEY = 0x53574244;

/** A database opened as an existing one (openPgStore `existingSchema`) holds no Switchboard schema. */
export class PgSchemaMissingError extends Error {
  override name = 'PgSchemaMissingError';
}

/** Whether the database behind `sql` holds Switchboard's schema (its `schema_migrations` table). */
export async function hasPgSchema(sql: Sql): Promise<boolean> {
  const [row] = await sql<Array<{ known: boolean }>>`SELECT to_regclass('schema_migrations') IS NOT NULL AS known`;
  return row?.known === true;
}

/**
 * Brings the schema of the database behind `sql` up to date; returns the versions it applied (empty when none).
 * @param migrations the list to apply (PG_MIGRATIONS; tests pass their own)
 * @throws PgSchemaError when the database holds a version newer than `migrations` knows
 */
export async function migratePg(sql: Sql, migrations: readonly PgMigration[] = PG_MIGRATIONS): Promise<number[]> {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration ${m.name} has version ${m.version}, expected ${i + 1}`);
  });
  return sql.begin(async (t) => {
    await t`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    const [found] = await t<Array<{ known: boolean; tables: number }>>`
      SELECT to_regclass('schema_migrations') IS NOT NULL AS known,
             (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()) AS tables`;
    if (found && !found.known && found.tables > 0) {
      throw new PgSchemaError(`the database holds ${found.tables} tables but no schema_migrations: not Switchboard's`);
    }
    await t`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    const [row] = await t<Array<{ v: number | null }>>`SELECT max(version) AS v FROM schema_migrations`;
    const current = row?.v ?? 0;
    if (current > migrations.length) {
      throw new PgSchemaError(
        `the database's schema version ${current} is newer than this build supports (${migrations.length})`,
      );
    }
    const applied: number[] = [];
    for (const m of migrations.slice(current)) {
      await t.unsafe(m.sql);
      await t`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
    return applied;
  });
}
