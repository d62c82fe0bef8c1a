/**
 * What the message-side PostgreSQL repositories run their queries on (the shape of the core repositories' scope):
 * the pool, where each statement commits on its own, or the running transaction. `atomically` runs a repository
 * method's several statements as one: in a transaction of its own on the pool; inside a transaction directly (the
 * caller's transaction, or its group-commit unit's savepoint, already rolls them back together). `pgText` stores
 * free text as SQLite would read it back.
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

/**
 * Free text as SQLite gives it back, for a PostgreSQL text column: U+0000 (which PostgreSQL text cannot hold) as
 * U+FFFD, and an unpaired surrogate as three U+FFFD (SQLite keeps its three UTF-8-like bytes and reads them back as
 * three invalid bytes; PostgreSQL would get one U+FFFD from the driver).
 */
export function pgText(s: string): string;
export function pgText(s: string | null): string | null;
export function pgText(s: string | null): string | null {
  if (s === null || !/[\u0000\ud800-\udfff]/.test(s)) return s;
  return s
    .replaceAll('\u0000', '\ufffd')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd\ufffd\ufffd');
}
