/**
 * `switchboard user list|create NAME|disable (NAME|--id ID)|enable (NAME|--id ID)`: user management straight on the
 * database — the data dir's SQLite file (WAL mode, so it works while `serve` runs) or a PostgreSQL database
 * (`--database`). NAME always means a local user; identity-provider users are
 * addressed by id (db/users.ts). A disabled user's API tokens and JWTs answer 401 at once; its open WebSocket
 * streams are closed (4401) within the service's revocation sweep (about 2 s). Nothing is deleted.
 */
import { isValidUserName } from '../db/users.ts';
import { CommandError, parseCommandLine, UsageError } from './args.ts';
import { formatTable } from './token.ts';
import { findUser, STORE_OPTIONS, STORE_OPTIONS_HELP, withSelectedStore, type StoreSelection, type UserSelector } from './store-access.ts';

export const USER_USAGE = `Usage:
  switchboard user list                          List users (name or label, kind, id, status, identity)
  switchboard user create NAME                   Create a local user (then: switchboard token create --user NAME)
  switchboard user disable (NAME | --id ID)      Disable a user: its tokens and JWTs stop working (401)
  switchboard user enable (NAME | --id ID)       Enable a disabled user again

Users are of two kinds. Local users (created here, by 'token create --user', or by the desktop app) are named, and
NAME always means a local user. Identity-provider users (kind jwt) are created when their first JWT arrives and are
identified by issuer + subject; their name is only a label from the token, so they are addressed by --id ID.

Options (all subcommands):
${STORE_OPTIONS_HELP}  -h, --help       Show this help
`;

const COMMON = STORE_OPTIONS;


/** `NAME` (a local user) or `--id ID` (any user), exactly one. @throws UsageError */
function oneUser(
  command: string,
  argv: string[],
  allowId: boolean,
): { values: StoreSelection; selector: UserSelector | undefined } {
  const options = allowId ? { ...COMMON, id: { type: 'string' } } as const : COMMON;
  const parsed = parseCommandLine(`user ${command}`, argv, options, true);
  const values = parsed.values as typeof parsed.values & { id?: string };
  if (values.help) return { values, selector: undefined };
  const [name, ...extra] = parsed.positionals;
  const expected = allowId ? 'expected exactly one user NAME or --id ID' : 'expected exactly one user NAME';
  if (extra.length > 0 || (name === undefined) === (values.id === undefined))
    throw new UsageError(expected, `user ${command}`);
  if (values.id !== undefined) return { values, selector: { id: values.id } };
  if (!isValidUserName(name!)) throw new UsageError('invalid user NAME', `user ${command}`);
  return { values, selector: { name: name! } };
}

function help(): number {
  process.stdout.write(USER_USAGE);
  return 0;
}

async function setDisabled(argv: string[], disabled: boolean): Promise<number> {
  const { values, selector } = oneUser(disabled ? 'disable' : 'enable', argv, true);
  if (selector === undefined) return help();
  const user = await withSelectedStore(values, true, (store) =>
    store.tx(async (t) => {
      const found = await findUser(t, selector, false);
      await t.users.setDisabled(found.id, disabled);
      return found;
    }),
  );
  process.stdout.write(`${disabled ? 'disabled' : 'enabled'} ${user.kind === 'local' ? user.name : user.id}\n`);
  return 0;
}

export async function userCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'list': {
      const { values } = parseCommandLine('user list', rest, COMMON);
      if (values.help) return help();
      const users = await withSelectedStore(values, true, (store) => store.read.users.list());
      const rows = users.map((u) => [
        u.name,
        u.kind,
        u.id,
        u.disabled ? 'disabled' : 'active',
        u.kind === 'jwt' ? `${u.issuer} ${u.subject}` : '-',
        u.createdAt,
      ]);
      process.stdout.write(formatTable(['NAME', 'KIND', 'ID', 'STATUS', 'IDENTITY', 'CREATED'], rows));
      return 0;
    }
    case 'create': {
      const { values, selector } = oneUser('create', rest, false);
      if (selector === undefined) return help();
      const { name } = selector as { name: string };
      const user = await withSelectedStore(values, false, (store) =>
        store.tx(async (t) => {
          if (await t.users.byLocalName(name)) throw new CommandError(`a local user named ${JSON.stringify(name)} already exists`);
          return t.users.create(name);
        }),
      );
      process.stdout.write(`${user.id}\n`);
      return 0;
    }
    case 'disable':
      return await setDisabled(rest, true);
    case 'enable':
      return await setDisabled(rest, false);
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
