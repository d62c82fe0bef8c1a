/**
 * `switchboard sandbox`: runs only the WhatsApp-protocol sandbox, for pointing another service at it.
 * Stdout carries exactly `Sandbox: <url>`; how to connect a service to it is printed on stderr.
 */
import { createLogger } from '../config/logger.ts';
import { dataPaths } from '../config/data-dir.ts';
import { resolveSandboxServerConfig } from '../config/service-config.ts';
import { startSandbox } from '../sandbox/index.ts';
import { parseCommandLine } from './args.ts';
import { waitForShutdownSignal } from './signals.ts';

export const SANDBOX_USAGE = `Usage: switchboard sandbox [options]

Runs the built-in WhatsApp-protocol sandbox (simulated phones) on its own.

Options:
  --host HOST        Interface to listen on (default 127.0.0.1; env SWITCHBOARD_HOST)
  --port PORT        Port, 0 picks a free one (default 7580; env SWITCHBOARD_SANDBOX_PORT)
  --data-dir DIR     Data directory; sandbox state lives in DIR/sandbox-server
                     (env SWITCHBOARD_DATA_DIR; default: the platform's data folder + /sandbox)
  --seed             Create the demo accounts and contacts
  --log-level LEVEL  fatal, error, warn, info, debug, trace or silent (default info)
  -h, --help         Show this help

Prints "Sandbox: http://HOST:PORT" on stdout once ready.
`;

export async function sandboxCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine('sandbox', argv, {
    host: { type: 'string' },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    seed: { type: 'boolean' },
    'log-level': { type: 'string' },
  });
  if (values.help) {
    process.stdout.write(SANDBOX_USAGE);
    return 0;
  }
  const config = resolveSandboxServerConfig({
    host: values.host,
    port: values.port,
    dataDir: values['data-dir'],
    seed: values.seed,
    logLevel: values['log-level'],
  });
  const logger = createLogger(config.logLevel);
  const stopRequested = waitForShutdownSignal();
  const sandbox = await startSandbox({
    dataDir: dataPaths(config.dataDir).sandboxServerDir,
    host: config.host,
    port: config.port,
    logger,
  });
  try {
    if (config.seed) await sandbox.seedDemo();
    process.stdout.write(`Sandbox: ${sandbox.url}\n`);
    process.stderr.write(`Connect a service with: switchboard serve --sandbox --wa-url ${sandbox.wsUrl}\n`);
    const signal = await stopRequested;
    logger.info({ signal }, 'shutting down');
  } finally {
    await sandbox.close();
  }
  return 0;
}
