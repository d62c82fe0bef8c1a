/**
 * The heavy reads of the API — full-text search and chat exports (issue 15) — on reader threads, so they never run
 * on the main thread, which serves HTTP, the event stream and webhooks (issue 25; docs/architecture.md "Read path").
 *
 * A reader thread (reader-worker.ts) has its own read-only connection to the database file; in WAL mode a reader
 * sees the last commit and never waits for a writer nor holds one back (https://www.sqlite.org/wal.html). It runs
 * the same code as the main thread would (`heavyReads` over `searchIndex` and `messagesRepo`), so results and
 * export bytes are the same. The pool grows to `threads` threads (2 by default) as reads overlap: a read goes to an
 * idle thread, else to a new one while there is room, else to the thread with the fewest reads in flight. A search is one round trip; an export reads the chat one
 * batch of `exportBatch` messages per round trip, asking for the next batch as soon as one arrives, so the main
 * thread only copies each batch into the response (JSONL arrives already serialized).
 *
 * A store without a file (in-memory: some tests) reads in process instead, yielding to the event loop between
 * batches. A thread that dies fails its reads in flight (500) and is replaced at the next read.
 */
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../errors.ts';
import { messagesRepo, rangeStart, type Message, type PagePosition } from './messages.ts';
import type { SearchFilters, SearchIndex } from './search.ts';

/** One search hit as the search routes answer it (`connectionId` is dropped by the one-connection route's schema). */
export interface SearchResult {
  connectionId: string;
  message: Message;
  snippet: string;
  chatName: string | null;
}

export interface SearchResults {
  results: SearchResult[];
  nextBefore: string | null;
}

export interface SearchOptions {
  limit: number;
  order: 'recent' | 'relevance';
  before?: string;
}

/** A chat's span to export: unix seconds, inclusive. */
export interface ChatRange {
  since?: number;
  until?: number;
}

/** One batch of an export: its messages as records or as JSONL text (one line per message), and where the next starts. */
export type ExportBatch =
  | { messages: Message[]; next: PagePosition | null }
  | { jsonl: string; next: PagePosition | null };

/** The heavy reads over one connection's repositories: the same code on a reader thread and in process. */
export function heavyReads(repos: { search: SearchIndex; messages: ReturnType<typeof messagesRepo> }) {
  return {
    /**
     * A page of search results: the index's hits with their Message and the chat's name.
     * @throws ServiceError 400 for a malformed query or cursor (search.ts).
     */
    search(query: string, filters: SearchFilters, opts: SearchOptions): SearchResults {
      const page = repos.search.search(query, filters, opts);
      const results: SearchResult[] = [];
      for (const hit of page.hits) {
        const message = repos.messages.get(hit.connectionId, hit.messageId);
        if (!message) continue;
        results.push({ connectionId: hit.connectionId, message, snippet: hit.snippet, chatName: repos.search.chatName(hit.connectionId, message.chatId) });
      }
      return { results, nextBefore: page.nextBefore };
    },
    /** One batch of a chat export (messagesRepo.range), as records or as JSONL text. */
    exportBatch(connectionId: string, chatId: string, after: PagePosition, until: number | undefined, batch: number, as: 'messages' | 'jsonl'): ExportBatch {
      const { messages, next } = repos.messages.range(connectionId, chatId, after, until, batch);
      if (as === 'messages') return { messages, next };
      let jsonl = '';
      for (const m of messages) jsonl += `${JSON.stringify(m)}\n`;
      return { jsonl, next };
    },
  };
}

export type HeavyReads = ReturnType<typeof heavyReads>;

/** A message to a reader thread. */
export type ReaderRequest =
  | { id: number; mediaBase: string; op: 'search'; query: string; filters: SearchFilters; opts: SearchOptions }
  | { id: number; mediaBase: string; op: 'exportBatch'; connectionId: string; chatId: string; after: PagePosition; until: number | undefined; batch: number; as: 'messages' | 'jsonl' };

/** A reader thread's answer. */
export type ReaderReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { message: string; name: string; statusCode?: number; code?: string } };

export interface ReaderWorkerData {
  entry: string;
  /** The database file. */
  file: string;
}

export interface Reader {
  /** See HeavyReads.search. */
  search(query: string, filters: SearchFilters, opts: SearchOptions): Promise<SearchResults>;
  /** A chat oldest first, batch by batch, as Messages (HTML transcripts, ZIP exports). */
  messages(connectionId: string, chatId: string, range: ChatRange): AsyncGenerator<Message>;
  /** A chat oldest first as JSONL text, a batch of lines at a time (never an empty string). */
  jsonl(connectionId: string, chatId: string, range: ChatRange): AsyncGenerator<string>;
  /** Stops the threads; reads in flight fail. */
  close(): Promise<void>;
}

export interface ReaderOptions {
  /** The database file (`db.name` of the store); undefined or `:memory:` reads in process. */
  file: string | undefined;
  /** Reads in process when no file (or `threads: 0`). */
  inProcess: HeavyReads;
  /** The media base URL of Messages' `media.url`, read at each request (store.mediaUrls.base). */
  mediaBase: () => string;
  /** Reader threads (default 2); 0 reads in process. */
  threads?: number;
  /** Messages per export batch (default 500). */
  exportBatch?: number;
  /** Told when a reader thread fails or exits unexpectedly. */
  onError?: (err: Error) => void;
}

