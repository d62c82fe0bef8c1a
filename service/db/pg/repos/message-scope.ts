/**
 * What the message-side PostgreSQL repositories run their queries on (the shape of the core repositories' scope):
 * the pool, where each statement commits on its own, or the running transaction. `atomically` runs a repository
 * method's several statements as one: in a transaction of its own on the pool; inside a transaction directly (the
 * caller's transaction, or its group-commit unit's savepoint, already rolls them back together).
 */
import type postgres from 'postgres';

/** The pool or a transaction: anything that runs tagged-template queries. */
export type Queryable = postgres.Sql | postgres.TransactionSql;

export interface MessageScope {
  /** Where queries run. */
  sql: Queryable;
  /** True inside a transaction (`sql` is a TransactionSql). */
  inTx: boolean;
}

/** Runs `fn` with its statements committed together (see the module comment). */
export function atomically<T>(scope: MessageScope, fn: (sql: Queryable) => Promise<T>): Promise<T> {
  if (scope.inTx) return fn(scope.sql);
  return (scope.sql as postgres.Sql).begin((t) => fn(t)) as Promise<T>;
}
