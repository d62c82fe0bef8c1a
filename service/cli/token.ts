/**
 * `switchboard token create|list|revoke`: API token management straight on the database — the data dir's SQLite
 * file (WAL mode, so it works while `serve` runs) or a PostgreSQL database (`--database`). `create` prints only the
 * new token on stdout, for scripts to capture.
 * `--user NAME` only ever names a LOCAL user (db/users.ts); identity-provider users are reached by `--user-id`, and
 * never get a token from the CLI.
 */
import { issueToken } from '../auth/api-tokens.ts';
import { isValidUserName } from '../db/users.ts';
import { CommandError, parseCommandLine, UsageError } from './args.ts';
import { findUser, STORE_OPTIONS, STORE_OPTIONS_HELP, withSelectedStore, type UserSelector } from './store-access.ts';

export const TOKEN_USAGE = `Usage:
  switchboard token create --user NAME [--name LABEL]      Create a token for the local user NAME (created if
                                                           missing); prints the token
  switchboard token create --user-id ID [--name LABEL]     Create a token for the local user with this id
  switchboard token list (--user NAME | --user-id ID)      List a user's active tokens
  switchboard token revoke ID                              Revoke a token by id

--user names local users only: an identity-provider (JWT) user whose label is NAME is another user and is never
matched. JWT users are addressed by id (see 'switchboard user list'); the CLI lists and revokes their tokens but
never issues one: they create their own after signing in (POST /api/tokens), so the identity provider stays the
only authority over those accounts.

Options (all subcommands):
${STORE_OPTIONS_HELP}  -h, --help       Show this help
`;

const COMMON = STORE_OPTIONS;

/** `--user NAME` or `--user-id ID`, exactly one. @throws UsageError */
function userSelector(values: { user?: string; 'user-id'?: string }, command: string): UserSelector {
  const name = values.user;
  const id = values['user-id'];
  if (name !== undefined && id !== undefined) throw new UsageError('give --user NAME or --user-id ID, not both', command);
  if (id !== undefined) return { id };
  if (name === undefined) throw new UsageError('--user NAME (or --user-id ID) is required', command);
  if (!isValidUserName(name)) throw new UsageError('invalid user NAME', command);
  return { name };
}

async function create(argv: string[]): Promise<number> {
  const { values } = parseCommandLine('token create', argv, {
    ...COMMON,
    user: { type: 'string' },
    'user-id': { type: 'string' },
    name: { type: 'string' },
  });
  if (values.help) return help();
  const selector = userSelector(values, 'token create');
  const token = await withSelectedStore(values, 'id' in selector, (store) =>
    store.tx(async (t) => {
      const user = await findUser(t, selector, true);
      if (user.kind !== 'local') {
        throw new CommandError(
          `user ${user.id} signs in through the identity provider (${user.issuer}); the CLI does not issue tokens for ` +
            `such users: they create their own after signing in (POST /api/tokens)`,
        );
      }
      const issued = issueToken(t.tokens, user.id, values.name ?? 'cli');
      await issued.record;
      return issued.token;
    }),
  );
  process.stdout.write(`${token}\n`);
  return 0;
}

async function list(argv: string[]): Promise<number> {
  const { values } = parseCommandLine('token list', argv, {
    ...COMMON,
    user: { type: 'string' },
    'user-id': { type: 'string' },
  });
  if (values.help) return help();
  const selector = userSelector(values, 'token list');
  const tokens = await withSelectedStore(values, true, async (store) =>
    store.read.tokens.listActive((await findUser(store.read, selector, false)).id),
  );
  const rows = tokens.map((t) => [t.id, t.name, t.prefix, t.createdAt, t.lastUsedAt ?? '-']);
  process.stdout.write(formatTable(['ID', 'NAME', 'PREFIX', 'CREATED', 'LAST USED'], rows));
  return 0;
}

async function revoke(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandLine('token revoke', argv, COMMON, true);
  if (values.help) return help();
  const [id, ...extra] = positionals;
  if (!id || extra.length > 0) throw new UsageError('expected exactly one token ID', 'token revoke');
  await withSelectedStore(values, true, async (store) => {
    if (await store.tx((t) => t.tokens.revoke(id))) return;
    const token = await store.read.tokens.get(id);
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
      return await create(rest);
    case 'list':
      return await list(rest);
    case 'revoke':
      return await revoke(rest);
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
