/**
 * Users table. A user owns connections, tokens and an event log; CLI users are identified by name,
 * identity-provider users by their `iss|sub` subject.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from './database.ts';
import { nowIso } from './database.ts';

export interface User {
  id: string;
  name: string;
  email: string | null;
  disabled: boolean;
  createdAt: string;
}

interface RawRow {
  id: string;
  name: string;
  email: string | null;
  disabled: number;
  created_at: string;
}

const toUser = (r: RawRow): User => ({ id: r.id, name: r.name, email: r.email, disabled: r.disabled === 1, createdAt: r.created_at });

export type UsersRepo = ReturnType<typeof usersRepo>;

export function usersRepo(db: Db) {
  const q = {
    get: db.prepare(`SELECT id, name, email, disabled, created_at FROM users WHERE id = ?`),
    byName: db.prepare(`SELECT id, name, email, disabled, created_at FROM users WHERE name = ?`),
    list: db.prepare(`SELECT id, name, email, disabled, created_at FROM users ORDER BY created_at, name`),
    insert: db.prepare(`INSERT INTO users (id, name, email, created_at) VALUES (?, ?, ?, ?)`),
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
    setDisabled(id: string, disabled: boolean): void {
      q.setDisabled.run(disabled ? 1 : 0, id);
    },
  };
}
