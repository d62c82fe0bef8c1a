/**
 * The reader (db/reader.ts) over a real SQLite file: its threads answer exactly what the main thread's store reads
 * (records with media URLs built from the current base, reactions; JSONL byte for byte; search pages), a query the
 * index refuses keeps its 400 across the thread boundary, a read sees what was committed after the thread started,
 * and the in-process reader (stores without a file) answers the same.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReader, heavyReads, type Reader } from '../../service/db/reader.ts';
import { openStore, type Store } from '../../service/db/store.ts';
import { ServiceError } from '../../service/errors.ts';
import { incomingText } from '../helpers/messages.ts';

const CHAT = '15550101@s.whatsapp.net';

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('reader', () => {
  let dir: string;
  let store: Store;
  let threads: Reader;
  let inProcess: Reader;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-reader-'));
    store = openStore(dir);
    store.mediaUrls.setBase('http://127.0.0.1:7575/api');
    store.tx(() => store.connections.insert({ id: 'c1', userId: store.users.ensure('u').id, name: null, workerId: 'test' }));
    store.tx(() => {
      for (let i = 0; i < 1_234; i++) store.messages.upsert('c1', incomingText(CHAT, `k${i}`, 1_700_000_000 + Math.floor(i / 3), `note ${i} São Paulo ${i % 7 === 0 ? 'invoice' : ''}`));
      const doc = { ...incomingText(CHAT, 'doc', 1_700_001_000, 'invoice attached'), type: 'document' as const, kind: 'document' as const };
      store.messages.upsert('c1', { ...doc, media: { url: 'doc.pdf', mimetype: 'application/pdf', filename: 'March.pdf', size: 10 } });
      store.messages.react('c1', doc.id, CHAT, '👍', 1_700_001_001);
    });
    const common = { inProcess: heavyReads(store), mediaBase: () => store.mediaUrls.base, exportBatch: 100 };
    threads = createReader({ file: store.db.name, ...common });
    inProcess = createReader({ file: undefined, ...common });
  });
  afterAll(async () => {
    await threads?.close();
    await inProcess?.close();
    store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('exports a chat as the store reads it, on a thread and in process, in every span', async () => {
    const records = [...store.messages.iterate('c1', CHAT)];
    expect(records).toHaveLength(1_235);
    expect(records.at(-1)).toMatchObject({ media: { url: 'http://127.0.0.1:7575/api/connections/c1/media/doc.pdf' }, reactions: [{ emoji: '👍' }] });
    const jsonl = records.map((m) => `${JSON.stringify(m)}\n`).join('');
    for (const reader of [threads, inProcess]) {
      expect(await all(reader.messages('c1', CHAT, {}))).toEqual(records);
      expect((await all(reader.jsonl('c1', CHAT, {}))).join('')).toBe(jsonl);
      const span = { since: 1_700_000_100, until: 1_700_000_200 };
      expect(await all(reader.messages('c1', CHAT, span))).toEqual([...store.messages.iterate('c1', CHAT, span)]);
      expect(await all(reader.jsonl('c1', 'nobody@s.whatsapp.net', {}))).toEqual([]);
    }
  });

  it('searches as the store does, keeps a 400 across the thread, and reads what was committed since', async () => {
    const page = await threads.search('invoice', { connectionIds: ['c1'] }, { limit: 20, order: 'relevance' });
    expect(page.results).toHaveLength(20);
    expect(await inProcess.search('invoice', { connectionIds: ['c1'] }, { limit: 20, order: 'relevance' })).toEqual(page);
    const hits = store.search.search('invoice', { connectionIds: ['c1'] }, { limit: 20, order: 'relevance' });
    expect(page.results.map((r) => r.message.id)).toEqual(hits.hits.map((h) => h.messageId));
    expect(page.results[0]).toMatchObject({ connectionId: 'c1', chatName: null, snippet: expect.stringContaining('«invoice»') });

    const refused = await threads.search('"unbalanced', { connectionIds: ['c1'] }, { limit: 20, order: 'recent' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).statusCode).toBe(400);

    store.tx(() => store.messages.upsert('c1', incomingText(CHAT, 'late', 1_700_002_000, 'zanzibar')));
    const late = await threads.search('zanzibar', { connectionIds: ['c1'] }, { limit: 20, order: 'recent' });
    expect(late.results.map((r) => r.message.id)).toEqual([incomingText(CHAT, 'late', 0, '').id]);
  });
});
