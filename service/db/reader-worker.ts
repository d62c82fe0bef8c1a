/**
 * A reader thread (reader.ts): answers the main thread's heavy reads — searches and export batches — from its own
 * read-only connection to the database file (WAL: it reads the last commit and never blocks a writer).
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { MediaUrls } from './media-url.ts';
import { messagesRepo } from './messages.ts';
import { heavyReads, type ReaderReply, type ReaderRequest, type ReaderWorkerData } from './reader.ts';
import { searchIndex } from './search.ts';

const data = workerData as ReaderWorkerData;
const port = parentPort!;
const db = new Database(data.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000'); // a reader waits only while a connection recovers the WAL after a crash
const urls = new MediaUrls();
const search = searchIndex(db);
const reads = heavyReads({ search, messages: messagesRepo(db, search, urls) });

port.on('message', (m: ReaderRequest) => {
  let reply: ReaderReply;
  try {
    urls.setBase(m.mediaBase);
    const value =
      m.op === 'search'
        ? reads.search(m.query, m.filters, m.opts)
        : reads.exportBatch(m.connectionId, m.chatId, m.after, m.until, m.batch, m.as);
    reply = { id: m.id, ok: true, value };
  } catch (err) {
    const e = err as { message?: unknown; name?: unknown; statusCode?: unknown; code?: unknown };
    reply = {
      id: m.id,
      ok: false,
      error: {
        message: typeof e?.message === 'string' ? e.message : String(err),
        name: typeof e?.name === 'string' ? e.name : 'Error',
        ...(typeof e?.statusCode === 'number' && { statusCode: e.statusCode }),
        ...(typeof e?.code === 'string' && { code: e.code }),
      },
    };
  }
  port.postMessage(reply);
});
