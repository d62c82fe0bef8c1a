/**
 * The logger handed to Baileys, with one correction: the `stream:error` node with code 515 ("restart required",
 * sent by WhatsApp right after pairing and answered by reconnecting — brief A4) is logged by Baileys
 * (lib/Socket/socket.js, `'stream errored out'`) at error level; it is normal, so it is logged at info here.
 * Every other call goes to the pino logger unchanged; children get the same correction.
 */
import type { Logger } from 'pino';

interface StreamErrorLog {
  fullErrorNode?: { attrs?: { code?: string } };
}

/** Whether an error-level call is Baileys' report of the normal 515 restart. */
export function isRestartRequiredLog(args: readonly unknown[]): boolean {
  const [obj, msg] = args;
  return msg === 'stream errored out' && (obj as StreamErrorLog | undefined)?.fullErrorNode?.attrs?.code === '515';
}

/** `logger` with Baileys' 515 "stream errored out" lowered to info (also in its children). */
export function baileysLogger(logger: Logger): Logger {
  const wrapped = Object.create(logger) as Logger;
  const error = logger.error.bind(logger) as (...args: unknown[]) => void;
  const info = logger.info.bind(logger) as (...args: unknown[]) => void;
  (wrapped as unknown as { error: (...args: unknown[]) => void }).error = (...args: unknown[]) =>
    isRestartRequiredLog(args) ? info({ connectionRestart: 515 }, 'stream restart requested by the server (515, normal after pairing)') : error(...args);
  const child = (bindings: Parameters<Logger['child']>[0], options?: Parameters<Logger['child']>[1]) =>
    baileysLogger(logger.child(bindings, options) as unknown as Logger);
  wrapped.child = child as unknown as Logger['child'];
  return wrapped;
}
