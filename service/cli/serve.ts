/**
 * `switchboard serve`: runs the service until SIGINT/SIGTERM. Stdout carries exactly `API: <url>` and, in
 * sandbox mode, `Sandbox: <url>` (one line each; other programs parse them); logs go to stderr.
 */
import { createLogger } from '../config/logger.ts';
import { resolveServiceConfig } from '../config/service-config.ts';
import { startService } from '../index.ts';
import { parseCommandLine } from './args.ts';
import { waitForShutdownSignal } from './signals.ts';

export const SERVE_USAGE = `Usage: switchboard serve [options]

Runs the Switchboard service: the REST API under /api and the WebSocket event stream.

Options:
  --host HOST              Interface to listen on (default 127.0.0.1; env SWITCHBOARD_HOST)
  --port PORT              API port, 0 picks a free one (default 7575; env SWITCHBOARD_PORT)
  --data-dir DIR           Data directory (env SWITCHBOARD_DATA_DIR; default: the platform's data folder,
                           with a separate sandbox/ folder in sandbox mode)
  --sandbox                Test mode: start the built-in WhatsApp sandbox and connect to it (env SWITCHBOARD_SANDBOX=1)
  --sandbox-port PORT      Port of the in-process sandbox (default 0 = free; env SWITCHBOARD_SANDBOX_PORT)
  --wa-url URL             WhatsApp-protocol server to connect to instead (ws:// or wss://; env SWITCHBOARD_WA_URL);
                           with --sandbox, replaces the in-process sandbox
  --wa-root-key KEY        Noise root public key of the server at --wa-url (32 bytes, base64 or hex;
                           env SWITCHBOARD_WA_ROOT_KEY); in sandbox mode it is read from the sandbox when omitted
  --log-level LEVEL        fatal, error, warn, info, debug, trace or silent (default info; env SWITCHBOARD_LOG_LEVEL)
  --worker-id ID           Worker name shown on connections (default local; env SWITCHBOARD_WORKER_ID)
  --typing-delay-ms MIN-MAX  Typing pause before sends without skipPresence (default 800-2500; 0 turns it off;
                           env SWITCHBOARD_TYPING_DELAY_MS)
  -h, --help               Show this help

Prints "API: http://HOST:PORT/api" (and "Sandbox: http://HOST:PORT" in sandbox mode) on stdout once ready.
`;

/** Maximum time a clean shutdown may take before the process exits anyway. */
const SHUTDOWN_TIMEOUT_MS = 15_000;

export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine('serve', argv, {
    host: { type: 'string' },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    sandbox: { type: 'boolean' },
    'sandbox-port': { type: 'string' },
    'wa-url': { type: 'string' },
    'wa-root-key': { type: 'string' },
    'log-level': { type: 'string' },
    'worker-id': { type: 'string' },
    'typing-delay-ms': { type: 'string' },
  });
  if (values.help) {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  const config = resolveServiceConfig({
    host: values.host,
    port: values.port,
    dataDir: values['data-dir'],
    sandbox: values.sandbox,
    sandboxPort: values['sandbox-port'],
    waUrl: values['wa-url'],
    waRootKey: values['wa-root-key'],
    logLevel: values['log-level'],
    workerId: values['worker-id'],
    typingDelayMs: values['typing-delay-ms'],
  });
  const logger = createLogger(config.logLevel);
  const stopRequested = waitForShutdownSignal(); // a signal during start-up stops the service once it is up
  const service = await startService(config, { logger });
  process.stdout.write(`API: ${service.apiUrl}\n`);
  if (service.sandboxUrl) process.stdout.write(`Sandbox: ${service.sandboxUrl}\n`);
  logger.info({ apiUrl: service.apiUrl, sandboxUrl: service.sandboxUrl, dataDir: config.dataDir }, 'switchboard ready');

  const signal = await stopRequested;
  logger.info({ signal }, 'shutting down');
  const timer = setTimeout(() => {
    logger.error('shutdown timed out; exiting');
    process.exit(1);
  }, SHUTDOWN_TIMEOUT_MS);
  timer.unref();
  await service.close();
  clearTimeout(timer);
  logger.info('stopped');
  return 0;
}
