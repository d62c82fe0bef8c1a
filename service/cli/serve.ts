/**
 * `switchboard serve`: runs the service until SIGINT/SIGTERM. Stdout carries exactly `API: <url>` and, in
 * sandbox mode, `Sandbox: <url>` (one line each; other programs parse them); logs go to stderr.
 */
import { createLogger } from '../config/logger.ts';
import { ensureConsoleBuilt } from './console-build.ts';
import { loadServiceConfig } from '../config/load-config.ts';
import type { ConfigFlags } from '../config/service-config.ts';
import { formatServeHelp } from '../config/settings-docs.ts';
import { flagsFromParsed, serveParseOptions } from '../config/settings-table.ts';
import { startService } from '../index.ts';
import { parseCommandLine } from './args.ts';
import { waitForShutdownSignal } from './signals.ts';

/** `serve --help`: generated from the settings table (config/settings-table.ts), like docs/settings.md. */
export const SERVE_USAGE = formatServeHelp();

/** Maximum time a clean shutdown may take before the process exits anyway. */
const SHUTDOWN_TIMEOUT_MS = 15_000;

export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine('serve', argv, serveParseOptions());
  if (values.help) {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  const flags: ConfigFlags = flagsFromParsed(values);
  const config = await loadServiceConfig(flags);
  const logger = createLogger(config.logLevel, config.logFormat);
  await ensureConsoleBuilt(); // a checkout's first run: the console at / works without a separate build step
  const stopRequested = waitForShutdownSignal(); // a signal during start-up stops the service once it is up
  const service = await startService(config, { logger, settingsSources: { flags, env: process.env } });
  process.stdout.write(`API: ${service.apiUrl}\n`);
  if (service.sandboxUrl) process.stdout.write(`Sandbox: ${service.sandboxUrl}\n`);
  logger.info(
    {
      apiUrl: service.apiUrl,
      publicUrl: service.publicUrl,
      sandboxUrl: service.sandboxUrl,
      dataDir: config.dataDir,
      ...(config.mediaDir && { mediaDir: config.mediaDir }),
    },
    'switchboard ready',
  );

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
