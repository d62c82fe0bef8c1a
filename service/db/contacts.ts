/**
 * Contacts table: people and groups a connection knows, with PN and LID where known (interface-spec §2.4).
 */
import { flagOf, type Db } from './database.ts';

/** The spec's Contact item (§2.4). */
export interface Contact {
  jid: string;
  name: string;
  phoneNumber: string;
  isGroup: boolean;
}

/** A row of `list` as either engine returns it (`is_group`: SQLite 0/1, PostgreSQL boolean). */
export interface ContactRawRow {
  jid: string;
  name: string | null;
  push_name: string | null;
  phone_number: string | null;
  is_group: number | boolean;
}

/** The Contact of a raw `contacts` row: its saved name, else its push name, else ""; no phone number is "". */
export const contactOfRow = (r: ContactRawRow): Contact => ({
  jid: r.jid,
  name: r.name ?? r.push_name ?? '',
  phoneNumber: r.phone_number ?? '',
  isGroup: flagOf(r.is_group),
});

export function contactsRepo(db: Db) {
  const q = {
    upsert: db.prepare(
      `INSERT INTO contacts (connection_id, jid, lid, name, push_name, phone_number, is_group)
       VALUES (@connectionId, @jid, @lid, @name, @pushName, @phoneNumber, @isGroup)
       ON CONFLICT(connection_id, jid) DO UPDATE SET
         lid = COALESCE(excluded.lid, lid), name = COALESCE(excluded.name, name),
         push_name = COALESCE(excluded.push_name, push_name), phone_number = COALESCE(excluded.phone_number, phone_number)`,
    ),
    has: db.prepare(`SELECT 1 FROM contacts WHERE connection_id = ? AND jid = ?`),
    byLid: db.prepare(`SELECT jid FROM contacts WHERE connection_id = ? AND lid = ?`),
    nameOf: db.prepare(`SELECT COALESCE(name, push_name) AS name FROM contacts WHERE connection_id = ? AND jid = ?`),
    names: db.prepare(`SELECT name, push_name FROM contacts WHERE connection_id = ? AND jid = ?`),
    userJids: db.prepare(
      `SELECT jid FROM contacts WHERE connection_id = ? AND is_group = 0 AND jid LIKE '%@s.whatsapp.net' ORDER BY jid`,
    ),
    list: db.prepare(
      `SELECT jid, name, push_name, phone_number, is_group FROM contacts WHERE connection_id = ?
       ORDER BY COALESCE(name, push_name, jid) COLLATE NOCASE, jid LIMIT ? OFFSET ?`,
    ),
  };
  return {
    /** Creates or merges a contact; null fields keep what is stored. */
    upsert(
      connectionId: string,
      c: { jid: string; lid?: string | null; name?: string | null; pushName?: string | null; phoneNumber?: string | null; isGroup?: boolean },
    ): void {
      q.upsert.run({
        connectionId,
        jid: c.jid,
        lid: c.lid ?? null,
        name: c.name ?? null,
        pushName: c.pushName ?? null,
        phoneNumber: c.phoneNumber ?? null,
        isGroup: c.isGroup ? 1 : 0,
      });
    },
    has(connectionId: string, jid: string): boolean {
      return q.has.get(connectionId, jid) !== undefined;
    },
    /** PN JID of the contact known under this LID JID, if any. */
    jidForLid(connectionId: string, lid: string): string | undefined {
      return (q.byLid.get(connectionId, lid) as { jid: string } | undefined)?.jid;
    },
    /** Saved name, else push name, of a contact; undefined when neither is known. */
    nameOf(connectionId: string, jid: string): string | undefined {
      return (q.nameOf.get(connectionId, jid) as { name: string | null } | undefined)?.name ?? undefined;
    },
    /** The saved name and the push name of a contact (each null when unknown); undefined for an unknown contact. */
    profileNames(connectionId: string, jid: string): { name: string | null; pushName: string | null } | undefined {
      const r = q.names.get(connectionId, jid) as { name: string | null; push_name: string | null } | undefined;
      return r && { name: r.name, pushName: r.push_name };
    },
    /** The phone-number JIDs of the connection's individual contacts (no groups, no LID-only contacts). */
    userJids(connectionId: string): string[] {
      return (q.userJids.all(connectionId) as Array<{ jid: string }>).map((r) => r.jid);
    },
    list(connectionId: string, opts: { limit: number; offset: number }): Contact[] {
      return (q.list.all(connectionId, opts.limit, opts.offset) as ContactRawRow[]).map(contactOfRow);
    },
  };
}
