/**
 * Users table. A user owns connections, tokens and an event log. Two namespaces that never meet:
 *
 * - `local` users (the CLI, the desktop app, tests) are keyed by their name, unique among local users;
 * - `jwt` users (identity-provider tokens, interface-spec §5) are keyed by issuer + `sub`; their name is only a label
 *   taken from the token's claims, which anyone at the provider may choose, so it is never used to find them.
 *
 * A local user and a JWT user may carry the same name; `byLocalName` only ever returns the local one.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from './database.ts';
import { flagOf, nowIso } from './database.ts';

export type UserKind = 'local' | 'jwt';

export interface User {
  id: string;
  kind: UserKind;
  /** Local users: the unique name. JWT users: a display label (email, preferred_username, name or sub). */
  name: string;
  email: string | null;
  disabled: boolean;
  /** JWT users: the token's `iss`; null for local users. */
  issuer: string | null;
  /** JWT users: the token's `sub`; null for local users. */
  subject: string | null;
  createdAt: string;
}

/** A `users` row as either engine returns it (`disabled`: SQLite 0/1, PostgreSQL boolean). */
export interface UserRawRow {
  id: string;
  kind: UserKind;
  name: string;
  email: string | null;
  issuer: string | null;
  subject: string | null;
  disabled: number | boolean;
  created_at: string;
}

/** The User of a raw `users` row. */
export const userOfRow = (r: UserRawRow): User => ({
  id: r.id,
  kind: r.kind,
  name: r.name,
  email: r.email,
  disabled: flagOf(r.disabled),
  issuer: r.issuer,
  subject: r.subject,
  createdAt: r.created_at,
});

const COLUMNS = 'id, kind, name, email, issuer, subject, disabled, created_at';

/** Longest stored name or label, in UTF-16 code units. */
export const MAX_USER_NAME = 200;

/** A usable local user name: 1-MAX_USER_NAME characters, no C0 control character. */
export function isValidUserName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_USER_NAME && ![...name].some((ch) => ch.charCodeAt(0) < 0x20);
}

/** The label of a new JWT user: `email`, else `preferredName`, else `sub` (its first MAX_USER_NAME characters). */
export function jwtUserLabel(sub: string, claims: { email?: string | null; preferredName?: string | null }): string {
  return [...(claims.email || claims.preferredName || sub)].slice(0, MAX_USER_NAME).join('');
}

export function usersRepo(db: Db) {
  const q = {
    get: db.prepare(`SELECT ${COLUMNS} FROM users WHERE id = ?`),
    byLocalName: db.prepare(`SELECT ${COLUMNS} FROM users WHERE kind = 'local' AND name = ?`),
    byJwtIdentity: db.prepare(`SELECT ${COLUMNS} FROM users WHERE kind = 'jwt' AND issuer = ? AND subject = ?`),
    list: db.prepare(`SELECT ${COLUMNS} FROM users ORDER BY created_at, name`),
    owner: db.prepare(`SELECT ${COLUMNS} FROM users WHERE kind = 'local' ORDER BY created_at, rowid LIMIT 1`),
    insertLocal: db.prepare(`INSERT INTO users (id, kind, name, email, created_at) VALUES (?, 'local', ?, ?, ?)`),
    insertJwt: db.prepare(
      `INSERT INTO users (id, kind, name, email, issuer, subject, created_at) VALUES (?, 'jwt', ?, ?, ?, ?, ?)`,
    ),
    count: db.prepare(`SELECT COUNT(*) AS n FROM users`),
    setDisabled: db.prepare(`UPDATE users SET disabled = ? WHERE id = ?`),
  };
  return {
    get(id: string): User | undefined {
      const r = q.get.get(id) as UserRawRow | undefined;
      return r && userOfRow(r);
    },
    /** The local user with this name (never a JWT user, whatever its label). */
    byLocalName(name: string): User | undefined {
      const r = q.byLocalName.get(name) as UserRawRow | undefined;
      return r && userOfRow(r);
    },
    /**
     * The machine's owner: the first local user created in this data dir (the desktop's `operator`, or the first
     * user `switchboard token create` made). Only the owner may change the machine's settings (docs/settings.md).
     */
    owner(): User | undefined {
      const r = q.owner.get() as UserRawRow | undefined;
      return r && userOfRow(r);
    },
    list(): User[] {
      return (q.list.all() as UserRawRow[]).map(userOfRow);
    },
    /** A new local user. @throws SqliteError (SQLITE_CONSTRAINT_UNIQUE) when a local user has this name. */
    create(name: string, email: string | null = null): User {
      const id = randomUUID();
      q.insertLocal.run(id, name, email, nowIso());
      return this.get(id)!;
    },
    /** The local user with this name, created when missing. */
    ensure(name: string): User {
      return this.byLocalName(name) ?? this.create(name);
    },
    /** The JWT user of `issuer` + `sub`. */
    byJwtIdentity(issuer: string, sub: string): User | undefined {
      const r = q.byJwtIdentity.get(issuer, sub) as UserRawRow | undefined;
      return r && userOfRow(r);
    },
    /**
     * The JWT user of `issuer` + `sub`, created on first sight with the label `email`, else `preferredName`, else
     * `sub` (its first MAX_USER_NAME characters). The label is not unique and is never used to find the user.
     */
    ensureJwtUser(
      issuer: string,
      sub: string,
      claims: { email?: string | null; preferredName?: string | null } = {},
    ): User {
      const existing = this.byJwtIdentity(issuer, sub);
      if (existing) return existing;
      const label = jwtUserLabel(sub, claims);
      const id = randomUUID();
      q.insertJwt.run(id, label, claims.email ?? null, issuer, sub, nowIso());
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
