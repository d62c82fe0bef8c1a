/**
 * A PostgreSQL database of its own for each test: `createTestDatabase()` creates `sb_<run>_<random>` on the
 * project's PostgreSQL (127.0.0.1:5432, user `postgres`, trust auth; override the server with
 * SWITCHBOARD_TEST_PG_URL, a URL of its maintenance database) and `drop()` removes it, ending any session still on
 * it (a killed child's, a leaked pool's). The global setup `pg-databases.setup.ts` drops whatever a run left behind
 * (every `sb_<run>_*` of this run), so a crashed test never leaves a database.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openPg, type Sql } from '../../service/db/pg/client.ts';

/** The maintenance database's URL (databases are created and dropped through it). */
export const PG_ADMIN_URL = process.env.SWITCHBOARD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** This run's prefix of database names: `sb_<run id>_` (set by pg-databases.setup.ts; per process otherwise). */
export function runPrefix(): string {
  process.env.SWITCHBOARD_TEST_PG_RUN ??= randomBytes(4).toString('hex');
  return `sb_${process.env.SWITCHBOARD_TEST_PG_RUN}_`;
}

/** `adminUrl` (PG_ADMIN_URL) with its database replaced by `name`. */
export function urlOf(name: string, adminUrl = PG_ADMIN_URL): string {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export interface TestDatabase {
  /** Its name, `sb_<run>_<random>`. */
  name: string;
  /** A postgres:// URL of it. */
  url: string;
  /** A pool on it (openPg's settings, 4 connections), ended by `drop()`. */
  sql: Sql;
  /** Ends `sql`, terminates every other session on the database, and drops it. Idempotent. */
  drop(): Promise<void>;
}

const admin = (adminUrl = PG_ADMIN_URL) => postgres(adminUrl, { max: 1, onnotice: () => undefined, idle_timeout: 1 });

/** Drops `name` (ending every session on it); no error when it does not exist. */
export async function dropDatabase(name: string, adminUrl = PG_ADMIN_URL): Promise<void> {
  const a = admin(adminUrl);
  try {
    await a.unsafe(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '')}" WITH (FORCE)`);
  } finally {
    await a.end({ timeout: 1 });
  }
}

/**
 * Creates an empty database of this run (see the module comment) on the server of `adminUrl`, a URL of its
 * maintenance database (PG_ADMIN_URL; the store benchmark passes its `--database`).
 */
export async function createTestDatabase(adminUrl = PG_ADMIN_URL): Promise<TestDatabase> {
  const name = `${runPrefix()}${randomBytes(6).toString('hex')}`;
  const a = admin(adminUrl);
  try {
    await a.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await a.end({ timeout: 1 });
  }
  const url = urlOf(name, adminUrl);
  const sql = openPg(url, { max: 4 });
  let dropped: Promise<void> | undefined;
  return {
    name,
    url,
    sql,
    drop() {
      dropped ??= (async () => {
        await sql.end({ timeout: 1 }).catch(() => undefined);
        await dropDatabase(name, adminUrl);
      })();
      return dropped;
    },
  };
}

/** Names of the databases whose name starts with `prefix` (the run's leftovers). */
export async function databasesWithPrefix(prefix: string): Promise<string[]> {
  const a = admin();
  try {
    const rows = await a<Array<{ datname: string }>>`SELECT datname FROM pg_database WHERE starts_with(datname, ${prefix})`;
    return rows.map((r) => r.datname);
  } finally {
    await a.end({ timeout: 1 });
  }
}
