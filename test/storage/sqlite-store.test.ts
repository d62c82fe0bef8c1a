/**
 * SQLite-only behaviour of the asynchronous Store (sqlite-store.ts over store.ts `begin()`; docs/architecture.md
 * § Storage engines): the group commit's window closing while a unit awaits commits the batch when the unit ends,
 * and the synchronous store refuses to be used from beside an open asynchronous transaction instead of joining it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../service/db/sqlite-store.ts';
import { openStore, type Store as SyncStore } from '../../service/db/store.ts';
import type { Store } from '../../service/db/store-api.ts';

let dir: string | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  store = dir = undefined;
});

function open(): { sync: SyncStore; store: Store } {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-sqlite-store-'));
  const sync = openStore(dir);
  store = sqliteStore(sync);
  return { sync, store };
}

describe('the SQLite asynchronous store', () => {
  it('commits a batch whose window closed while a unit awaited, when the unit ends', async () => {
    const { sync, store } = open();
    const user = sync.users.create('u');
    const seq = await store.ingest(async (t) => {
      await new Promise((resolve) => setTimeout(resolve, 20)); // the 4 ms window closes meanwhile
      return (await t.events.append(user.id, null, 'message', {})).seq;
    });
    expect(seq).toBe(1);
    expect(sync.isDurable()).toBe(true);
    expect(sync.db.inTransaction).toBe(false);
  });

  it('refuses synchronous transactions while an asynchronous one is open', async () => {
    const { sync, store } = open();
    const user = sync.users.create('u');
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    let go!: () => void;
    const gate = new Promise<void>((resolve) => (go = resolve));
    const unit = store.ingest(async (t) => {
      await t.events.append(user.id, null, 'message', {});
      inside();
      await gate;
      throw new Error('rolled back');
    });
    await entered;
    expect(() => sync.ingest(() => sync.events.append(user.id, null, 'message', {}))).toThrow(/asynchronous transaction/);
    expect(() => sync.tx(() => 1)).toThrow(/asynchronous transaction/);
    expect(() => sync.beforeCommit(() => undefined)).toThrow(/asynchronous transaction/);
    go();
    await expect(unit).rejects.toThrow('rolled back');
    expect(sync.tx(() => sync.events.append(user.id, null, 'message', {})).seq).toBe(1);
  });
});
