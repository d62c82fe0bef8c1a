/**
 * PostgreSQL schema migrations (service/db/pg/migrations.ts): applied once even when several hosts start together,
 * recorded in schema_migrations, and a database newer than the build (or another application's) is refused untouched.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openPg } from '../../service/db/pg/client.ts';
import { PG_MIGRATIONS, PgSchemaError, migratePg } from '../../service/db/pg/migrations.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

let db: TestDatabase | undefined;
afterEach(async () => {
  await db?.drop();
  db = undefined;
});

describe('PostgreSQL migrations', () => {
  it('apply every migration once, even from concurrent hosts', async () => {
    db = await createTestDatabase();
    const hosts = [openPg(db.url, { max: 1 }), openPg(db.url, { max: 1 }), openPg(db.url, { max: 1 })];
    try {
      const applied = await Promise.all(hosts.map((h) => migratePg(h)));
      const all = PG_MIGRATIONS.map((m) => m.version);
      expect(applied.filter((a) => a.length > 0)).toEqual([all]);
      expect(applied.flat().sort()).toEqual(all);
    } finally {
      await Promise.all(hosts.map((h) => h.end()));
    }
    const rows = await db.sql<Array<{ version: number; name: string }>>`SELECT version, name FROM schema_migrations ORDER BY version`;
    expect(rows.map((r) => [r.version, r.name])).toEqual(PG_MIGRATIONS.map((m) => [m.version, m.name]));
    expect(await migratePg(db.sql)).toEqual([]);
  });

  it('appends a new migration to an existing database', async () => {
    db = await createTestDatabase();
    await migratePg(db.sql);
    const next = [...PG_MIGRATIONS, { version: PG_MIGRATIONS.length + 1, name: 'extra', sql: 'CREATE TABLE extra (x int)' }];
    expect(await migratePg(db.sql, next)).toEqual([PG_MIGRATIONS.length + 1]);
    expect(await db.sql`SELECT * FROM extra`).toEqual([]);
  });

  it('refuses a database whose schema is newer than the build, and one of another application', async () => {
    db = await createTestDatabase();
    await migratePg(db.sql);
    await db.sql`INSERT INTO schema_migrations (version, name) VALUES (${PG_MIGRATIONS.length + 1}, 'future')`;
    await expect(migratePg(db.sql)).rejects.toThrow(PgSchemaError);
    await expect(migratePg(db.sql)).rejects.toThrow(/newer than this build supports/);

    const other = await createTestDatabase();
    try {
      await other.sql`CREATE TABLE customers (id int)`;
      await expect(migratePg(other.sql)).rejects.toThrow(/not Switchboard's/);
      expect(await other.sql`SELECT to_regclass('schema_migrations') AS t`).toEqual([{ t: null }]);
    } finally {
      await other.drop();
    }
  });
});
