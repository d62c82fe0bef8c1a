/**
 * The `chats` table on PostgreSQL: pgChatsRepo is chatsRepo (service/db/chats.ts) method for method, asynchronous,
 * with the same rows, order and JSON. `listJson` renders in TypeScript: JSON.stringify of the Chat objects `list`
 * builds, whose key order is the route's ChatSchema (the bytes SQLite's format() writes).
 */
import { pgText } from './message-scope.ts';
import type { PgScope } from './scope.ts';
import { chatOfRow, likePatternOf, type Chat, type ChatListOptions, type ChatRawRow } from '../../chats.ts';
import type { MessageKindName } from '../../messages.ts';

export function pgChatsRepo({ sql }: PgScope) {
  /** SQLite's LIKE: case-insensitive for ASCII letters only (lower() under the "C" collation folds ASCII only). */
  const like = (column: ReturnType<typeof sql>, pattern: string) =>
    sql`lower(${column} COLLATE "C") LIKE lower(${pattern}::text COLLATE "C") ESCAPE '\\'`;

  async function list(connectionId: string, opts: ChatListOptions): Promise<Chat[]> {
    const pattern = likePatternOf(opts.q);
    const rows = await sql<ChatRawRow[]>`
      SELECT c.id, c.name, c.is_group, c.unread, c.last_ts, c.last_body, c.last_from_me, c.last_id, c.last_kind,
             COALESCE(k.name, k.push_name) AS contact_name
      FROM chats c LEFT JOIN contacts k ON k.connection_id = c.connection_id AND k.jid = c.id
      WHERE c.connection_id = ${connectionId} ${opts.unreadOnly ? sql`AND c.unread > 0` : sql``}
        ${
          pattern === null
            ? sql``
            : sql`AND (${like(sql`c.name`, pattern)} OR ${like(sql`k.name`, pattern)} OR ${like(sql`k.push_name`, pattern)}
                       OR ${like(sql`c.id`, pattern)})`
        }
        ${opts.includeStatus ? sql`` : sql`AND c.id <> 'status@broadcast'`}
      ORDER BY c.last_ts DESC NULLS LAST, c.id LIMIT ${opts.limit} OFFSET ${opts.offset}`;
    return rows.map(chatOfRow);
  }

  return {
    /** chatsRepo.upsertMeta. */
    async upsertMeta(
      connectionId: string,
      c: {
        id: string;
        lid?: string | null;
        name?: string | null;
        isGroup: boolean;
        unread?: number | null;
        activityTs?: number | null;
      },
    ): Promise<void> {
      const unread = c.unread ?? null;
      const activityTs = c.activityTs ?? null;
      await sql`
        INSERT INTO chats AS t (connection_id, id, lid, name, is_group, unread, last_ts)
        VALUES (${connectionId}, ${c.id}, ${c.lid ?? null}, ${pgText(c.name ?? null)}, ${c.isGroup}, COALESCE(${unread}::integer, 0), ${activityTs}::bigint)
        ON CONFLICT (connection_id, id) DO UPDATE SET
          lid = COALESCE(excluded.lid, t.lid), name = COALESCE(excluded.name, t.name),
          unread = COALESCE(${unread}::integer, t.unread),
          last_ts = CASE WHEN t.last_from_me IS NULL AND ${activityTs}::bigint IS NOT NULL
                         THEN GREATEST(COALESCE(t.last_ts, 0), ${activityTs}::bigint) ELSE t.last_ts END`;
    },
    /** chatsRepo.touch: a message at least as new as the preview becomes it; `unreadDelta` adds to the counter. */
    async touch(
      connectionId: string,
      m: {
        chatId: string;
        isGroup: boolean;
        messageId: string;
        kind: MessageKindName;
        timestamp: number;
        body: string;
        fromMe: boolean;
        unreadDelta: number;
      },
    ): Promise<void> {
      const newer = sql`(t.last_from_me IS NULL OR ${m.timestamp}::bigint >= t.last_ts)`;
      await sql`
        INSERT INTO chats AS t (connection_id, id, is_group, unread, last_ts, last_body, last_from_me, last_id, last_kind)
        VALUES (${connectionId}, ${m.chatId}, ${m.isGroup}, ${m.unreadDelta}, ${m.timestamp}, ${pgText(m.body)}, ${m.fromMe}, ${m.messageId}, ${m.kind})
        ON CONFLICT (connection_id, id) DO UPDATE SET
          unread = t.unread + ${m.unreadDelta}::integer,
          last_body    = CASE WHEN ${newer} THEN excluded.last_body ELSE t.last_body END,
          last_ts      = CASE WHEN ${newer} THEN excluded.last_ts ELSE t.last_ts END,
          last_from_me = CASE WHEN ${newer} THEN excluded.last_from_me ELSE t.last_from_me END,
          last_id      = CASE WHEN ${newer} THEN excluded.last_id ELSE t.last_id END,
          last_kind    = CASE WHEN ${newer} THEN excluded.last_kind ELSE t.last_kind END`;
    },
    async markRead(connectionId: string, chatId: string): Promise<void> {
      await sql`UPDATE chats SET unread = 0 WHERE connection_id = ${connectionId} AND id = ${chatId}`;
    },
    /** chatsRepo.setUnread: true when the counter changed. */
    async setUnread(connectionId: string, chatId: string, unread: number): Promise<boolean> {
      const r =
        await sql`UPDATE chats SET unread = ${unread} WHERE connection_id = ${connectionId} AND id = ${chatId} AND unread <> ${unread}`;
      return r.count > 0;
    },
    /** chatsRepo.unread: undefined for an unknown chat. */
    async unread(connectionId: string, chatId: string): Promise<number | undefined> {
      const [r] = await sql<
        Array<{ unread: number }>
      >`SELECT unread FROM chats WHERE connection_id = ${connectionId} AND id = ${chatId}`;
      return r?.unread;
    },
    /** chatsRepo.list. */
    list,
    /** chatsRepo.listJson: `list` as the API's JSON array of Chats. */
    async listJson(connectionId: string, opts: ChatListOptions): Promise<string> {
      return JSON.stringify(await list(connectionId, opts));
    },
  };
}
