/**
 * Users table. A user owns connections, tokens and an event log; CLI users are identified by name,
 * identity-provider users by their `iss|sub` subject.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Db } from './database.ts';
import { nowIso } from './database.ts';

export interface User {
  id: string;
  name: string;
  email: string | null;
  disabled: boolean;
  /** Identity-provider subject `iss|sub` (JWT users); null for users created by name. */
  subject: string | null;
  createdAt: string;
}

interface RawRow {
  id: string;
  name: string;
  email: string | null;
  subject: string | null;
  disabled: number;
  created_at: string;
}

const toUser = (r: RawRow): User => ({
  id: r.id,
  name: r.name,
  email: r.email,
  disabled: r.disabled === 1,
  subject: r.subject,
  createdAt: r.created_at,
});

const COLUMNS = 'id, name, email, subject, disabled, created_at';

export type UsersRepo = ReturnType<typeof usersRepo>;

export function usersRepo(db: Db) {
  const q = {
    get: db.prepare(`SELECT ${COLUMNS} FROM users WHERE id = ?`),
    byName: db.prepare(`SELECT ${COLUMNS} FROM users WHERE name = ?`),
    bySubject: db.prepare(`SELECT ${COLUMNS} FROM users WHERE subject = ?`),
    list: db.prepare(`SELECT ${COLUMNS} FROM users ORDER BY created_at, name`),
    insert: db.prepare(`INSERT INTO users (id, name, email, created_at) VALUES (?, ?, ?, ?)`),
    insertWithSubject: db.prepare(`INSERT INTO users (id, name, email, subject, created_at) VALUES (?, ?, ?, ?, ?)`),
    count: db.prepare(`SELECT COUNT(*) AS n FROM users`),
    setDisabled: db.prepare(`UPDATE users SET disabled = ? WHERE id = ?`),
  };
  return {
    get(id: string): User | undefined {
      const r = q.get.get(id) as RawRow | undefined;
      return r && toUser(r);
    },
    byName(name: string): User | undefined {
      const r = q.byName.get(name) as RawRow | undefined;
      return r && toUser(r);
    },
    list(): User[] {
      return (q.list.all() as RawRow[]).map(toUser);
    },
    create(name: string, email: string | null = null): User {
      const id = randomUUID();
      q.insert.run(id, name, email, nowIso());
      return this.get(id)!;
    },
    /** The user with this name, created when missing. */
    ensure(name: string): User {
      return this.byName(name) ?? this.create(name);
    },
    bySubject(subject: string): User | undefined {
      const r = q.bySubject.get(subject) as RawRow | undefined;
      return r && toUser(r);
    },
    /**
     * The user of an identity-provider subject (`iss|sub`), created on first sight. Its name is the email,
     * else `preferredName`, else `sub`; a name another user already has gets a short hash of the subject appended.
     */
    ensureForSubject(subject: string, claims: { sub: string; email?: string | null; preferredName?: string | null }): User {
      const existing = this.bySubject(subject);
      if (existing) return existing;
      const base = (claims.email || claims.preferredName || claims.sub).slice(0, 200);
      const name = this.byName(base)
        ? `${base} [${createHash('sha256').update(subject).digest('hex').slice(0, 8)}]`
        : base;
      const id = randomUUID();
      q.insertWithSubject.run(id, name, claims.email ?? null, subject, nowIso());
      return this.get(id)!;
    },
    count(): number {
      return (q.count.get() as { n: number }).n;
    },
    setDisabled(id: string, disabled: boolean): void {
      q.setDisabled.run(disabled ? 1 : 0, id);
    },
  };
}
