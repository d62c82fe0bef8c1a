/**
 * The PostgreSQL connection pool (the `postgres` driver, porsager/postgres.js): `openPg(url)` opens a pool with the
 * settings every part of the service shares, `isPostgresUrl` tells a `postgres://` URL from a data dir path.
 *
 * Types: `int8`/`bigint` columns (seqs, ms timestamps, `count(*)`) are read as JS numbers, not strings — every such
 * value the service stores is far below 2^53 (a seq, a ms time); a value past Number.MAX_SAFE_INTEGER throws rather
 * than lose digits. `numeric` is not used by the schema. Server notices (e.g. "relation already exists, skipping")
 * are dropped. See docs/architecture.md § Storage engines.
 */
import postgres from 'postgres';
import { isPostgresUrl } from '../../config/database-url.ts';

export { isPostgresUrl };

/** The pool (a `postgres` Sql instance); `Sql.begin` gives a TransactionSql. */
export type Sql = postgres.Sql;

export interface PgOptions {
  /** Connections in the pool (10). The group commit uses one at a time; API transactions and reads use the rest. */
  max?: number;
  /** Seconds an idle connection stays open (30; 0 = forever). */
  idleTimeoutSeconds?: number;
  /** Seconds to wait for a connection (10). */
  connectTimeoutSeconds?: number;
  /** `application_name` the server shows in pg_stat_activity ('switchboard'). */
  applicationName?: string;
}


/** int8 → number; throws for a value that a double cannot hold exactly. */
function parseInt8(raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${raw} is beyond Number.MAX_SAFE_INTEGER`);
  return n;
}

/**
 * Opens a pool on `url` (connections are made lazily, on the first query). Close it with `sql.end()`.
 * @throws TypeError when `url` is not a postgres URL.
 */
export function openPg(url: string, opts: PgOptions = {}): Sql {
  if (!isPostgresUrl(url)) throw new TypeError(`not a PostgreSQL URL: ${url}`);
  return postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: opts.idleTimeoutSeconds ?? 30,
    connect_timeout: opts.connectTimeoutSeconds ?? 10,
    onnotice: () => undefined,
    connection: { application_name: opts.applicationName ?? 'switchboard' },
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: parseInt8 },
    },
  }) as unknown as Sql;
}
