/**
 * Downloading a message's media from the (sandbox or WhatsApp) CDN into the media store, decrypted.
 *
 * Expired media (brief A8): rc14's own re-upload path in `downloadMediaMessage` is dead code (it tests
 * `error.status`, but Baileys' Boom errors only carry `output.statusCode`), so when the CDN answers 404/410 we ask
 * the phone to re-upload once with `sock.updateMediaMessage` (which rewrites `directPath`/`url` in place), refresh
 * the media connection (`getMediaHost()` stays `mmg.whatsapp.net` until one was fetched) and download again from
 * `sock.getMediaHost()`. Downloads use the session's dispatcher (sandbox CA trust), never process-wide TLS settings.
 */
import { downloadMediaMessage, type WAMessage, type WASocket } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { MediaFile, MediaStore } from './media-store.ts';

/** How long the phone gets to answer a re-upload request. */
const REUPLOAD_TIMEOUT_MS = 30_000;
/** Files above this size log their progress (every 25 %). */
const PROGRESS_LOG_BYTES = 4 * 1024 * 1024;

export interface DownloadContext {
  /** The live socket (for re-upload requests); without one, an expired blob is simply not found. */
  sock: WASocket | undefined;
  media: MediaStore;
  connectionId: string;
  dispatcher?: Dispatcher | undefined;
  logger: Logger;
  /** Called with the message after a successful re-upload request (its media now has a new directPath). */
  onReuploaded?: (msg: WAMessage) => void;
}

/** HTTP status of a failed media fetch (Baileys' Boom `output.statusCode`), if any. */
export function httpStatusOf(err: unknown): number | undefined {
  const e = err as { output?: { statusCode?: number }; status?: number; statusCode?: number } | undefined;
  return e?.output?.statusCode ?? e?.status ?? e?.statusCode;
}

/**
 * Downloads `msg`'s media into `filename` of the connection's media folder (temp file + rename).
 * @throws the download error when the media cannot be fetched, even after one re-upload request.
 */
export async function downloadMessageMedia(msg: WAMessage, filename: string, ctx: DownloadContext, declaredSize?: number | null): Promise<MediaFile> {
  const log = ctx.logger.child({ connectionId: ctx.connectionId, messageKey: msg.key.id, filename });
  const fetchOnce = async (host?: string) => {
    const stream = await downloadMediaMessage(msg, 'stream', {
      ...(host && { host }),
      // Baileys passes `options` to fetch; undici's `dispatcher` is not in the DOM RequestInit type.
      ...(ctx.dispatcher && { options: { dispatcher: ctx.dispatcher } as unknown as RequestInit }),
    });
    const started = Date.now();
    let nextMark = 0.25;
    const total = declaredSize ?? 0;
    const file = await ctx.media.writeStream(ctx.connectionId, filename, stream, (bytes) => {
      if (total >= PROGRESS_LOG_BYTES && bytes / total >= nextMark) {
        log.info({ bytes, total, percent: Math.round((bytes / total) * 100) }, 'media download progress');
        while (bytes / total >= nextMark) nextMark += 0.25;
      }
    });
    log.debug({ size: file.size, ms: Date.now() - started }, 'media downloaded');
    return file;
  };

  try {
    return await fetchOnce();
  } catch (err) {
    const status = httpStatusOf(err);
    if ((status !== 404 && status !== 410) || !ctx.sock) throw err;
    log.info({ status }, 'media expired on the CDN; asking the phone to re-upload it');
    const sock = ctx.sock;
    const updated = await withTimeout(sock.updateMediaMessage(msg), REUPLOAD_TIMEOUT_MS, 'media re-upload request timed out');
    ctx.onReuploaded?.(updated);
    await sock.refreshMediaConn(true);
    return await fetchOnce(sock.getMediaHost());
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(message), { output: { statusCode: 404 } })), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
