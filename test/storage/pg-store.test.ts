/**
 * PostgreSQL-only behaviour of the Store (pg/store.ts; docs/architecture.md § Storage engines): a batch whose
 * connection is lost fails as a whole, its listeners hear it and the storage state says so until the next commit;
 * a relaxed transaction commits; a database newer than the build is refused at open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgresUrl } from '../../service/db/pg/client.ts';
import { PG_MIGRATIONS } from '../../service/db/pg/migrations.ts';
import { isPgStorageError, openPgStore } from '../../service/db/pg/store.ts';
import { openEngine, type EngineUnderTest } from './engines.ts';

describe('the PostgreSQL store', () => {
  let e: EngineUnderTest;
  let userId: string;
  beforeAll(async () => {
    e = await openEngine('postgres');
    userId = (await e.store.read.users.create('u')).id;
  });
  afterAll(() => e?.close());

  it('fails the whole batch when its connection is lost, and recovers with the next one', async () => {
    const failures: Error[] = [];
    const off = e.store.onCommitFailure((err) => failures.push(err));
    let paused!: () => void;
    const pause = new Promise<void>((resolve) => (paused = resolve));
    let release!: () => void;
    const resume = new Promise<void>((resolve) => (release = resolve));
    const first = e.store.ingest(async (t) => (await t.events.append(userId, null, 'message', { tag: 'lost-1' })).seq);
    const second = e.store.ingest(async (t) => {
      await t.events.append(userId, null, 'message', { tag: 'lost-2' });
      paused();
      await resume;
      return (await t.events.append(userId, null, 'message', { tag: 'lost-3' })).seq;
    });
    await pause;
    const killed = await e.outside(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'idle in transaction'`);
    expect(killed).toEqual([{ ok: true }]);
    release();
    const results = await Promise.allSettled([first, second]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(failures.length).toBe(1);
    expect(isPgStorageError(failures[0])).toBe(true);
    expect(e.store.storage()).toMatchObject({ state: 'unavailable', since: expect.any(String) });
    expect(await e.outside(`SELECT count(*)::int AS n FROM events WHERE payload LIKE '%lost-%'`)).toEqual([{ n: 0 }]);

    const seq = await e.store.ingest(async (t) => (await t.events.append(userId, null, 'message', { tag: 'after' })).seq);
    expect(seq).toBe(1); // the lost batch's seqs were rolled back with it
    expect(e.store.storage()).toEqual({ state: 'ok' });
    off();
  });

  it('commits a relaxed transaction', async () => {
    await e.store.tx((t) => t.users.setDisabled(userId, true), { relaxed: true });
    expect(await e.outside(`SELECT disabled FROM users WHERE id = '${userId}'`)).toEqual([{ disabled: true }]);
  });

  it('refuses to open a database newer than the build', async () => {
    expect(isPostgresUrl(e.location)).toBe(true);
    expect(isPostgresUrl('/var/lib/switchboard')).toBe(false);
    await e.outside(`INSERT INTO schema_migrations (version, name) VALUES (${PG_MIGRATIONS.length + 1}, 'future')`);
    await expect(openPgStore(e.location)).rejects.toThrow(/newer than this build supports/);
  });
});
