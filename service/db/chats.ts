/**
 * Chats table: one row per chat of a connection with its last message and unread counter (interface-spec §2.3).
 */
import type { Db } from './database.ts';

/** The spec's Chat item (§2.3). */
export interface Chat {
  id: string;
  name: string;
  isGroup: boolean;
  /**
   * The newest stored message; when none is stored, `{ body: "", timestamp: <last activity the phone reported, else 0>,
   * fromMe: false }` (chats known from history-sync metadata only). Never null (the spec types it as an object).
   */
  lastMessage: { body: string; timestamp: number; fromMe: boolean };
  unread: number;
}

interface RawRow {
  id: string;
  name: string | null;
  is_group: number;
  unread: number;
  last_ts: number | null;
  last_body: string | null;
  last_from_me: number | null;
  contact_name: string | null;
}

export type ChatsRepo = ReturnType<typeof chatsRepo>;

export function chatsRepo(db: Db) {
  const q = {
    // last_from_me IS NULL: no message of the chat is stored; last_ts then holds the chat's last activity as the
    // phone reported it (history sync conversationTimestamp), replaced by the first stored message (touch).
    upsertMeta: db.prepare(
      `INSERT INTO chats (connection_id, id, lid, name, is_group, unread, last_ts)
       VALUES (@connectionId, @id, @lid, @name, @isGroup, COALESCE(@unread, 0), @activityTs)
       ON CONFLICT(connection_id, id) DO UPDATE SET
         lid = COALESCE(excluded.lid, lid), name = COALESCE(excluded.name, name),
         unread = COALESCE(@unread, unread),
         last_ts = CASE WHEN last_from_me IS NULL AND @activityTs IS NOT NULL THEN MAX(COALESCE(last_ts, 0), @activityTs)
                   ELSE last_ts END`,
    ),
    touch: db.prepare(
      `INSERT INTO chats (connection_id, id, is_group, unread, last_ts, last_body, last_from_me)
       VALUES (@connectionId, @id, @isGroup, @unreadDelta, @ts, @body, @fromMe)
       ON CONFLICT(connection_id, id) DO UPDATE SET
         unread = unread + @unreadDelta,
         last_body    = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @body ELSE last_body END,
         last_ts      = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @ts ELSE last_ts END,
         last_from_me = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @fromMe ELSE last_from_me END`,
    ),
    markRead: db.prepare(`UPDATE chats SET unread = 0 WHERE connection_id = ? AND id = ?`),
    setUnread: db.prepare(`UPDATE chats SET unread = ? WHERE connection_id = ? AND id = ? AND unread <> ?`),
    unread: db.prepare(`SELECT unread FROM chats WHERE connection_id = ? AND id = ?`),
    list: db.prepare(
      `SELECT c.id, c.name, c.is_group, c.unread, c.last_ts, c.last_body, c.last_from_me,
              COALESCE(k.name, k.push_name) AS contact_name
       FROM chats c LEFT JOIN contacts k ON k.connection_id = c.connection_id AND k.jid = c.id
       WHERE c.connection_id = @connectionId AND (@unreadOnly = 0 OR c.unread > 0)
         AND (@like IS NULL OR c.name LIKE @like ESCAPE '\\' OR k.name LIKE @like ESCAPE '\\'
              OR k.push_name LIKE @like ESCAPE '\\' OR c.id LIKE @like ESCAPE '\\')
         AND (@includeStatus = 1 OR c.id <> 'status@broadcast')
       ORDER BY c.last_ts IS NULL, c.last_ts DESC, c.id LIMIT @limit OFFSET @offset`,
    ),
  };

  return {
    /**
     * Creates the chat or updates its name/lid; `unread` replaces the counter when given (history sync);
     * `activityTs` (unix seconds) is the chat's last activity as the phone reported it, shown as `lastMessage.timestamp`
     * while no message of the chat is stored.
     */
    upsertMeta(
      connectionId: string,
      c: { id: string; lid?: string | null; name?: string | null; isGroup: boolean; unread?: number | null; activityTs?: number | null },
    ): void {
      q.upsertMeta.run({
        connectionId,
        id: c.id,
        lid: c.lid ?? null,
        name: c.name ?? null,
        isGroup: c.isGroup ? 1 : 0,
        unread: c.unread ?? null,
        activityTs: c.activityTs ?? null,
      });
    },
    /** Records a message in its chat: newer messages become `lastMessage`; `unreadDelta` adds to the counter. */
    touch(connectionId: string, m: { chatId: string; isGroup: boolean; timestamp: number; body: string; fromMe: boolean; unreadDelta: number }): void {
      q.touch.run({
        connectionId,
        id: m.chatId,
        isGroup: m.isGroup ? 1 : 0,
        unreadDelta: m.unreadDelta,
        ts: m.timestamp,
        body: m.body,
        fromMe: m.fromMe ? 1 : 0,
      });
    },
    markRead(connectionId: string, chatId: string): void {
      q.markRead.run(connectionId, chatId);
    },
    /** Sets the unread counter (read receipts from the account's other devices). Returns true when it changed. */
    setUnread(connectionId: string, chatId: string, unread: number): boolean {
      return q.setUnread.run(unread, connectionId, chatId, unread).changes > 0;
    },
    /** The chat's unread counter; undefined for an unknown chat. */
    unread(connectionId: string, chatId: string): number | undefined {
      return (q.unread.get(connectionId, chatId) as { unread: number } | undefined)?.unread;
    },
    /**
     * Chats by most recent message; `offset` counts chats; the status posts pseudo-chat (`status@broadcast`) only
     * with `includeStatus`. `q` keeps the chats whose name, contact name, push name or JID contains it
     * (case-insensitive for ASCII; a phone number matches its JID's digits).
     */
    list(
      connectionId: string,
      opts: { limit: number; offset: number; unreadOnly: boolean; includeStatus?: boolean; q?: string | undefined },
    ): Chat[] {
      const term = opts.q?.trim().replace(/^\+/, '');
      const like = term ? `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
      const rows = q.list.all({
        connectionId,
        limit: opts.limit,
        offset: opts.offset,
        unreadOnly: opts.unreadOnly ? 1 : 0,
        includeStatus: opts.includeStatus ? 1 : 0,
        like,
      }) as RawRow[];
      return rows.map((r) => ({
        id: r.id,
        name: r.name ?? r.contact_name ?? r.id.split('@')[0]!,
        isGroup: r.is_group === 1,
        lastMessage:
          r.last_from_me === null
            ? { body: '', timestamp: r.last_ts ?? 0, fromMe: false }
            : { body: r.last_body ?? '', timestamp: r.last_ts ?? 0, fromMe: r.last_from_me === 1 },
        unread: r.unread,
      }));
    },
  };
}
