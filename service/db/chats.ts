/**
 * Chats table: one row per chat of a connection with its last message and unread counter (interface-spec §2.3).
 * The last message (the preview) names its message (`last_id`), so an edit or a revoke of that message reaches it:
 * messages.ts `edit` and `revoke` update it in the same transaction.
 */
import { flagOf, type Db } from './database.ts';
import type { MessageKindName } from './messages.ts';

/** The spec's Chat item (§2.3). */
export interface Chat {
  id: string;
  name: string;
  isGroup: boolean;
  /**
   * The newest stored message; when none is stored, `{ body: "", timestamp: <last activity the phone reported, else 0>,
   * fromMe: false, id: null, kind: null }` (chats known from history-sync metadata only). Never null (the spec types it
   * as an object). It follows edits (`body` the current text) and revokes (`body` "", `kind` `revoked`).
   */
  lastMessage: ChatPreview;
  unread: number;
}

/**
 * A chat's last message: the spec's `{ body, timestamp, fromMe }` plus (additions) the message's `id` and `kind`
 * (MESSAGE_KINDS), null when no message of the chat is stored.
 */
export interface ChatPreview {
  body: string;
  timestamp: number;
  fromMe: boolean;
  id: string | null;
  kind: MessageKindName | null;
}

/**
 * A row of `list` (a chat with its contact's name) as either engine returns it (`is_group`, `last_from_me`: SQLite
 * 0/1, PostgreSQL boolean; `last_from_me` null while no message of the chat is stored).
 */
export interface ChatRawRow {
  id: string;
  name: string | null;
  is_group: number | boolean;
  unread: number;
  last_ts: number | null;
  last_body: string | null;
  last_from_me: number | boolean | null;
  last_id: string | null;
  last_kind: string | null;
  contact_name: string | null;
}

/** The Chat of a raw `list` row: named by the chat, else its contact, else its JID's user part. */
export function chatOfRow(r: ChatRawRow): Chat {
  return {
    id: r.id,
    name: r.name ?? r.contact_name ?? r.id.split('@')[0]!,
    isGroup: flagOf(r.is_group),
    lastMessage:
      r.last_from_me === null
        ? { body: '', timestamp: r.last_ts ?? 0, fromMe: false, id: null, kind: null }
        : {
            body: r.last_body ?? '',
            timestamp: r.last_ts ?? 0,
            fromMe: flagOf(r.last_from_me),
            id: r.last_id,
            kind: r.last_kind as MessageKindName | null,
          },
    unread: r.unread,
  };
}

/**
 * The rows and order of `list`. `ORDER BY last_ts DESC, id` is the spec's order (chats without a last activity,
 * NULL, come last: NULL sorts lowest) and is the order of the `chats_recent` index (the table's key, `id`, ends
 * each entry), so a page reads its rows off that index and stops: no sort of every chat of the connection.
 */
const LIST_FROM = `FROM chats c LEFT JOIN contacts k ON k.connection_id = c.connection_id AND k.jid = c.id
       WHERE c.connection_id = @connectionId AND (@unreadOnly = 0 OR c.unread > 0)
         AND (@like IS NULL OR c.name LIKE @like ESCAPE '\\' OR k.name LIKE @like ESCAPE '\\'
              OR k.push_name LIKE @like ESCAPE '\\' OR c.id LIKE @like ESCAPE '\\')
         AND (@includeStatus = 1 OR c.id <> 'status@broadcast')
       ORDER BY c.last_ts DESC, c.id LIMIT @limit OFFSET @offset`;

/**
 * A row of `list` as the API's Chat JSON (the bytes fast-json-stringify writes for the Chat `list` builds, key
 * order of routes/chats.ts ChatSchema; json_quote escapes like JSON.stringify, CAST truncates like its integers):
 * see db/message-json.ts for why pages are rendered in SQL. test/unit/chat-json.test.ts compares the two.
 */
