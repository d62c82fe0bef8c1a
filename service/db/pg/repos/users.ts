/** PostgreSQL twin of service/db/users.ts (same methods, same results, Promises). */
import { randomUUID } from 'node:crypto';
import { nowIso } from '../../database.ts';
import { jwtUserLabel, userOfRow, type User, type UserRawRow, type usersRepo } from '../../users.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

const COLUMNS = ['id', 'kind', 'name', 'email', 'issuer', 'subject', 'disabled', 'created_at'];

export function pgUsersRepo({ sql }: PgScope): Async<ReturnType<typeof usersRepo>> {
  const one = async (rows: Promise<UserRawRow[]>) => {
    const [r] = await rows;
    return r && userOfRow(r);
  };
  const cols = sql(COLUMNS);
  return {
    get(id: string): Promise<User | undefined> {
      return one(sql<UserRawRow[]>`SELECT ${cols} FROM users WHERE id = ${id}`);
    },
    byLocalName(name: string): Promise<User | undefined> {
      return one(sql<UserRawRow[]>`SELECT ${cols} FROM users WHERE kind = 'local' AND name = ${name}`);
    },
    owner(): Promise<User | undefined> {
      return one(sql<UserRawRow[]>`SELECT ${cols} FROM users WHERE kind = 'local' ORDER BY created_at, ord LIMIT 1`);
    },
    async list(): Promise<User[]> {
      return (await sql<UserRawRow[]>`SELECT ${cols} FROM users ORDER BY created_at, name`).map(userOfRow);
    },
    /** @throws PostgresError 23505 (unique_violation) when a local user has this name. */
    async create(name: string, email: string | null = null): Promise<User> {
      const [r] = await sql<UserRawRow[]>`INSERT INTO users (id, kind, name, email, created_at)
        VALUES (${randomUUID()}, 'local', ${name}, ${email}, ${nowIso()}) RETURNING ${cols}`;
      return userOfRow(r!);
    },
    async ensure(name: string): Promise<User> {
      return (await this.byLocalName(name)) ?? this.create(name);
    },
    byJwtIdentity(issuer: string, sub: string): Promise<User | undefined> {
      return one(sql<UserRawRow[]>`SELECT ${cols} FROM users WHERE kind = 'jwt' AND issuer = ${issuer} AND subject = ${sub}`);
    },
    async ensureJwtUser(
      issuer: string,
      sub: string,
      claims: { email?: string | null; preferredName?: string | null } = {},
    ): Promise<User> {
      const existing = await this.byJwtIdentity(issuer, sub);
      if (existing) return existing;
      const label = jwtUserLabel(sub, claims);
      const [r] = await sql<UserRawRow[]>`INSERT INTO users (id, kind, name, email, issuer, subject, created_at)
        VALUES (${randomUUID()}, 'jwt', ${label}, ${claims.email ?? null}, ${issuer}, ${sub}, ${nowIso()}) RETURNING ${cols}`;
      return userOfRow(r!);
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
