/**
 * A session's media downloads (part of `Session`, session.ts): incoming media is downloaded eagerly, before the
 * CDN link expires, through a queue of at most MEDIA_CONCURRENCY downloads at once; a request for a file not on disk
 * (`ensure`) downloads it now, and concurrent requests for the same file share one download. An expired blob gets
 * one re-upload request to the phone (media-download.ts).
 */
import { proto, type WAMessage, type WASocket } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Store } from '../db/store.ts';
import { downloadMessageMedia } from './media-download.ts';
import type { MediaFile, MediaStore } from './media-store.ts';
import { mediaFileNameOf } from './message-model.ts';

/** At most this many media downloads run at once per session (eager downloads of incoming media). */
const MEDIA_CONCURRENCY = 2;

export interface SessionMediaDeps {
  store: Store;
  media: MediaStore;
  connectionId: string;
  log: Logger;
  /** Dispatcher for downloads (the sandbox's CA trust in sandbox mode); undefined = undici's global one. */
  dispatcher: Dispatcher | undefined;
  /** The live socket, for re-upload requests; undefined while the session is not open. */
  socket(): WASocket | undefined;
}

export class SessionMedia {
  /** Running downloads by file name (a second request for the same file waits for the first). */
  readonly #downloads = new Map<string, Promise<MediaFile>>();
  /** Eager downloads waiting for a slot, by message id. */
  readonly #queue: string[] = [];
  #active = 0;

  constructor(private readonly d: SessionMediaDeps) {}

  /** Downloads the media of stored message `messageId` in the background (failures are logged; a later request retries). */
  queue(messageId: string): void {
    this.#queue.push(messageId);
    this.#pump();
  }

  #pump(): void {
    while (this.#active < MEDIA_CONCURRENCY && this.#queue.length > 0) {
      const id = this.#queue.shift()!;
      this.#active++;
      this.ensure(id)
        .catch((err: unknown) => this.d.log.warn({ err, messageId: id }, 'media download failed; it is retried when the media is requested'))
        .finally(() => {
          this.#active--;
          this.#pump();
        });
    }
  }

  /**
   * The local file of a stored message's media: from disk, or downloaded now (one re-upload request when the CDN
   * lost it). Concurrent calls for the same file share one download.
   * @throws when the message has no media or the download failed.
   */
  ensure(messageId: string): Promise<MediaFile> {
    const { store, media, connectionId } = this.d;
    const message = store.messages.get(connectionId, messageId);
    const filename = message?.media ? mediaFileNameOf(message.media) : undefined;
    if (!message?.media || !filename) return Promise.reject(new Error('message has no media'));
    const onDisk = media.stat(connectionId, filename);
    if (onDisk) return Promise.resolve(onDisk);
    const running = this.#downloads.get(filename);
    if (running) return running;
    const raw = store.messages.getRaw(connectionId, messageId);
    if (!raw) return Promise.reject(new Error('message has no stored media keys'));
    const msg = proto.WebMessageInfo.decode(raw) as WAMessage;
    const job = downloadMessageMedia(
      msg,
      filename,
      {
        sock: this.d.socket(),
        media,
        connectionId,
        dispatcher: this.d.dispatcher,
        logger: this.d.log,
        onReuploaded: (updated) =>
          store.messages.setRaw(connectionId, messageId, proto.WebMessageInfo.encode(updated as proto.IWebMessageInfo).finish()),
      },
      message.media.size,
    ).finally(() => this.#downloads.delete(filename));
    this.#downloads.set(filename, job);
    return job;
  }
}
