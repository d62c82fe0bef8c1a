/**
 * The service's pino logger on stderr (stdout is reserved for the CLI's machine-readable `API:`/`Sandbox:` lines),
 * with credentials redacted wherever they might appear in a logged object. Two formats: `json` (one JSON object
 * per line, for log collectors) and `pretty` (pino-pretty's human-readable lines, formatted synchronously in this
 * thread — no worker transport). `auto` (the default) is `pretty` when stderr is a terminal, else `json`.
 */
import { destination, pino, stdSerializers, type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import { redactCredentials, REDACTED } from '../secrets/credentials.ts';
import type { LogFormat, LogLevel } from './service-config.ts';

/**
 * What keeps credentials out of the lines: fields named like one are censored; an error's `rawPacket` (the bytes of
 * a request Node's HTTP parser refused, headers and all, which Fastify logs at trace) is left out; and every line,
 * whatever logged it (a worker thread, Fastify, Baileys), is cleaned of anything shaped like an API token or a JWT
 * before it is written, also percent-encoded (secrets/credentials.ts).
 */
const OPTIONS: LoggerOptions = {
  redact: {
    paths: ['token', '*.token', 'authorization', '*.authorization', '*.headers.authorization', '*.headers.cookie'],
    censor: REDACTED,
  },
  serializers: {
    err: (err: unknown) => {
      const out = stdSerializers.err(err as Error) as unknown;
      if (out && typeof out === 'object' && 'rawPacket' in out) (out as Record<string, unknown>).rawPacket = REDACTED;
      return out;
    },
  },
  hooks: { streamWrite: redactCredentials },
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
    return pino({ ...OPTIONS, level }, stream);
  }
  return pino({ ...OPTIONS, level }, destination({ fd: 2, sync: true }));
}
