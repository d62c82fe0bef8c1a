/**
 * The service's pino logger on stderr (stdout is reserved for the CLI's machine-readable `API:`/`Sandbox:` lines),
 * with credentials redacted wherever they might appear in a logged object. Two formats: `json` (one JSON object
 * per line, for log collectors) and `pretty` (pino-pretty's human-readable lines, formatted synchronously in this
 * thread — no worker transport). `auto` (the default) is `pretty` when stderr is a terminal, else `json`.
 */
import { destination, pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat, LogLevel } from './service-config.ts';

const REDACT = {
  paths: ['token', '*.token', 'authorization', '*.authorization', '*.headers.authorization', '*.headers.cookie'],
  censor: '[redacted]',
};

/** `json` or `pretty` for `format`; `auto` looks at whether stderr is a terminal (`isTty`). */
export function effectiveLogFormat(format: LogFormat = 'auto', isTty = process.stderr.isTTY === true): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  return isTty ? 'pretty' : 'json';
}

/** A logger writing synchronously to stderr at `level`, in `format` (see the module comment). */
export function createLogger(level: LogLevel, format: LogFormat = 'auto'): Logger {
  if (effectiveLogFormat(format) === 'pretty') {
    const stream = pretty({
      destination: 2,
      sync: true,
      colorize: process.stderr.isTTY === true && !process.env.NO_COLOR,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    });
    return pino({ level, redact: REDACT }, stream);
  }
  return pino({ level, redact: REDACT }, destination({ fd: 2, sync: true }));
}