export const DEFAULT_READER_THREADS = 2;
const DEFAULT_EXPORT_BATCH = 500;

/** Runs each new reader thread's module (through tsx when running from the TypeScript sources). */
const BOOT = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.entry.endsWith('.ts')) (await import('tsx/esm/api')).register();
  await import(workerData.entry);
})().catch((err) => setImmediate(() => { throw err; }));
`;

interface Slot {
  worker: Worker;
  calls: Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;
  gone: boolean;
}

function errorOf(e: Extract<ReaderReply, { ok: false }>['error']): Error {
  if (e.statusCode !== undefined) return new ServiceError(e.statusCode, e.message);
  return Object.assign(new Error(e.message), { name: e.name, ...(e.code !== undefined && { code: e.code }) });
}

/** The reader pool (see the module comment). */
export function createReader(opts: ReaderOptions): Reader {
  const batch = opts.exportBatch ?? DEFAULT_EXPORT_BATCH;
  const threads = !opts.file || opts.file === ':memory:' ? 0 : (opts.threads ?? DEFAULT_READER_THREADS);
  const entry = new URL(`./reader-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;
  const slots: Slot[] = [];
  let nextId = 1;
  let closed = false;

  function spawn(): Slot {
    const workerData: ReaderWorkerData = { entry, file: opts.file! };
    const worker = new Worker(BOOT, { eval: true, workerData, name: 'reader' });
    worker.unref();
    const slot: Slot = { worker, calls: new Map(), gone: false };
    const fail = (err: Error) => {
      if (slot.gone) return;
      slot.gone = true;
      for (const call of slot.calls.values()) call.reject(err);
      slot.calls.clear();
      if (!closed) opts.onError?.(err);
    };
    worker.on('message', (m: ReaderReply) => {
      const call = slot.calls.get(m.id);
      if (!call) return;
      slot.calls.delete(m.id);
      if (slot.calls.size === 0) worker.unref();
      if (m.ok) call.resolve(m.value);
      else call.reject(errorOf(m.error));
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the reader thread exited (code ${code})`)));
    return slot;
  }

  /**
   * An idle live thread, else a new one while the pool has room (a dead one is replaced), else the live thread with
   * the fewest reads in flight: one-at-a-time reads never start a second thread.
   */
  function pick(): Slot {
    for (let i = slots.length - 1; i >= 0; i--) if (slots[i]!.gone) slots.splice(i, 1);
    const idle = slots.find((s) => s.calls.size === 0);
    if (idle) return idle;
    if (slots.length < threads) {
      const slot = spawn();
      slots.push(slot);
      return slot;
    }
    return slots.reduce((a, b) => (b.calls.size < a.calls.size ? b : a));
  }

  function call<T>(request: DistributiveOmit<ReaderRequest, 'id' | 'mediaBase'>): Promise<T> {
    if (closed) return Promise.reject(new Error('the reader is closed'));
    if (threads === 0) {
      // In process: the same reads, answered on a later turn of the event loop.
      return new Promise<T>((resolve, reject) =>
        setImmediate(() => {
          try {
            resolve((request.op === 'search'
              ? opts.inProcess.search(request.query, request.filters, request.opts)
              : opts.inProcess.exportBatch(request.connectionId, request.chatId, request.after, request.until, request.batch, request.as)) as T);
          } catch (err) {
            reject(err as Error);
          }
        }),
      );
    }
    const slot = pick();
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      slot.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      slot.worker.ref(); // a read in flight keeps the process alive
      slot.worker.postMessage({ ...request, id, mediaBase: opts.mediaBase() } as ReaderRequest);
    });
  }

  /** The batches of a chat, the next one asked for as soon as one arrives. */
  async function* batches(connectionId: string, chatId: string, range: ChatRange, as: 'messages' | 'jsonl'): AsyncGenerator<ExportBatch> {
    const ask = (after: PagePosition) => call<ExportBatch>({ op: 'exportBatch', connectionId, chatId, after, until: range.until, batch, as });
    let pending: Promise<ExportBatch> | undefined = ask(rangeStart(range.since));
    try {
      while (pending) {
        const b: ExportBatch = await pending;
        pending = b.next ? ask(b.next) : undefined;
        yield b;
      }
    } finally {
      pending?.catch(() => undefined); // an export stopped early (client gone): its prefetch is dropped
    }
  }

  return {
    search: (query, filters, searchOpts) => call<SearchResults>({ op: 'search', query, filters, opts: searchOpts }),
    async *messages(connectionId, chatId, range) {
      for await (const b of batches(connectionId, chatId, range, 'messages')) if ('messages' in b) yield* b.messages;
    },
    async *jsonl(connectionId, chatId, range) {
      for await (const b of batches(connectionId, chatId, range, 'jsonl')) if ('jsonl' in b && b.jsonl !== '') yield b.jsonl;
    },
    async close() {
      closed = true;
      await Promise.all(
        slots.map(async (slot) => {
          for (const c of slot.calls.values()) c.reject(new Error('the reader is closed'));
          slot.calls.clear();
          slot.gone = true;
          await slot.worker.terminate();
        }),
      );
      slots.length = 0;
    },
  };
}

/** Omit over each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
