/**
 * `switchboard token create|list|revoke`: API token management straight on the database (WAL mode, so it
 * works while `serve` runs). `create` prints only the new token on stdout, for scripts to capture.
 */
import fs from 'node:fs';
import path from 'node:path';
import { issueToken } from '../auth/api-tokens.ts';
import { resolveDataDir, resolveSandboxMode } from '../config/service-config.ts';
import { openStore, type Store } from '../db/store.ts';
import { CommandError, parseCommandLine, UsageError } from './args.ts';

export const TOKEN_USAGE = `Usage:
  switchboard token create --user NAME [--name LABEL]   Create a token (and the user if missing); prints the token
  switchboard token list --user NAME                    List the user's active tokens
  switchboard token revoke ID                           Revoke a token by id

Options (all subcommands):
  --data-dir DIR   Data directory (env SWITCHBOARD_DATA_DIR; default: the platform's data folder)
  --sandbox        Use the sandbox data directory (<default>/sandbox) instead of the live one
  -h, --help       Show this help
`;

const COMMON = { 'data-dir': { type: 'string' }, sandbox: { type: 'boolean' } } as const;

/** Opens the database of the data dir the flags select; `mustExist` refuses to create a new one. */
function openSelectedStore(values: { 'data-dir'?: string; sandbox?: boolean }, mustExist: boolean): Store {
  const dataDir = resolveDataDir({ dataDir: values['data-dir'] }, resolveSandboxMode(values));
  const file = path.join(dataDir, 'switchboard.db');
  if (mustExist && !fs.existsSync(file)) throw new CommandError(`no Switchboard database at ${file}`);
  return openStore(dataDir);
}

function withStore<T>(store: Store, fn: (store: Store) => T): T {
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

function requireUser(user: string | undefined, command: string): string {
  if (!user) throw new UsageError('--user NAME is required', command);
  return user;
}

function create(argv: string[]): number {
  const { values } = parseCommandLine('token create', argv, {
    ...COMMON,
    user: { type: 'string' },
    name: { type: 'string' },
  });
  if (values.help) return help();
  const userName = requireUser(values.user, 'token create');
  const token = withStore(openSelectedStore(values, false), (store) =>
    store.tx(() => issueToken(store.tokens, store.users.ensure(userName).id, values.name ?? 'cli').token),
  );
  process.stdout.write(`${token}\n`);
  return 0;
}

function list(argv: string[]): number {
  const { values } = parseCommandLine('token list', argv, { ...COMMON, user: { type: 'string' } });
  if (values.help) return help();
  const userName = requireUser(values.user, 'token list');
  const tokens = withStore(openSelectedStore(values, true), (store) => {
    const user = store.users.byName(userName);
    if (!user) throw new CommandError(`no user named ${JSON.stringify(userName)}`);
    return store.tokens.listActive(user.id);
  });
  const rows = tokens.map((t) => [t.id, t.name, t.prefix, t.createdAt, t.lastUsedAt ?? '-']);
  process.stdout.write(formatTable(['ID', 'NAME', 'PREFIX', 'CREATED', 'LAST USED'], rows));
  return 0;
}

function revoke(argv: string[]): number {
  const { values, positionals } = parseCommandLine('token revoke', argv, COMMON, true);
  if (values.help) return help();
  const [id, ...extra] = positionals;
  if (!id || extra.length > 0) throw new UsageError('expected exactly one token ID', 'token revoke');
  withStore(openSelectedStore(values, true), (store) => {
    if (store.tokens.revoke(id)) return;
    const token = store.tokens.get(id);
    if (!token) throw new CommandError(`no token with id ${id}`);
    process.stderr.write(`token ${id} was already revoked\n`);
  });
  process.stdout.write(`revoked ${id}\n`);
  return 0;
}

function help(): number {
  process.stdout.write(TOKEN_USAGE);
  return 0;
}

/** Left-aligned columns separated by two spaces, with a header row. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd() + '\n';
  return [header, ...rows].map(line).join('');
}

export async function tokenCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create':
      return create(rest);
    case 'list':
      return list(rest);
    case 'revoke':
      return revoke(rest);
    case '-h':
    case '--help':
    case 'help':
      return help();
    case undefined:
      throw new UsageError('missing subcommand (create, list or revoke)', 'token');
    default:
      throw new UsageError(`unknown subcommand ${JSON.stringify(sub)} (expected create, list or revoke)`, 'token');
  }
}
