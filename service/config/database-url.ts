/**
 * The `--database` setting (`SWITCHBOARD_DATABASE_URL`): a `postgres://` (or `postgresql://`) URL naming the database
 * the data plane should use instead of the data dir's SQLite file (issue 26; docs/settings.md § The database). Such
 * a URL may hold a password, so the value lives in a `DatabaseUrl` that prints, serialises and inspects as the URL
 * with its password replaced by `***` (`postgres://app:***@db.example.com/switchboard`): a log line, an error
 * message or an API answer that picks it up by accident shows no password. Only `reveal()` returns the URL, for the
 * code that opens the database (service/data-plane.ts `openDataPlane({ database })`).
 */
import { inspect } from 'node:util';
import { ConfigError, StartupError } from './config-error.ts';

/** What the password of a URL is replaced by wherever the URL is shown. */
export const PASSWORD_MASK = '***';

/**
 * `url` with its password (in the user part or a `password=` parameter) replaced by `***`; text that is not a URL comes back as `[redacted]` (it may be
 * a password pasted on its own).
 */
export function redactDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '[redacted]';
  }
  if (parsed.password) parsed.password = PASSWORD_MASK;
  // libpq also takes the password as a parameter (`?password=…`).
  for (const key of [...parsed.searchParams.keys()])
    if (key.toLowerCase() === 'password') parsed.searchParams.set(key, PASSWORD_MASK);
  // `new URL` percent-encodes the mask; the display shows it as written.
  return parsed.href.replaceAll(encodeURIComponent(PASSWORD_MASK), PASSWORD_MASK);
}

/** A database URL that never shows its password except through `reveal()`. */
export class DatabaseUrl {
  readonly #url: string;
  /** The URL with its password masked: what logs, messages and `--help`-like output show. */
  readonly display: string;

  constructor(url: string) {
    this.#url = url;
    this.display = redactDatabaseUrl(url);
  }

  /** The URL itself, password included: only for opening the database. Never log or return it. */
  reveal(): string {
    return this.#url;
  }

  toString(): string {
    return this.display;
  }

  toJSON(): string {
    return this.display;
  }

  [inspect.custom](): string {
    return this.display;
  }
}

/** Whether `s` is a PostgreSQL connection URL (`postgres://` or `postgresql://`), not a path. */
export function isPostgresUrl(s: string): boolean {
  return /^postgres(ql)?:\/\//i.test(s);
}

/**
 * The value of `--database` / `SWITCHBOARD_DATABASE_URL` (`source` names which, for messages): a `postgres://` or
 * `postgresql://` URL with a host. The value is never repeated in a message (it may hold a password).
 * @throws ConfigError for anything else
 */
export function parseDatabaseUrl(value: string, source: string): DatabaseUrl {
  const text = value.trim();
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || !/^postgres(ql)?:$/i.test(url.protocol) || !url.hostname) {
    throw new ConfigError(
      `invalid ${source} value: expected a postgres:// URL such as postgres://USER:PASSWORD@HOST:5432/DATABASE ` +
        '(leave it unset for the data dir\'s SQLite file)',
    );
  }
  return new DatabaseUrl(text);
}

/**
 * The one line to show when the data plane cannot open `database` (in this build `openDataPlane` refuses every URL:
 * 'PostgreSQL is not available in this build yet'): a StartupError naming the masked URL and the cause, with the
 * password scrubbed from the cause as well.
 */
export function databaseRefusal(err: unknown, database: DatabaseUrl): StartupError {
  return new StartupError(`cannot use database ${database.display}: ${causeWithoutPassword(err, database)}`);
}

/** The first line of `err`'s message with the password of `database` (as written and decoded) replaced by `***`. */
export function causeWithoutPassword(err: unknown, database: DatabaseUrl): string {
  let why = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  for (const secret of passwordsOf(database.reveal())) why = why.replaceAll(secret, PASSWORD_MASK);
  return why;
}

/** The password of `url` as written and decoded (empty ones left out). */
function passwordsOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    const found = [parsed.password, ...[...parsed.searchParams].filter(([k]) => k.toLowerCase() === 'password').map(([, v]) => v)];
    return found.flatMap((p) => [p, safeDecode(p)]).filter((p) => p.length > 0);
  } catch {
    return [];
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
