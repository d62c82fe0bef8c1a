/**
 * Per-user caps on what holds memory for long (issue 20): open WebSocket event streams, and request bodies above
 * 1 MiB in progress at once (media sends: up to ~100 MiB of base64 each, held while the body is read, decoded and
 * sent); and on chat exports in progress at once (issue 25: each keeps a reader thread busy batch after batch; the
 * export route takes its slot with `PerUserSlots`). Past a cap the request answers 429 (`retry-after: 1`) in the
 * spec's error shape with a message naming the limit; nothing is read or stored. Keyed by user (all of a user's
 * tokens and JWTs share a cap), in memory, one process.
 *
 * A large upload counts from the moment its size is known to be above `largeUploadBytes` (its Content-Length, or
 * the bytes of a chunked body read so far) until its response is closed. A body larger than the route's own body
 * limit is left to Fastify's 413.
 */
import { Transform } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.ts';

export interface UserCaps {
  /** Open event streams per user (`--max-streams-per-user`); 0 = no cap. */
  maxStreams: number;
  /** Request bodies above `largeUploadBytes` in progress at once per user (`--max-large-uploads-per-user`); 0 = no cap. */
  maxLargeUploads: number;
  /** What counts as a large upload, in bytes. */
  largeUploadBytes: number;
  /** Chat exports in progress at once per user (`--max-exports-per-user`); 0 = no cap. */
  maxExports: number;
}

export const DEFAULT_USER_CAPS: UserCaps = { maxStreams: 20, maxLargeUploads: 2, largeUploadBytes: 1024 * 1024, maxExports: 2 };

/** WebSocket close code of a stream refused past the cap after the upgrade (a race of simultaneous opens). */
export const TOO_MANY_STREAMS_CLOSE = 4429;

export const tooManyStreams = (max: number) =>
  new ServiceError(429, `Too many open event streams for this user (limit ${max}); close one before opening another`);

export const tooManyUploads = (max: number, bytes: number) =>
  new ServiceError(
    429,
    `Too many large uploads in progress for this user (limit ${max} bodies over ${formatBytes(bytes)} at once); retry when one has finished`,
  );

export const tooManyExports = (max: number) =>
  new ServiceError(429, `Too many chat exports in progress for this user (limit ${max} at once); retry when one has finished`);

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`;
}

/** Counts held slots per user. */
export class PerUserSlots {
  readonly #held = new Map<string, number>();

  count(userId: string): number {
    return this.#held.get(userId) ?? 0;
  }

  /** Takes a slot when fewer than `max` are held (`max` 0: no cap); returns its release (idempotent), or undefined. */
  tryAcquire(userId: string, max: number): (() => void) | undefined {
    const n = this.count(userId);
    if (max > 0 && n >= max) return undefined;
    this.#held.set(userId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.count(userId) - 1;
      if (left > 0) this.#held.set(userId, left);
      else this.#held.delete(userId);
    };
  }
}

/** Adds the large-upload cap (a preParsing hook: after authentication, before the body is read). */
export function registerUploadCap(app: FastifyInstance, caps: UserCaps): void {
  if (caps.maxLargeUploads <= 0) return;
  const slots = new PerUserSlots();
  app.addHook('preParsing', async (request, reply, payload) => {
    const userId = request.user?.id;
    if (!userId) return payload;
    const acquire = () => {
      const release = slots.tryAcquire(userId, caps.maxLargeUploads);
      if (!release) {
        reply.header('retry-after', '1');
        throw tooManyUploads(caps.maxLargeUploads, caps.largeUploadBytes);
      }
      reply.raw.once('close', release);
    };
    const header = request.headers['content-length'];
    const length = header === undefined ? NaN : Number(header);
    if (request.headers['transfer-encoding'] === undefined) {
      // A declared size: decided before anything is read. One larger than the route takes is Fastify's 413.
      if (Number.isFinite(length) && length > caps.largeUploadBytes && length <= request.routeOptions.bodyLimit) acquire();
      return payload;
    }
    // A chunked body: counted as it arrives; the slot is taken when it passes the threshold.
    let seen = 0;
    let held = false;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        seen += chunk.length;
        (counted as Transform & { receivedEncodedLength: number }).receivedEncodedLength = seen;
        if (!held && seen > caps.largeUploadBytes) {
          try {
            acquire();
            held = true;
          } catch (err) {
            done(err as Error);
            return;
          }
        }
        done(null, chunk);
      },
    });
    payload.on('error', (err) => counted.destroy(err));
    return payload.pipe(counted);
  });
}
