/**
 * `switchboard user list|create NAME|disable NAME|enable NAME`: user management straight on the database (WAL mode,
 * so it works while `serve` runs). A disabled user's API tokens and JWTs answer 401 at once; its open WebSocket
 * streams are closed (4401) within the service's revocation sweep (about 2 s). Nothing is deleted.
 */
import { resolveDataDir, resolveSandboxMode } from '../config/service-config.ts';
import { openStore, type Store } from '../db/store.ts';
import { CommandError, parseCommandLine, UsageError } from './args.ts';
import { formatTable } from './token.ts';
import fs from 'node:fs';
import path from 'node:path';

export const USER_USAGE = `Usage:
  switchboard user list             List users (name, id, status, identity-provider subject)
  switchboard user create NAME      Create a user (then: switchboard token create --user NAME)
  switchboard user disable NAME     Disable a user: its tokens and JWTs stop working (401)
  switchboard user enable NAME      Enable a disabled user again

Options (all subcommands):
  --data-dir DIR   Data directory (env SWITCHBOARD_DATA_DIR; default: the platform's data folder)
  --sandbox        Use the sandbox data directory (<default>/sandbox) instead of the live one
  -h, --help       Show this help
`;

const COMMON = { 'data-dir': { type: 'string' }, sandbox: { type: 'boolean' } } as const;

function withStore<T>(values: { 'data-dir'?: string; sandbox?: boolean }, mustExist: boolean, fn: (s: Store) => T): T {
  const dataDir = resolveDataDir({ dataDir: values['data-dir'] }, resolveSandboxMode(values));
  const file = path.join(dataDir, 'switchboard.db');
  if (mustExist && !fs.existsSync(file)) throw new CommandError(`no Switchboard database at ${file}`);
  const store = openStore(dataDir);
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

function oneName(command: string, argv: string[]) {
  const parsed = parseCommandLine(`user ${command}`, argv, COMMON, true);
  if (parsed.values.help) return { ...parsed, name: undefined };
  const [name, ...extra] = parsed.positionals;
  if (!name || extra.length > 0) throw new UsageError('expected exactly one user NAME', `user ${command}`);
  if (name.length > 200 || hasControlCharacter(name)) throw new UsageError('invalid user NAME', `user ${command}`);
  return { ...parsed, name };
}

/** True when `text` contains a C0 control character (U+0000–U+001F). */
function hasControlCharacter(text: string): boolean {
  return [...text].some((ch) => ch.charCodeAt(0) < 0x20);
}

function help(): number {
  process.stdout.write(USER_USAGE);
  return 0;
}

function setDisabled(argv: string[], disabled: boolean): number {
  const { values, name } = oneName(disabled ? 'disable' : 'enable', argv);
  if (name === undefined) return help();
  withStore(values, true, (store) => {
    const user = store.users.byName(name);
    if (!user) throw new CommandError(`no user named ${JSON.stringify(name)}`);
    store.users.setDisabled(user.id, disabled);
  });
  process.stdout.write(`${disabled ? 'disabled' : 'enabled'} ${name}\n`);
  return 0;
}

export async function userCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'list': {
      const { values } = parseCommandLine('user list', rest, COMMON);
      if (values.help) return help();
      const users = withStore(values, true, (store) => store.users.list());
      const rows = users.map((u) => [u.name, u.id, u.disabled ? 'disabled' : 'active', u.subject ?? '-', u.createdAt]);
      process.stdout.write(formatTable(['NAME', 'ID', 'STATUS', 'SUBJECT', 'CREATED'], rows));
      return 0;
    }
    case 'create': {
      const { values, name } = oneName('create', rest);
      if (name === undefined) return help();
      const user = withStore(values, false, (store) => {
        if (store.users.byName(name)) throw new CommandError(`a user named ${JSON.stringify(name)} already exists`);
        return store.users.create(name);
      });
      process.stdout.write(`${user.id}\n`);
      return 0;
    }
    case 'disable':
      return setDisabled(rest, true);
    case 'enable':
      return setDisabled(rest, false);
    case '-h':
    case '--help':
    case 'help':
      return help();
    case undefined:
      throw new UsageError('missing subcommand (list, create, disable or enable)', 'user');
    default:
      throw new UsageError(`unknown subcommand ${JSON.stringify(sub)} (expected list, create, disable or enable)`, 'user');
  }
}
