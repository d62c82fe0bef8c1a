/**
 * PostgreSQL-only behaviour of the Store (pg/store.ts; docs/architecture.md § Storage engines): a batch whose
 * connection is lost fails as a whole, its listeners hear it and the storage state says so until the next commit;
 * units it cannot even begin a transaction for fail at once; a relaxed transaction commits; a database newer than the
 * build is refused at open.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgresUrl } from '../../service/db/pg/client.ts';
import { PG_MIGRATIONS } from '../../service/db/pg/migrations.ts';
import { isPgStorageError, openPgStore } from '../../service/db/pg/store.ts';
import { PG_ADMIN_URL } from '../helpers/pg.ts';
import { openEngine, type EngineUnderTest } from './engines.ts';

describe('the PostgreSQL store', () => {
  let e: EngineUnderTest;
  let userId: string;
  beforeAll(async () => {
    e = await openEngine('postgres');
    userId = (await e.store.read.users.create('u')).id;
  });
  afterAll(() => e?.close());

  // postgres.js 3.4.9 threw outside any promise here (a write queued for the terminated connection, connection.js
  // nextWrite; porsager/postgres#1154, #1208): patches/postgres+3.4.9.patch fails those writes' queries instead.
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

describe('a PostgreSQL store whose database is unreachable', () => {
  it('rejects the units it cannot begin a transaction for, and says the storage is unavailable', async () => {
    const e = await openEngine('postgres');
    const failures: Error[] = [];
    e.store.onCommitFailure((err) => failures.push(err));
    const name = new URL(e.location).pathname.slice(1);
    const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => undefined });
    await admin.unsafe(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
    await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name}`;
    try {
      const units = [1, 2, 3].map(() => e.store.ingest(async (t) => t.users.count()));
      const results = await Promise.allSettled(units);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(failures.length).toBeGreaterThanOrEqual(1);
      expect(e.store.storage().state).toBe('unavailable');
    } finally {
      await admin.unsafe(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS true`);
      await admin.end();
      await e.close();
    }
  });
});
