/** The `contacts` table on PostgreSQL: pgContactsRepo is contactsRepo (service/db/contacts.ts), asynchronous. */
import { pgText } from './message-scope.ts';
import type { PgScope } from './scope.ts';
import { contactOfRow, type Contact, type ContactRawRow } from '../../contacts.ts';

export function pgContactsRepo({ sql }: PgScope) {
  return {
    /** contactsRepo.upsert: creates or merges a contact; null fields keep what is stored. */
    async upsert(
      connectionId: string,
      c: {
        jid: string;
        lid?: string | null;
        name?: string | null;
        pushName?: string | null;
        phoneNumber?: string | null;
        isGroup?: boolean;
      },
    ): Promise<void> {
      await sql`
        INSERT INTO contacts AS t (connection_id, jid, lid, name, push_name, phone_number, is_group)
        VALUES (${connectionId}, ${c.jid}, ${c.lid ?? null}, ${pgText(c.name ?? null)}, ${pgText(c.pushName ?? null)}, ${c.phoneNumber ?? null}, ${!!c.isGroup})
        ON CONFLICT (connection_id, jid) DO UPDATE SET
          lid = COALESCE(excluded.lid, t.lid), name = COALESCE(excluded.name, t.name),
          push_name = COALESCE(excluded.push_name, t.push_name), phone_number = COALESCE(excluded.phone_number, t.phone_number)`;
    },
    async has(connectionId: string, jid: string): Promise<boolean> {
      const rows = await sql`SELECT 1 FROM contacts WHERE connection_id = ${connectionId} AND jid = ${jid}`;
      return rows.length > 0;
    },
    /** contactsRepo.jidForLid (the first by JID when several share the LID, as SQLite's scan finds it). */
    async jidForLid(connectionId: string, lid: string): Promise<string | undefined> {
      const [r] = await sql<
        Array<{ jid: string }>
      >`SELECT jid FROM contacts WHERE connection_id = ${connectionId} AND lid = ${lid} ORDER BY jid LIMIT 1`;
      return r?.jid;
    },
    /** contactsRepo.nameOf. */
    async nameOf(connectionId: string, jid: string): Promise<string | undefined> {
      const [r] = await sql<Array<{ name: string | null }>>`
        SELECT COALESCE(name, push_name) AS name FROM contacts WHERE connection_id = ${connectionId} AND jid = ${jid}`;
      return r?.name ?? undefined;
    },
    /** contactsRepo.profileNames. */
    async profileNames(
      connectionId: string,
      jid: string,
    ): Promise<{ name: string | null; pushName: string | null } | undefined> {
      const [r] = await sql<Array<{ name: string | null; push_name: string | null }>>`
        SELECT name, push_name FROM contacts WHERE connection_id = ${connectionId} AND jid = ${jid}`;
      return r && { name: r.name, pushName: r.push_name };
    },
    /** contactsRepo.userJids. */
    async userJids(connectionId: string): Promise<string[]> {
      const rows = await sql<Array<{ jid: string }>>`
        SELECT jid FROM contacts WHERE connection_id = ${connectionId} AND NOT is_group AND jid LIKE '%@s.whatsapp.net' ORDER BY jid`;
      return rows.map((r) => r.jid);
    },
    /** contactsRepo.list: by name without ASCII case (SQLite's NOCASE: lower() under "C" folds ASCII only), then JID. */
    async list(connectionId: string, opts: { limit: number; offset: number }): Promise<Contact[]> {
      const rows = await sql<ContactRawRow[]>`
        SELECT jid, name, push_name, phone_number, is_group FROM contacts WHERE connection_id = ${connectionId}
        ORDER BY lower(COALESCE(name, push_name, jid) COLLATE "C") COLLATE "C", jid LIMIT ${opts.limit} OFFSET ${opts.offset}`;
      return rows.map(contactOfRow);
    },
  };
}
