/**
 * The background build of the full-text index for messages stored before it existed (migration 6 leaves a
 * `search.backfill` marker when there were any). Batches of BATCH messages by `seq`, each in its own transaction
 * with the marker's progress, so an interrupted build (stop, crash, kill) resumes where it left off at the next
 * start; one that finds the write lock held too long is tried again a second later. Progress goes to the log. New messages are indexed as they are written, independently of this.
 */
import type { Store as AsyncStore } from './store-api.ts';
import { isBusyError, type Store } from './store.ts';

const BATCH = 2000;
const LOG_EVERY_MS = 5000;
/** A batch that could not get the write lock (isBusyError) is tried again after this long. */
const BUSY_RETRY_MS = 1000;

/** The two log levels the backfill writes (a pino logger fits). */
export interface BackfillLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Starts the backfill if the marker is there; `stop()` ends it after the batch in progress (resumed next start). */
export function startSearchBackfill(deps: { store: Store; logger: BackfillLogger; batch?: number }): { stop(): void; done: Promise<void> } {
  const { store, logger } = deps;
  const batch = deps.batch ?? BATCH;
  let stopped = false;
  let timer: NodeJS.Immediate | undefined;
  let retry: NodeJS.Timeout | undefined;
  let lastLog = 0;
  let started = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const step = async () => {
    if (stopped) return resolveDone();
    let progress;
    try {
      // On the main thread: waits for the write lock without blocking (store.ts txAsync).
      progress = await store.txAsync(() => store.search.backfillStep(batch));
      if (stopped) return resolveDone();
    } catch (err) {
      if (isBusyError(err)) {
        // Another writer held the lock past the main thread's wait (a large history chunk): try again shortly.
        retry = setTimeout(() => void step(), BUSY_RETRY_MS);
        return;
      }
      logger.error({ err }, 'search index: building the index of stored messages failed; it resumes at the next start');
      return resolveDone();
    }
    if (!progress) return resolveDone();
    if (!started) {
      started = true;
      logger.info({ total: progress.total }, 'search index: indexing stored messages in the background');
    }
    const now = Date.now();
    if (progress.finished || now - lastLog >= LOG_EVERY_MS) {
      lastLog = now;
      logger.info(
        { done: progress.done, total: progress.total, finished: progress.finished },
        progress.finished ? 'search index: all stored messages indexed' : 'search index: indexing stored messages',
      );
    }
    if (progress.finished) return resolveDone();
    timer = setImmediate(() => void step()); // between batches the event loop serves requests
  };
  timer = setImmediate(() => void step());
  return {
    stop() {
      stopped = true;
      if (timer) clearImmediate(timer);
      clearTimeout(retry);
      resolveDone();
    },
    done,
  };
}

/**
 * `startSearchBackfill` over the asynchronous Store (store-api.ts, either engine): the same batches, marker, log
 * lines and resumption, each batch in `store.tx`. A batch that fails is logged and the build resumes at the next
 * start; `stop()` ends it after the batch in progress.
 */
export function startStoreSearchBackfill(deps: { store: AsyncStore; logger: BackfillLogger; batch?: number }): {
  stop(): void;
  done: Promise<void>;
} {
  const { store, logger } = deps;
  const batch = deps.batch ?? BATCH;
  let stopped = false;
  let lastLog = 0;
  const run = async () => {
    let started = false;
    while (!stopped) {
      let progress;
      try {
        progress = await store.tx((t) => t.search.backfillStep(batch));
      } catch (err) {
        if (isBusyError(err)) {
          await new Promise((resolve) => setTimeout(resolve, BUSY_RETRY_MS));
          continue;
        }
        logger.error(
          { err },
          'search index: building the index of stored messages failed; it resumes at the next start',
        );
        return;
      }
      if (!progress) return;
      if (!started) {
        started = true;
        logger.info({ total: progress.total }, 'search index: indexing stored messages in the background');
      }
      const now = Date.now();
      if (progress.finished || now - lastLog >= LOG_EVERY_MS) {
        lastLog = now;
        logger.info(
          { done: progress.done, total: progress.total, finished: progress.finished },
          progress.finished ? 'search index: all stored messages indexed' : 'search index: indexing stored messages',
        );
      }
      if (progress.finished) return;
      await new Promise((resolve) => setImmediate(resolve)); // between batches the event loop serves requests
    }
  };
  const done = run();
  return {
    stop() {
      stopped = true;
    },
    done,
  };
}
