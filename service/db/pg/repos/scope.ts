/**
 * What a PostgreSQL repository runs its queries on: the pool (outside any transaction, each statement commits on
 * its own) or the running transaction (a `tx`, or one unit of the group commit, in its savepoint). Every PG
 * repository is a factory `(scope: PgScope) => { …async methods }` matching `Async<>` of its SQLite twin
 * (service/db/store-api.ts).
 */
import type postgres from 'postgres';

/** The pool or a transaction: anything that runs tagged-template queries. */
export type Queryable = postgres.Sql | postgres.TransactionSql;

export interface PgScope {
  /** Where queries run. */
  sql: Queryable;
  /** True inside a transaction (`sql` is a TransactionSql). */
  inTx: boolean;
}

/**
 * Runs `fn` atomically: in a transaction of its own on the pool, or in a savepoint of the running transaction (as
 * SQLite's `inTransaction` nests) — for a repository method that writes several statements (a key batch, claims).
 */
export function atomic<T>(scope: PgScope, fn: (sql: postgres.TransactionSql) => Promise<T>): Promise<T> {
  const run = scope.inTx
    ? (scope.sql as postgres.TransactionSql).savepoint((s) => fn(s))
    : (scope.sql as postgres.Sql).begin((s) => fn(s));
  return run as Promise<T>;
}
