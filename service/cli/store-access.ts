/**
 * How the CLI's commands on the store (`token`, `user`) find it: `--data-dir` / `--sandbox` select the data dir, and
 * `--database URL` (env SWITCHBOARD_DATABASE_URL) a PostgreSQL database instead of its SQLite file
 * (config/settings-table.ts). A database that cannot be used is one line naming it without its password
 * (config/database-url.ts).
 */
import { databaseRefusal } from '../config/database-url.ts';
import { resolveDataDir, resolveDatabase, resolveSandboxMode } from '../config/service-config.ts';
import { NoDatabaseError, openToolStore } from '../data-plane.ts';
import type { Repos, Store } from '../db/store-api.ts';
import type { User } from '../db/users.ts';
import { CommandError } from './args.ts';

/** The parseArgs options every store command takes. */
export const STORE_OPTIONS = {
  'data-dir': { type: 'string' },
  sandbox: { type: 'boolean' },
  database: { type: 'string' },
} as const;

/** Their lines in a command's `--help`. */
export const STORE_OPTIONS_HELP = `  --data-dir DIR   Data directory (env SWITCHBOARD_DATA_DIR; default: the platform's data folder)
  --sandbox        Use the sandbox data directory (<default>/sandbox) instead of the live one
  --database URL   A postgres:// database instead of the data dir's SQLite file (env SWITCHBOARD_DATABASE_URL);
                   its schema is created when missing (docs/scaling.md)
`;

/** Parsed values of STORE_OPTIONS. */
export interface StoreSelection {
  'data-dir'?: string;
  sandbox?: boolean;
  database?: string;
}

/**
 * Opens the asynchronous Store the flags (and SWITCHBOARD_* variables) select; `mustExist` refuses to create a new
 * database (a missing SQLite file, a PostgreSQL database without Switchboard's schema). Close it with `close()`.
 * @throws ConfigError for a bad value; CommandError when `mustExist` and there is no database; StartupError when the
 *   database cannot be used (unreachable, refused, a schema this build cannot use), its URL's password masked
 */
export async function openSelectedStore(values: StoreSelection, mustExist: boolean, env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const dataDir = resolveDataDir({ dataDir: values['data-dir'] }, resolveSandboxMode(values, env), env);
  const database = resolveDatabase({ database: values.database }, env);
  try {
    return await openToolStore({ dataDir, mustExist, ...(database && { database: database.reveal() }) });
  } catch (err) {
    if (err instanceof NoDatabaseError) throw new CommandError(database ? `no Switchboard database at ${database.display}` : err.message);
    if (database) throw databaseRefusal(err, database);
    throw err;
  }
}

/** Runs `fn` on the selected store and closes it (after `fn` settles, whatever it did). */
export async function withSelectedStore<T>(values: StoreSelection, mustExist: boolean, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openSelectedStore(values, mustExist);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A user named on the command line: a LOCAL user by name, or any user by id. */
export type UserSelector = { name: string } | { id: string };

/**
 * The user a selector names: `{ name }` a LOCAL user only (created when `create`), `{ id }` any user.
 * @throws CommandError when there is none
 */
export async function findUser(repos: Pick<Repos, 'users'>, selector: UserSelector, create: boolean): Promise<User> {
  if ('id' in selector) {
    const user = await repos.users.get(selector.id);
    if (!user) throw new CommandError(`no user with id ${selector.id}`);
    return user;
  }
  const user = create ? await repos.users.ensure(selector.name) : await repos.users.byLocalName(selector.name);
  if (!user) throw new CommandError(`no local user named ${JSON.stringify(selector.name)}`);
  return user;
}

