/**
 * The service's pino logger: JSON lines on stderr (stdout is reserved for the CLI's machine-readable output),
 * with credentials redacted wherever they might appear in a logged object.
 */
import { destination, pino, type Logger } from 'pino';
import type { LogLevel } from './service-config.ts';

/** A logger writing synchronously to stderr at `level`. */
export function createLogger(level: LogLevel): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['token', '*.token', 'authorization', '*.authorization', '*.headers.authorization', '*.headers.cookie'],
        censor: '[redacted]',
      },
    },
    destination({ fd: 2, sync: true }),
  );
}
