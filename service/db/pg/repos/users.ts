/** PostgreSQL twin of service/db/users.ts (same methods, same results, Promises). */
import { randomUUID } from 'node:crypto';
import { nowIso } from '../../database.ts';
import { MAX_USER_NAME, type User, type UserKind, type usersRepo } from '../../users.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

interface RawRow {
  id: string;
  kind: UserKind;
  name: string;
  email: string | null;
  issuer: string | null;
  subject: string | null;
  disabled: boolean;
  created_at: string;
}

const toUser = (r: RawRow): User => ({
  id: r.id,
  kind: r.kind,
  name: r.name,
  email: r.email,
  disabled: r.disabled,
  issuer: r.issuer,
  subject: r.subject,
  createdAt: r.created_at,
});

const COLUMNS = ['id', 'kind', 'name', 'email', 'issuer', 'subject', 'disabled', 'created_at'];

export function pgUsersRepo({ sql }: PgScope): Async<ReturnType<typeof usersRepo>> {
  const one = async (rows: Promise<RawRow[]>) => {
    const [r] = await rows;
    return r && toUser(r);
  };
  const cols = sql(COLUMNS);
  return {
    get(id: string): Promise<User | undefined> {
      return one(sql<RawRow[]>`SELECT ${cols} FROM users WHERE id = ${id}`);
    },
    byLocalName(name: string): Promise<User | undefined> {
      return one(sql<RawRow[]>`SELECT ${cols} FROM users WHERE kind = 'local' AND name = ${name}`);
    },
    owner(): Promise<User | undefined> {
      return one(sql<RawRow[]>`SELECT ${cols} FROM users WHERE kind = 'local' ORDER BY created_at, ord LIMIT 1`);
    },
    async list(): Promise<User[]> {
      return (await sql<RawRow[]>`SELECT ${cols} FROM users ORDER BY created_at, name`).map(toUser);
    },
    /** @throws PostgresError 23505 (unique_violation) when a local user has this name. */
    async create(name: string, email: string | null = null): Promise<User> {
      const [r] = await sql<RawRow[]>`INSERT INTO users (id, kind, name, email, created_at)
        VALUES (${randomUUID()}, 'local', ${name}, ${email}, ${nowIso()}) RETURNING ${cols}`;
      return toUser(r!);
    },
    async ensure(name: string): Promise<User> {
      return (await this.byLocalName(name)) ?? this.create(name);
    },
    byJwtIdentity(issuer: string, sub: string): Promise<User | undefined> {
      return one(sql<RawRow[]>`SELECT ${cols} FROM users WHERE kind = 'jwt' AND issuer = ${issuer} AND subject = ${sub}`);
    },
    async ensureJwtUser(
      issuer: string,
      sub: string,
      claims: { email?: string | null; preferredName?: string | null } = {},
    ): Promise<User> {
      const existing = await this.byJwtIdentity(issuer, sub);
      if (existing) return existing;
      const label = [...(claims.email || claims.preferredName || sub)].slice(0, MAX_USER_NAME).join('');
      const [r] = await sql<RawRow[]>`INSERT INTO users (id, kind, name, email, issuer, subject, created_at)
        VALUES (${randomUUID()}, 'jwt', ${label}, ${claims.email ?? null}, ${issuer}, ${sub}, ${nowIso()}) RETURNING ${cols}`;
      return toUser(r!);
    },
    async count(): Promise<number> {
      const [r] = await sql<Array<{ n: number }>>`SELECT count(*) AS n FROM users`;
      return r!.n;
    },
    async setDisabled(id: string, disabled: boolean): Promise<void> {
      await sql`UPDATE users SET disabled = ${disabled} WHERE id = ${id}`;
    },
  };
}
