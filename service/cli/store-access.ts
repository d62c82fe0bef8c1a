/**
 * How the CLI's commands on the store (`token`, `user`) find it: `--data-dir` / `--sandbox` select the data dir, and
 * `--database URL` (env SWITCHBOARD_DATABASE_URL) a database instead of its SQLite file, like `serve`
 * (config/settings-table.ts). In this build a database URL is refused with one line naming it without its password
 * (config/database-url.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { databaseRefusal } from '../config/database-url.ts';
import { resolveDataDir, resolveDatabase, resolveSandboxMode } from '../config/service-config.ts';
import { openDataPlane, type DataPlane } from '../data-plane.ts';
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
                   PostgreSQL support is being built (issue 26): this build accepts only the default SQLite
`;

/** Parsed values of STORE_OPTIONS. */
export interface StoreSelection {
  'data-dir'?: string;
  sandbox?: boolean;
  database?: string;
}

/**
 * Opens the data plane the flags (and SWITCHBOARD_* variables) select, role `tool`; `mustExist` refuses to create a
 * new SQLite file.
 * @throws ConfigError for a bad value; CommandError when `mustExist` and there is no database; StartupError when the
 *   database URL is refused (this build)
 */
export function openSelectedPlane(values: StoreSelection, mustExist: boolean, env: NodeJS.ProcessEnv = process.env): DataPlane {
  const dataDir = resolveDataDir({ dataDir: values['data-dir'] }, resolveSandboxMode(values, env), env);
  const database = resolveDatabase({ database: values.database }, env);
  if (database) {
    try {
      return openDataPlane({ dataDir, role: 'tool', database: database.reveal() });
    } catch (err) {
      throw databaseRefusal(err, database);
    }
  }
  const file = path.join(dataDir, 'switchboard.db');
  if (mustExist && !fs.existsSync(file)) throw new CommandError(`no Switchboard database at ${file}`);
  return openDataPlane({ dataDir, role: 'tool' });
}
