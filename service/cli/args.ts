/**
 * Command-line parsing and error kinds shared by the commands: `node:util` parseArgs in strict mode plus `-h/--help`,
 * with parse failures turned into UsageErrors (exit code 2) that read like the rest of the CLI's messages.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Wrong command-line usage; `main` prints it with a hint and exits with code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    /** The command whose `--help` the hint points at, e.g. `token create`. */
    readonly command?: string,
  ) {
    super(message);
  }
}

/** A failure the user should read (exit code 1), as opposed to a usage error. */
export class CommandError extends Error {
  override name = 'CommandError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

/** Parses `argv` for `command` against `options` (+ `--help`). @throws UsageError */
export function parseCommandLine<const O extends Options>(
  command: string,
  argv: string[],
  options: O,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args: argv, options: { ...options, ...HELP }, allowPositionals, strict: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_'))
      throw new UsageError(describe(err as Error), command);
    throw err;
  }
}

/** parseArgs' messages carry advice meant for other CLIs; keep the first sentence and the option named. */
function describe(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  const option = /'(-[^']*)'/.exec(err.message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) return `unknown option ${option}`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return err.message.replace(/\. .*$/s, '').replace(/^Unexpected/, 'unexpected');
  return err.message.split('\n')[0]!;
}
