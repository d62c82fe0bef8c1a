/**
 * What the message-side PostgreSQL repositories run on: the core repositories' scope (scope.ts: the pool or the
 * running transaction) plus the media URLs messages are read with. `atomically` runs a repository method's several
 * statements as one: in a transaction of its own on the pool; inside a transaction directly (the caller's
 * transaction, or its group-commit unit's savepoint, already rolls them back together). `pgText` stores free text
 * as SQLite would read it back.
 */
import type postgres from 'postgres';
import type { MediaUrls } from '../../media-url.ts';
import type { PgScope, Queryable } from './scope.ts';

export interface MessageScope extends PgScope {
  /** The service's media URL base (a default `/api` base when absent: a store opened without an API). */
  mediaUrls?: MediaUrls;
}

/** Runs `fn` with its statements committed together (see the module comment). */
export function atomically<T>(scope: PgScope, fn: (sql: Queryable) => Promise<T>): Promise<T> {
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
  if (s === null || !(s.includes('\u0000') || /[\ud800-\udfff]/.test(s))) return s;
  return s
    .replaceAll('\u0000', '\ufffd')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd\ufffd\ufffd');
}
