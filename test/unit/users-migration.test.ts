/**
 * The identity-namespace migration (issue 20 item 4) on a real SQLite file written with the schema before it:
 * JWT users (a `subject` "iss|sub") become kind `jwt` with issuer and sub split at the first "|", everyone else
 * kind `local`; nothing that references a user is lost (the rebuild runs with foreign keys off, so the DROP TABLE
 * cascades into nothing); afterwards foreign keys are on again, a local user and a JWT user may share a name, two
 * local users may not, and a failing migration leaves the file at its old version.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../service/db/database.ts';
import { migrations } from '../../service/db/migrations.ts';
import { createStore } from '../../service/db/store.ts';

/** Index of the identity migration, found by content so the test survives migrations appended around it. */
const IDENTITY = migrations.findIndex((m) => m.includes('users_new'));

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-users-migration-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A database file at the schema just before the identity migration, as openDatabase would have left it. */
function oldDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  for (let v = 0; v < IDENTITY; v++) db.exec(migrations[v]!);
  db.pragma(`user_version = ${IDENTITY}`);
  db.pragma(`application_id = ${0x53574244}`);
  return db;
}

const at = '2026-01-01T00:00:00.000Z';

describe('identity migration', () => {
  it('exists', () => expect(IDENTITY).toBeGreaterThan(0));

  it('moves existing rows into the two namespaces and keeps everything that references them', () => {
    const file = path.join(dir, 'switchboard.db');
    const old = oldDatabase(file);
    const user = old.prepare(`INSERT INTO users (id, name, email, subject, disabled, created_at) VALUES (?, ?, ?, ?, ?, ?)`);
    user.run('u-local', 'ops', null, null, 0, at);
    user.run('u-jwt', 'ops [1a2b3c4d]', 'ops@example.test', 'https://idp.example.test/|auth0|123', 1, at);
    user.run('u-jwt2', 'carol', null, 'https://idp.example.test/|carol', 0, at);
    old.prepare(`UPDATE users SET last_event_seq = 7 WHERE id = 'u-jwt'`).run();
    for (const [id, owner] of [['c1', 'u-local'], ['c2', 'u-jwt']]) {
      old
        .prepare(
          `INSERT INTO connections (id, user_id, worker_id, session_name, status, created_at, updated_at) VALUES (?, ?, 'w', ?, 'stopped', ?, ?)`,
        )
        .run(id, owner, `s-${id}`, at, at);
      old
        .prepare(`INSERT INTO api_tokens (id, user_id, name, prefix, hash, created_at) VALUES (?, ?, 'cli', 'wh_x', ?, ?)`)
        .run(`t-${id}`, owner, `hash-${id}`, at);
      old
        .prepare(`INSERT INTO events (user_id, seq, connection_id, type, payload, created_at) VALUES (?, 1, ?, 'x', '{}', ?)`)
        .run(owner, id, at);
    }
    old.close();

    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(migrations.length);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    const store = createStore(db);
    expect(store.users.get('u-local')).toMatchObject({ kind: 'local', name: 'ops', issuer: null, subject: null });
    expect(store.users.get('u-jwt')).toMatchObject({
      kind: 'jwt',
      name: 'ops [1a2b3c4d]',
      email: 'ops@example.test',
      issuer: 'https://idp.example.test/',
      subject: 'auth0|123',
      disabled: true,
    });
    expect(store.users.byJwtIdentity('https://idp.example.test/', 'carol')!.id).toBe('u-jwt2');
    expect(store.users.byLocalName('ops')!.id).toBe('u-local');
    expect(store.users.byLocalName('carol')).toBeUndefined();
    const count = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    expect([count('connections'), count('api_tokens'), count('events')]).toEqual([2, 2, 2]);
    expect(db.prepare(`SELECT last_event_seq FROM users WHERE id = 'u-jwt'`).get()).toEqual({ last_event_seq: 7 });

    // The references still point at the rebuilt table: deleting a user cascades, an unknown owner is refused.
    db.prepare(`DELETE FROM users WHERE id = 'u-jwt'`).run();
    expect([count('connections'), count('api_tokens'), count('events')]).toEqual([1, 1, 1]);
    expect(() => store.tokens.insert({ id: 't-x', userId: 'nobody', name: 'x', prefix: 'wh_', hash: 'h' })).toThrow(
      /FOREIGN KEY/,
    );

    // Namespaces: a JWT label may equal a local name (and another label); local names stay unique.
    const squatter = store.users.ensureJwtUser('https://idp.example.test/', 'someone', { preferredName: 'ops' });
    expect(squatter).toMatchObject({ kind: 'jwt', name: 'ops' });
    expect(store.users.ensure('ops').id).toBe('u-local');
    expect(() => store.users.create('ops')).toThrow(/UNIQUE/);
    expect(store.users.ensureJwtUser('https://idp.example.test/', 'someone').id).toBe(squatter.id);
    expect(store.users.ensureJwtUser('https://other.example.test/', 'someone').id).not.toBe(squatter.id);
    db.close();
  });

  it('rolls back to the old version when a reference dangles, leaving the rows as they were', () => {
    const file = path.join(dir, 'switchboard.db');
    const old = oldDatabase(file);
    old.pragma('foreign_keys = OFF');
    old.prepare(`INSERT INTO users (id, name, created_at) VALUES ('u1', 'a', ?)`).run(at);
    old.prepare(`INSERT INTO api_tokens (id, user_id, name, prefix, hash, created_at) VALUES ('t', 'ghost', 'x', 'p', 'h', ?)`).run(at);
    old.close();
    expect(() => openDatabase(file)).toThrow(/dangling references/);
    const check = new Database(file);
    expect(check.pragma('user_version', { simple: true })).toBe(IDENTITY);
    expect(check.prepare(`SELECT id, name, subject FROM users`).all()).toEqual([{ id: 'u1', name: 'a', subject: null }]);
    check.close();
  });
});
