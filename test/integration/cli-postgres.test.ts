/**
 * `switchboard token` and `switchboard user` on a real PostgreSQL (issue 26 item 3: every CLI command on the store
 * takes `--database`), through the real CLI, on a fresh database of this run: the commands that read refuse a
 * database without Switchboard's schema and create nothing; `token create` creates the schema and a local user;
 * tokens are kept hashed (the token itself is in no row), listed, revoked; users are created, disabled and enabled;
 * the password of the URL is in no output; and the data dir's SQLite file is never created.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isWellFormedToken } from '../../service/auth/api-tokens.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { runCli } from '../helpers/service-process.ts';

describe('token and user on PostgreSQL', { timeout: 120_000 }, () => {
  let db: TestDatabase;
  let dataDir: string;
  /** The database's URL with a password in it (trust auth ignores it): it must show up nowhere. */
  let url: string;
  const PASSWORD = 'c0rrect-h0rse-battery';
  const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir, '--database', url]);
  const outputs: string[] = [];
  const ok = async (...args: string[]) => {
    const res = await cli(...args);
    outputs.push(res.stdout, res.stderr);
    expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(0);
    return res.stdout;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    const u = new URL(db.url);
    u.password = PASSWORD;
    url = u.toString();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-cli-pg-'));
  });
  afterAll(async () => {
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses to read a database without the schema, and creates nothing in it', async () => {
    for (const args of [['user', 'list'], ['token', 'list', '--user', 'ops'], ['token', 'revoke', 'x']]) {
      const res = await cli(...args);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stderr).toBe(`switchboard: no Switchboard database at ${url.replace(PASSWORD, '***')}\n`);
      outputs.push(res.stdout, res.stderr);
    }
    expect(await db.sql`SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`).toEqual([]);
  });

  it('creates, lists and revokes tokens kept hashed, and manages users', async () => {
    const token = (await ok('token', 'create', '--user', 'ops', '--name', 'deploy')).trim();
    expect(isWellFormedToken(token)).toBe(true);
    const [row] = await db.sql<Array<{ id: string; hash: string; prefix: string; name: string; user: string }>>`
      SELECT t.id, t.hash, t.prefix, t.name, u.name AS user FROM api_tokens t JOIN users u ON u.id = t.user_id`;
    expect(row).toMatchObject({ hash: createHash('sha256').update(token).digest('hex'), prefix: token.slice(0, 10), name: 'deploy', user: 'ops' });
    // The token itself is in no column of any row.
    const dump = JSON.stringify(await db.sql`SELECT row_to_json(t)::text AS r FROM api_tokens t`);
    expect(dump).not.toContain(token);

    const listed = await ok('token', 'list', '--user', 'ops');
    expect(listed.split('\n')[0]).toMatch(/^ID\s+NAME\s+PREFIX\s+CREATED\s+LAST USED$/);
    expect(listed).toContain(row!.id);
    expect(listed).toContain(token.slice(0, 10));

    const userId = (await ok('user', 'create', 'ann')).trim();
    const users = await ok('user', 'list');
    expect(users).toMatch(new RegExp(`^ann\\s+local\\s+${userId}\\s+active`, 'm'));
    expect(users).toMatch(/^ops\s+local\s+\S+\s+active/m);
    expect(await ok('user', 'disable', 'ann')).toBe('disabled ann\n');
    expect(await db.sql`SELECT disabled FROM users WHERE id = ${userId}`).toEqual([{ disabled: true }]);
    expect(await ok('user', 'enable', '--id', userId)).toBe('enabled ann\n');
    expect(await db.sql`SELECT disabled FROM users WHERE id = ${userId}`).toEqual([{ disabled: false }]);
    const again = await cli('user', 'create', 'ann');
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('switchboard: a local user named "ann" already exists\n');

    expect(await ok('token', 'revoke', row!.id)).toBe(`revoked ${row!.id}\n`);
    expect((await db.sql<Array<{ revoked: boolean }>>`SELECT revoked_at IS NOT NULL AS revoked FROM api_tokens WHERE id = ${row!.id}`)[0]!.revoked).toBe(true);
    expect((await ok('token', 'list', '--user', 'ops')).trim().split('\n')).toHaveLength(1); // the header only

    for (const out of outputs) expect(out).not.toContain(PASSWORD);
    expect(fs.existsSync(path.join(dataDir, 'switchboard.db'))).toBe(false);
  });
});
