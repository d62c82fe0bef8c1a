/**
 * Keeps libsignal's console output — which includes whole session records with private keys (`privKey`,
 * `rootKey`, chain keys) — out of every output stream. libsignal (node_modules/libsignal/src/session_record.js,
 * session_builder.js, session_cipher.js, curve.js, queue_job.js) writes through `console.info/warn/error` with
 * the messages listed below, the record as the next argument. `installConsoleFilter` wraps the console methods
 * once per process: a call whose first argument is one of those messages is dropped, and its message alone
 * (never the other arguments) goes to the sink, a debug-level log line once `setConsoleFilterLogger` is called.
 * Install it before libsignal can run: the CLI entry, `startService`, the sandbox and the test setup do.
 */
import type { Logger } from 'pino';

/** libsignal's console messages (the first argument; some are followed by a session record). */
const LIBSIGNAL_MESSAGES = [
  'Closing open session in favor of incoming prekey bundle',
  'Closing stale open session',
  'Closing session:',
  'Opening session:',
  'Removing old closed session:',
  'Session already closed',
  'Session already open',
  'Migrating session to:',
  'V1 session storage migration error',
  'Decrypted message with closed session.',
  'Failed to decrypt message with any known session',
  'Session error:',
  'WARNING: Expected pubkey of length 33',
  'Unhandled bucket type',
];

const METHODS = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
const INSTALLED = Symbol.for('switchboard.consoleFilter');

let sink: ((message: string) => void) | undefined;

/** Whether a console call with these arguments is libsignal's (and is to be dropped). */
export function isLibsignalConsoleCall(args: readonly unknown[]): boolean {
  const first = args[0];
  if (typeof first !== 'string') return false;
  return LIBSIGNAL_MESSAGES.some((m) => first.startsWith(m));
}

/** Installs the filter on the global console (idempotent). */
export function installConsoleFilter(): void {
  const c = console as unknown as Record<string | symbol, unknown>;
  if (c[INSTALLED]) return;
  c[INSTALLED] = true;
  for (const method of METHODS) {
    const original = console[method].bind(console) as (...args: unknown[]) => void;
    c[method] = (...args: unknown[]) => {
      if (!isLibsignalConsoleCall(args)) return original(...args);
      // The message text only: "Session error:" + e carries the error text, which holds no key material.
      sink?.(String(args[0]).slice(0, 200));
    };
  }
}

/** Routes the dropped messages to `logger` at debug level (`{ component: 'libsignal' }`), without their records. */
export function setConsoleFilterLogger(logger: Logger): void {
  const log = logger.child({ component: 'libsignal' });
  sink = (message) => log.debug(message);
}
