/**
 * The `switchboard` command (bin/switchboard.js calls `main`). Exit codes: 0 success, 1 failure (message on
 * stderr), 2 wrong usage (unknown command or flag, invalid flag value). Commands are imported on demand, so
 * `token` and `--help` start without loading the engine (Baileys) or the sandbox.
 */
import { SandboxDiscoveryError } from '../config/remote-sandbox.ts';
import { DiskSpaceError } from '../config/disk-space.ts';
import { installConsoleFilter } from '../config/console-filter.ts';
import { StartupError } from '../config/data-dir-lock.ts';
import { ConfigError } from '../config/service-config.ts';
import { VERSION } from '../config/version.ts';
import { DatabaseOpenError } from '../db/database.ts';
import { CommandError, UsageError } from './args.ts';

export const USAGE = `Usage: switchboard <command> [options]

Commands:
  serve     Run the service (REST API + WebSocket stream); --sandbox for test mode
  token     Create, list and revoke API tokens (create | list | revoke)
  user      List, create, disable and enable users (list | create | disable | enable)
  sandbox   Run only the WhatsApp-protocol sandbox
  migrate   Copy a desktop data dir's database into PostgreSQL (--from DATA_DIR --to postgres://…)

Run 'switchboard <command> --help' for a command's options. 'switchboard --version' prints the version.
`;

/** Runs the CLI with `argv` (without node and script) and resolves with the process exit code. */
export async function main(argv: string[]): Promise<number> {
  installConsoleFilter(); // before libsignal loads: its console output carries key material
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await (await import('./serve.ts')).serveCommand(rest);
      case 'token':
        return await (await import('./token.ts')).tokenCommand(rest);
      case 'user':
        return await (await import('./user.ts')).userCommand(rest);
      case 'sandbox':
        return await (await import('./sandbox.ts')).sandboxCommand(rest);
      case 'migrate':
        return await (await import('./migrate.ts')).migrateCommand(rest);
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(USAGE);
        return 0;
      case '-v':
      case '--version':
        process.stdout.write(`${VERSION}\n`);
        return 0;
      case undefined:
        process.stderr.write(USAGE);
        return 2;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (err) {
    return report(err, command);
  }
}

/** The commands: a ConfigError (a bad flag or variable value) points at the running command's `--help`. */
const COMMANDS = new Set(['serve', 'token', 'user', 'sandbox', 'migrate']);

/** Prints `err` for the user and returns the exit code; `command` is the command that was running. */
function report(err: unknown, command: string | undefined): number {
  if (err instanceof UsageError || err instanceof ConfigError) {
    const about =
      err instanceof UsageError ? err.command : command && COMMANDS.has(command) ? command : undefined;
    const help = about ? `switchboard ${about} --help` : 'switchboard --help';
    process.stderr.write(`switchboard: ${err.message}\nRun '${help}' for usage.\n`);
    return 2;
  }
  if (
    err instanceof DatabaseOpenError ||
    err instanceof CommandError ||
    err instanceof SandboxDiscoveryError ||
    err instanceof StartupError ||
    err instanceof DiskSpaceError
  ) {
    process.stderr.write(`switchboard: ${err.message}\n`);
    return 1;
  }
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e.syscall === 'listen' || e.syscall === 'bind') {
    const where = e.address ? ` on ${e.address.includes(':') ? `[${e.address}]` : e.address}:${e.port}` : '';
    const hint =
      e.code === 'EADDRINUSE'
        ? 'the port is in use (another program, or Switchboard already running); pick another with --port PORT (0 = any free port)'
        : e.code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges); pick another with --port PORT'
          : e.code === 'EADDRNOTAVAIL'
            ? 'no such address on this machine; check --host'
            : e.message;
    process.stderr.write(`switchboard: cannot listen${where}: ${hint}\n`);
    return 1;
  }
  if (e instanceof Error && e.code && /^E[A-Z]+$/.test(e.code)) {
    // A system error at start-up (file system, network): its message names the cause and the path.
    process.stderr.write(`switchboard: ${e.message}\n`);
    return 1;
  }
  process.stderr.write(`switchboard: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}