const CHAT_JSON_SQL = `format('{"id":%s,"name":%s,"isGroup":%s,"lastMessage":{"body":%s,"timestamp":%s,"fromMe":%s,"id":%s,"kind":%s},"unread":%s}',
    json_quote(c.id),
    json_quote(COALESCE(c.name, k.name, k.push_name, CASE WHEN instr(c.id, '@') > 0 THEN substr(c.id, 1, instr(c.id, '@') - 1) ELSE c.id END)),
    CASE c.is_group WHEN 1 THEN 'true' ELSE 'false' END,
    CASE WHEN c.last_from_me IS NULL THEN '""' ELSE json_quote(IFNULL(c.last_body, '')) END,
    IFNULL(CAST(c.last_ts AS INTEGER), 0),
    CASE c.last_from_me WHEN 1 THEN 'true' ELSE 'false' END,
    CASE WHEN c.last_from_me IS NULL THEN 'null' ELSE json_quote(c.last_id) END,
    CASE WHEN c.last_from_me IS NULL THEN 'null' ELSE json_quote(c.last_kind) END,
    CAST(c.unread AS INTEGER))`;

/**
 * Options of `list`: `q` keeps the chats whose name, contact name, push name or JID contains it (case-insensitive
 * for ASCII; a phone number matches its JID's digits); the status posts pseudo-chat (`status@broadcast`) only with
 * `includeStatus`.
 */
export interface ChatListOptions {
  limit: number;
  offset: number;
  unreadOnly: boolean;
  includeStatus?: boolean;
  q?: string | undefined;
}

/** The `q` filter as a LIKE pattern (a leading `+` dropped; `\` escapes `\`, `%` and `_`); null for none. */
export function likePatternOf(q: string | undefined): string | null {
  const term = q?.trim().replace(/^\+/, '');
  return term ? `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
}

function listParams(connectionId: string, opts: ChatListOptions) {
  const like = likePatternOf(opts.q);
  return {
    connectionId,
    limit: opts.limit,
    offset: opts.offset,
    unreadOnly: opts.unreadOnly ? 1 : 0,
    includeStatus: opts.includeStatus ? 1 : 0,
    like,
  };
}

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
    // Every SET expression reads the row as it was, so each tests the old last_ts.
    touch: db.prepare(
      `INSERT INTO chats (connection_id, id, is_group, unread, last_ts, last_body, last_from_me, last_id, last_kind)
       VALUES (@connectionId, @id, @isGroup, @unreadDelta, @ts, @body, @fromMe, @messageId, @kind)
       ON CONFLICT(connection_id, id) DO UPDATE SET
         unread = unread + @unreadDelta,
         last_body    = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @body ELSE last_body END,
         last_ts      = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @ts ELSE last_ts END,
         last_from_me = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @fromMe ELSE last_from_me END,
         last_id      = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @messageId ELSE last_id END,
         last_kind    = CASE WHEN last_from_me IS NULL OR @ts >= last_ts THEN @kind ELSE last_kind END`,
    ),
    markRead: db.prepare(`UPDATE chats SET unread = 0 WHERE connection_id = ? AND id = ?`),
    setUnread: db.prepare(`UPDATE chats SET unread = ? WHERE connection_id = ? AND id = ? AND unread <> ?`),
    unread: db.prepare(`SELECT unread FROM chats WHERE connection_id = ? AND id = ?`),
    list: db.prepare(`SELECT c.id, c.name, c.is_group, c.unread, c.last_ts, c.last_body, c.last_from_me, c.last_id, c.last_kind,
              COALESCE(k.name, k.push_name) AS contact_name ${LIST_FROM}`),
    listJson: db.prepare(`SELECT ${CHAT_JSON_SQL} ${LIST_FROM}`).pluck(),
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
    /**
     * Records a message (`messageId`, its `kind` and text `body`) in its chat: a message at least as new as the
     * preview (a later arrival wins a tie) becomes `lastMessage`; `unreadDelta` adds to the counter.
     */
    touch(
      connectionId: string,
      m: { chatId: string; isGroup: boolean; messageId: string; kind: MessageKindName; timestamp: number; body: string; fromMe: boolean; unreadDelta: number },
    ): void {
      q.touch.run({
        connectionId,
        id: m.chatId,
        isGroup: m.isGroup ? 1 : 0,
        unreadDelta: m.unreadDelta,
        ts: m.timestamp,
        body: m.body,
        fromMe: m.fromMe ? 1 : 0,
        messageId: m.messageId,
        kind: m.kind,
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
    list(connectionId: string, opts: ChatListOptions): Chat[] {
      return (q.list.all(listParams(connectionId, opts)) as ChatRawRow[]).map(chatOfRow);
    },
    /** `list` as the API's JSON array of Chats, rendered by SQLite (the REST read path, issue 16). */
    listJson(connectionId: string, opts: ChatListOptions): string {
      return `[${(q.listJson.all(listParams(connectionId, opts)) as string[]).join(',')}]`;
    },
  };
}
