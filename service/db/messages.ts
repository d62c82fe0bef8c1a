/**
 * Messages table and the spec's Message record (interface-spec §2.5), with keyset paging newest-first.
 * The paging cursor is opaque to clients: base64url of "<timestamp>:<id>" of the last message of a page.
 */
import type { Statement } from 'better-sqlite3';
import { flagOf, type Db } from './database.ts';
import { MediaUrls, mediaFileOfUrl } from './media-url.ts';
import { MESSAGE_ITEM_SQL, itemId, itemJson, itemPosition } from './message-json.ts';
import { searchIndex, type SearchIndex } from './search.ts';

export const MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'location', 'contact'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/**
 * Media attached to a message. `url` is the absolute media-proxy URL (media-url.ts), fetched with the same
 * Authorization header; its last segment is the file's name in the connection's media folder.
 */
export interface MessageMedia {
  url: string;
  mimetype: string;
  filename: string | null;
  size: number | null;
}

/** One reaction on a message: the latest emoji of one sender (a removed reaction is no row). */
export interface Reaction {
  /** Who reacted (the own JID for reactions sent from this account). */
  senderJid: string;
  emoji: string;
  /** Unix seconds. */
  timestamp: number;
}

/**
 * The precise kind of a message (closed vocabulary, issue #13); `type` (the spec's seven) is derived from it by
 * `typeOfKind`: `sticker`/`album` → `image`, the rest outside the seven → `text`.
 */
export const MESSAGE_KINDS = [
  ...MESSAGE_TYPES,
  'sticker',
  'poll',
  'album',
  'buttons_response',
  'list_response',
  'revoked',
  'undecryptable',
  'unsupported',
] as const;
export type MessageKindName = (typeof MESSAGE_KINDS)[number];

/** The spec `type` of a kind. */
export function typeOfKind(kind: MessageKindName): (typeof MESSAGE_TYPES)[number] {
  if ((MESSAGE_TYPES as readonly string[]).includes(kind)) return kind as (typeof MESSAGE_TYPES)[number];
  return kind === 'sticker' || kind === 'album' ? 'image' : 'text';
}

/** A location pin or a live location (a live location's caption is the message's `text`). */
export interface MessageLocation {
  latitude: number;
  longitude: number;
  name: string | null;
  address: string | null;
  url: string | null;
  isLive: boolean;
}

/** One contact card of a contact message (one card or an array). */
export interface MessageContact {
  name: string;
  phoneNumbers: string[];
  vcard: string;
}

/** A poll with its aggregated votes (the latest vote of each voter counts). */
export interface MessagePoll {
  name: string;
  selectableCount: number;
  options: Array<{ name: string; votes: number; voters: string[] }>;
}

/** The option chosen in a buttons, list or template reply (`text` is its display text). */
export interface MessageSelection {
  id: string;
  title: string;
}

/** Structured content of a message; each is null when absent. */
export interface MessageContent {
  location: MessageLocation | null;
  contacts: MessageContact[] | null;
  poll: MessagePoll | null;
  selection: MessageSelection | null;
  album: { expectedImages: number; expectedVideos: number } | null;
  /** Message id of the album a media message belongs to. */
  albumId: string | null;
}

export const EMPTY_CONTENT: MessageContent = {
  location: null,
  contacts: null,
  poll: null,
  selection: null,
  album: null,
  albumId: null,
};

/** The fields the message model produces (the spec's Message §2.5 plus `ack`, `kind` and structured content). */
export interface MessageCore extends MessageContent {
  /** Precise kind (MESSAGE_KINDS). */
  kind: MessageKindName;
  /** The proto field name of an `unsupported` message (e.g. `eventMessage`), else null. */
  rawType: string | null;
  id: string;
  chatId: string;
  timestamp: number;
  fromMe: boolean;
  senderJid: string;
  senderPushName: string;
  /** One of MESSAGE_TYPES (derived from `kind`). */
  type: MessageType;
  text: string;
  quotedMessageId: string | null;
  media: MessageMedia | null;
  ack: number | null;
  /** JIDs the message mentions (`contextInfo.mentionedJid`; phone-number JIDs where the LID mapping is known). */
  mentions?: string[];
}

/**
 * The spec's Message (§2.5) plus `ack` (WAMessageStatus of own messages: 0 error, 1 pending, 2 server,
 * 3 delivered, 4 read, 5 played), `editedAt` (unix seconds of the latest edit, or null) and `reactions`.
 */
export interface Message extends MessageCore {
  mentions: string[];
  /** Whether the message was forwarded (WhatsApp's contextInfo.isForwarded), sent or received. */
  isForwarded: boolean;
  editedAt: number | null;
  reactions: Reaction[];
}

/** A message as the engine stores it: the record plus its key id and the raw WebMessageInfo bytes. */
export interface StoredMessage extends MessageCore {
  keyId: string;
  /** contextInfo.isForwarded of the content (false when absent). */
  isForwarded?: boolean;
  raw: Uint8Array | null;
  /** A poll's 32-byte `messageSecret` (decrypts its votes); null for other messages. */
  messageSecret?: Uint8Array | null;
}

/** A page of a chat: `M` is a Message, or (`rendered` pages) its API JSON where SQLite rendered it. */
export interface ChatPage<M> {
  messages: M[];
  nextBefore: string | null;
  historyStartsAt: number | null;
}

export type MessagePage = ChatPage<Message>;

/**
 * A `messages` row (COLUMNS, and `seq` where a page reads it) as either engine returns it (`from_me`, `is_forwarded`:
 * SQLite 0/1, PostgreSQL boolean; `media`, `mentions` and `content` JSON text).
 */
export interface MessageRawRow {
  id: string;
  chat_id: string;
  key_id: string;
  from_me: number | boolean;
  timestamp: number;
  sender_jid: string;
  sender_push_name: string;
  type: string;
  text: string;
  quoted_id: string | null;
  media: string | null;
  ack: number | null;
  edited_at: number | null;
  mentions: string | null;
  kind: string;
  raw_type: string | null;
  content: string | null;
  is_forwarded: number | boolean;
  raw?: Buffer | null;
  seq?: number;
}

const COLUMNS = `id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name, type, text, quoted_id, media, ack, edited_at, mentions, kind, raw_type, content, is_forwarded`;

/** The structured content of a `content` column value (every field, null where absent). */
export function contentOf(json: string | null): MessageContent {
  if (!json) return { ...EMPTY_CONTENT };
  return { ...EMPTY_CONTENT, ...(JSON.parse(json) as Partial<MessageContent>) };
}

/** Only the non-null structured fields, as stored in the `content` column (null when there are none). */
export function contentJson(m: MessageContent): string | null {
  const out: Partial<MessageContent> = {};
  for (const k of Object.keys(EMPTY_CONTENT) as Array<keyof MessageContent>) {
    if (m[k] != null) (out as Record<string, unknown>)[k] = m[k];
  }
  return Object.keys(out).length > 0 ? JSON.stringify(out) : null;
}

/** A message's media as stored in the `media` column: the file name in place of the URL, which depends on the address. */
interface MediaColumn extends Omit<MessageMedia, 'url'> {
  file?: string;
  /** Rows written before issue 17 kept the URL path (`/api/connections/<id>/media/<file>`). */
  url?: string;
}

/** The `media` column value of a message's media (the file name in place of the URL). */
export function mediaColumn(media: MessageMedia): string {
  const { url, ...rest } = media;
  return JSON.stringify({ file: mediaFileOfUrl(url) ?? '', ...rest } satisfies MediaColumn);
}

/** A message's media from its `media` column value, with its URL for `connectionId` (legacy URL rows too). */
export function mediaOf(json: string, connectionId: string, urls: MediaUrls): MessageMedia {
  const { file, url, ...rest } = JSON.parse(json) as MediaColumn;
  return { url: urls.of(connectionId, file ?? (url !== undefined ? mediaFileOfUrl(url) : undefined) ?? ''), ...rest };
}

/** The Message of a raw `messages` row of `connectionId`, with its media URL from `urls` and its `reactions`. */
export function messageOfRow(r: MessageRawRow, connectionId: string, urls: MediaUrls, reactions: Reaction[] = []): Message {
  return {
    kind: r.kind as MessageKindName,
    rawType: r.raw_type,
    ...contentOf(r.content),
    id: r.id,
    chatId: r.chat_id,
    timestamp: r.timestamp,
    fromMe: flagOf(r.from_me),
    senderJid: r.sender_jid,
    senderPushName: r.sender_push_name,
    type: r.type as MessageType,
    text: r.text,
    quotedMessageId: r.quoted_id,
    media: r.media ? mediaOf(r.media, connectionId, urls) : null,
    ack: r.ack,
    mentions: r.mentions ? (JSON.parse(r.mentions) as string[]) : [],
    isForwarded: flagOf(r.is_forwarded),
    editedAt: r.edited_at,
    reactions,
  };
}

/** The record of a message just inserted: no edits, no reactions yet (saves reading it back). */
export function newMessageRecord(m: MessageCore & { isForwarded?: boolean }): Message {
  return {
    kind: m.kind,
    rawType: m.rawType,
    location: m.location,
    contacts: m.contacts,
    poll: m.poll,
    selection: m.selection,
    album: m.album,
    albumId: m.albumId,
    id: m.id,
    chatId: m.chatId,
    timestamp: m.timestamp,
    fromMe: m.fromMe,
    senderJid: m.senderJid,
    senderPushName: m.senderPushName,
    type: m.type,
    text: m.text,
    quotedMessageId: m.quotedMessageId,
    media: m.media,
    ack: m.ack,
    mentions: m.mentions ?? [],
    isForwarded: !!m.isForwarded,
    editedAt: null,
    reactions: [],
  };
}

/** A `message_reactions` row as either engine returns it. */
export interface ReactionRawRow {
  message_id: string;
  sender_jid: string;
  emoji: string;
  timestamp: number;
}

/** Reactions rows grouped by message id, each message's in the rows' order. */
export function reactionsByMessage(rows: readonly ReactionRawRow[]): Map<string, Reaction[]> {
  const byId = new Map<string, Reaction[]>();
  for (const r of rows) {
    const list = byId.get(r.message_id) ?? [];
    list.push({ senderJid: r.sender_jid, emoji: r.emoji, timestamp: r.timestamp });
    byId.set(r.message_id, list);
  }
  return byId;
}

/** A `message_edits` row as either engine returns it. */
export interface MessageEditRawRow {
  edited_at: number;
  previous_text: string;
  text: string;
}

/** One entry of a message's edit history, of its raw `message_edits` row. */
export const messageEditOfRow = (r: MessageEditRawRow): { editedAt: number; previousText: string; text: string } => ({
  editedAt: r.edited_at,
  previousText: r.previous_text,
  text: r.text,
});

/** A `poll_votes` row as either engine returns it (`options`: JSON array of option names). */
export interface PollVoteRawRow {
  voter_jid: string;
  options: string;
}

/** `poll` with its option counts and voters recounted from its votes (each voter counted once per option). */
export function tallyPoll(poll: MessagePoll, votes: readonly PollVoteRawRow[]): MessagePoll {
  const tallied: MessagePoll = {
    ...poll,
    options: poll.options.map((o) => ({ name: o.name, votes: 0, voters: [] as string[] })),
  };
  for (const v of votes) {
    for (const name of JSON.parse(v.options) as string[]) {
      const opt = tallied.options.find((o) => o.name === name);
      if (opt && !opt.voters.includes(v.voter_jid)) {
        opt.voters.push(v.voter_jid);
        opt.votes++;
      }
    }
  }
  return tallied;
}

/** Message id of the spec's shape `<fromMe>_<chatId>_<key.id>` (docs/architecture.md § Ids). */
export function messageIdOf(fromMe: boolean, chatId: string, keyId: string): string {
  return `${fromMe}_${chatId}_${keyId}`;
}

/** Splits a message id into its parts; undefined when it does not have the spec's shape. */
export function parseMessageId(id: string): { fromMe: boolean; chatId: string; keyId: string } | undefined {
  const m = /^(true|false)_(.+@[^_]+)_(.+)$/.exec(id);
  if (!m) return undefined;
  return { fromMe: m[1] === 'true', chatId: m[2]!, keyId: m[3]! };
}

/** Position of a message in its chat: newest first by timestamp, then by arrival (`seq`) within a second. */
export interface PagePosition {
  timestamp: number;
  seq: number;
}

/** The position before a chat's first message at or after `since` (unix seconds; absent: the start): `range`'s first `after`. */
export function rangeStart(since = 0): PagePosition {
  return { timestamp: since - 1, seq: Number.MAX_SAFE_INTEGER };
}

export function encodeCursor(position: PagePosition): string {
  return Buffer.from(`${position.timestamp}:${position.seq}`).toString('base64url');
}

/** Decodes a `before` cursor; undefined when it is not one this service issued. */
export function decodeCursor(cursor: string): PagePosition | undefined {
  const m = /^(\d{1,15}):(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) return undefined;
  return { timestamp: Number(m[1]), seq: Number(m[2]) };
}

/** Where the paging of a chat reads its rows from, and how it turns them into a page's items. */
interface PageSource<R, M> {
  /** Up to `n` newest rows, newest first. */
  first(connectionId: string, chatId: string, n: number): R[];
  /** Up to `n` rows older than `at`, newest first. */
  before(connectionId: string, chatId: string, at: PagePosition, n: number): R[];
  /** Up to `n` rows newer than `at`, oldest first. */
  after(connectionId: string, chatId: string, at: PagePosition, n: number): R[];
  position(row: R): PagePosition;
  /** The page's items of `rows`, in their order. */
  finish(connectionId: string, rows: R[]): M[];
  /** Timestamp of the chat's oldest message; undefined for an empty chat. */
  oldest(connectionId: string, chatId: string): number | undefined;
  hasAfter(connectionId: string, chatId: string, at: PagePosition): boolean;
}

/** Keyset paging of a chat over `src` (messagesRepo's `page`, `pageAfter` and `pageAround` document the pages). */
function chatPages<R, M>(src: PageSource<R, M>) {
  function page(connectionId: string, chatId: string, limit: number, before?: PagePosition): ChatPage<M> {
    const rows = before ? src.before(connectionId, chatId, before, limit + 1) : src.first(connectionId, chatId, limit + 1);
    const more = rows.length > limit;
    const pageRows = rows.slice(0, limit);
    const messages = src.finish(connectionId, pageRows);
    const last = pageRows[pageRows.length - 1];
    if (more && last) return { messages, nextBefore: encodeCursor(src.position(last)), historyStartsAt: null };
    return { messages, nextBefore: null, historyStartsAt: src.oldest(connectionId, chatId) ?? null };
  }
  function pageAfter(connectionId: string, chatId: string, limit: number, after: PagePosition): ChatPage<M> & { nextAfter: string | null } {
    const rows = src.after(connectionId, chatId, after, limit + 1);
    const more = rows.length > limit;
    const pageRows = rows.slice(0, limit);
    const newest = pageRows[pageRows.length - 1];
    const oldest = pageRows[0];
    return {
      messages: src.finish(connectionId, pageRows.reverse()),
      nextBefore: encodeCursor(oldest ? src.position(oldest) : after),
      historyStartsAt: null,
      nextAfter: more && newest ? encodeCursor(src.position(newest)) : null,
    };
  }
  function pageAround(connectionId: string, chatId: string, limit: number, at: PagePosition): ChatPage<M> & { nextAfter: string | null } {
    const newerWanted = Math.floor((limit - 1) / 2);
    const newerRows = src.after(connectionId, chatId, at, newerWanted + 1).slice(0, newerWanted);
    // The message itself and the older ones: everything at or before its position.
    const older = page(connectionId, chatId, limit - newerRows.length, { timestamp: at.timestamp, seq: at.seq + 1 });
    const newest = newerRows[newerRows.length - 1];
    const newestAt = newest && src.position(newest);
    const moreNewer = newestAt ? src.hasAfter(connectionId, chatId, newestAt) : false;
    return {
      messages: [...src.finish(connectionId, newerRows.reverse()), ...older.messages],
      nextBefore: older.nextBefore,
      historyStartsAt: older.historyStartsAt,
      nextAfter: moreNewer && newestAt ? encodeCursor(newestAt) : null,
    };
  }
  return { page, pageAfter, pageAround };
}

/**
 * Named queries over `messages`. Every write keeps the full-text index (`search`, search.ts) in step in the same
 * transaction: inserts and edits (re)index the message, revokes remove it. Edits and revokes of a chat's last message
 * also update the chat's preview (chats.ts `lastMessage`) in that transaction.
 */
export function messagesRepo(db: Db, search: SearchIndex = searchIndex(db), urls: MediaUrls = new MediaUrls()) {
  const q = {
    upsert: db.prepare(
      `INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name,
         type, text, quoted_id, media, ack, raw, mentions, seq, kind, raw_type, content, message_secret, is_forwarded)
       VALUES (@connectionId, @id, @chatId, @keyId, @fromMe, @timestamp, @senderJid, @senderPushName,
         @type, @text, @quotedMessageId, @media, @ack, @raw, @mentions, (SELECT IFNULL(MAX(seq), 0) + 1 FROM messages),
         @kind, @rawType, @content, @messageSecret, @isForwarded)
       ON CONFLICT(connection_id, id) DO UPDATE SET
         sender_push_name = CASE WHEN excluded.sender_push_name <> '' THEN excluded.sender_push_name ELSE sender_push_name END,
         type = excluded.type, text = excluded.text, quoted_id = excluded.quoted_id,
         kind = excluded.kind, raw_type = excluded.raw_type,
         content = CASE WHEN kind = 'poll' AND excluded.kind = 'poll' THEN content ELSE excluded.content END,
         message_secret = COALESCE(excluded.message_secret, message_secret),
         media = COALESCE(excluded.media, media), ack = MAX(COALESCE(ack, 0), COALESCE(excluded.ack, 0)),
         raw = COALESCE(excluded.raw, raw), mentions = COALESCE(excluded.mentions, mentions), is_forwarded = MAX(is_forwarded, excluded.is_forwarded)`,
    ),
    exists: db.prepare(`SELECT 1 FROM messages WHERE connection_id = ? AND id = ?`),
    ackOf: db.prepare(`SELECT ack FROM messages WHERE connection_id = ? AND id = ?`),
    stateOf: db.prepare(`SELECT ack, kind FROM messages WHERE connection_id = ? AND id = ?`),
    get: db.prepare(`SELECT ${COLUMNS} FROM messages WHERE connection_id = ? AND id = ?`),
    getRaw: db.prepare(`SELECT raw FROM messages WHERE connection_id = ? AND id = ?`),
    findRawByKey: db.prepare(`SELECT raw FROM messages WHERE connection_id = ? AND key_id = ? AND raw IS NOT NULL LIMIT 1`),
    firstPage: db.prepare(
      `SELECT ${COLUMNS}, seq FROM messages WHERE connection_id = ? AND chat_id = ?
       ORDER BY timestamp DESC, seq DESC LIMIT ?`,
    ),
    pageBefore: db.prepare(
      `SELECT ${COLUMNS}, seq FROM messages WHERE connection_id = ? AND chat_id = ? AND (timestamp, seq) < (?, ?)
       ORDER BY timestamp DESC, seq DESC LIMIT ?`,
    ),
    pageAfter: db.prepare(
      `SELECT ${COLUMNS}, seq FROM messages WHERE connection_id = ? AND chat_id = ? AND (timestamp, seq) > (?, ?)
       ORDER BY timestamp ASC, seq ASC LIMIT ?`,
    ),
    position: db.prepare(`SELECT chat_id, timestamp, seq FROM messages WHERE connection_id = ? AND id = ?`),
    anyAfter: db.prepare(
      `SELECT 1 FROM messages WHERE connection_id = ? AND chat_id = ? AND (timestamp, seq) > (?, ?) LIMIT 1`,
    ),
    renderFirst: db
      .prepare(
        `SELECT ${MESSAGE_ITEM_SQL} FROM messages m WHERE m.connection_id = @c AND m.chat_id = @chat
         ORDER BY m.timestamp DESC, m.seq DESC LIMIT @n`,
      )
      .pluck(),
    renderBefore: db
      .prepare(
        `SELECT ${MESSAGE_ITEM_SQL} FROM messages m WHERE m.connection_id = @c AND m.chat_id = @chat
           AND (m.timestamp, m.seq) < (@ts, @seq) ORDER BY m.timestamp DESC, m.seq DESC LIMIT @n`,
      )
      .pluck(),
    renderAfter: db
      .prepare(
        `SELECT ${MESSAGE_ITEM_SQL} FROM messages m WHERE m.connection_id = @c AND m.chat_id = @chat
           AND (m.timestamp, m.seq) > (@ts, @seq) ORDER BY m.timestamp ASC, m.seq ASC LIMIT @n`,
      )
      .pluck(),
    range: db.prepare(
      `SELECT ${COLUMNS}, seq FROM messages WHERE connection_id = ? AND chat_id = ? AND (timestamp, seq) > (?, ?)
         AND timestamp <= ? ORDER BY timestamp ASC, seq ASC LIMIT ?`,
    ),
    oldest: db.prepare(
      `SELECT timestamp FROM messages WHERE connection_id = ? AND chat_id = ? ORDER BY timestamp ASC, seq ASC LIMIT 1`,
    ),
    setAck: db.prepare(
      `UPDATE messages SET ack = ? WHERE connection_id = ? AND id = ? AND (ack IS NULL OR ack < ? OR ? = 0)`,
    ),
    byChatAndKey: db.prepare(
      `SELECT ${COLUMNS} FROM messages WHERE connection_id = ? AND chat_id = ? AND key_id = ? ORDER BY from_me LIMIT 2`,
    ),
    byKey: db.prepare(`SELECT ${COLUMNS} FROM messages WHERE connection_id = ? AND key_id = ? LIMIT 1`),
    setRaw: db.prepare(`UPDATE messages SET raw = ? WHERE connection_id = ? AND id = ?`),
    setText: db.prepare(`UPDATE messages SET text = ?, edited_at = ? WHERE connection_id = ? AND id = ?`),
    addEdit: db.prepare(
      `INSERT INTO message_edits (connection_id, message_id, edited_at, previous_text, text) VALUES (?, ?, ?, ?, ?)`,
    ),
    edits: db.prepare(
      `SELECT edited_at, previous_text, text FROM message_edits WHERE connection_id = ? AND message_id = ? ORDER BY edited_at, rowid`,
    ),
    revoke: db.prepare(
      `UPDATE messages SET type = 'text', kind = 'revoked', raw_type = NULL, content = NULL, text = '', media = NULL
       WHERE connection_id = ? AND id = ?`,
    ),
    // The chat's preview when it is this message (chats.last_id): an edit gives it the new text, a revoke empties it.
    previewEdited: db.prepare(`UPDATE chats SET last_body = ? WHERE connection_id = ? AND id = ? AND last_id = ?`),
    previewRevoked: db.prepare(
      `UPDATE chats SET last_body = '', last_kind = 'revoked'
       WHERE connection_id = ? AND id = (SELECT chat_id FROM messages WHERE connection_id = ? AND id = ?) AND last_id = ?`,
    ),
    setContent: db.prepare(`UPDATE messages SET content = ? WHERE connection_id = ? AND id = ?`),
    pollOf: db.prepare(`SELECT content, message_secret, raw FROM messages WHERE connection_id = ? AND id = ? AND kind = 'poll'`),
    setVote: db.prepare(
      `INSERT INTO poll_votes (connection_id, poll_id, voter_jid, options, timestamp) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(connection_id, poll_id, voter_jid) DO UPDATE SET options = excluded.options, timestamp = excluded.timestamp
       WHERE excluded.timestamp >= poll_votes.timestamp`,
    ),
    votes: db.prepare(`SELECT voter_jid, options FROM poll_votes WHERE connection_id = ? AND poll_id = ? ORDER BY timestamp, voter_jid`),
    reaction: db.prepare(`SELECT emoji FROM message_reactions WHERE connection_id = ? AND message_id = ? AND sender_jid = ?`),
    setReaction: db.prepare(
      `INSERT INTO message_reactions (connection_id, message_id, sender_jid, emoji, timestamp) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(connection_id, message_id, sender_jid) DO UPDATE SET emoji = excluded.emoji, timestamp = excluded.timestamp`,
    ),
    deleteReaction: db.prepare(`DELETE FROM message_reactions WHERE connection_id = ? AND message_id = ? AND sender_jid = ?`),
    deleteReactions: db.prepare(`DELETE FROM message_reactions WHERE connection_id = ? AND message_id = ?`),
    // The newest incoming messages, whether read or not: the caller chooses how many (markRead: the unread count).
    latestIncoming: db.prepare(
      `SELECT raw FROM messages WHERE connection_id = ? AND chat_id = ? AND from_me = 0 AND raw IS NOT NULL
       ORDER BY timestamp DESC, seq DESC LIMIT ?`,
    ),
    countIncomingAfter: db.prepare(
      `SELECT COUNT(*) AS n FROM messages WHERE connection_id = ? AND chat_id = ? AND from_me = 0 AND timestamp > ?`,
    ),
  };

  /** Reactions of the given messages (one query per page), grouped by message id. */
  /** `reactionsOf` statements by the number of ids (pages have a handful of sizes; each is prepared once). */
  const reactionQueries = new Map<number, Statement>();
  function reactionsOf(connectionId: string, ids: string[]): Map<string, Reaction[]> {
    if (ids.length === 0) return new Map();
    let query = reactionQueries.get(ids.length);
    if (!query) {
      query = db.prepare(
        `SELECT message_id, sender_jid, emoji, timestamp FROM message_reactions
         WHERE connection_id = ? AND message_id IN (${ids.map(() => '?').join(',')}) ORDER BY timestamp, sender_jid`,
      );
      reactionQueries.set(ids.length, query);
    }
    return reactionsByMessage(query.all(connectionId, ...ids) as ReactionRawRow[]);
  }
  const withReactions = (connectionId: string, rows: MessageRawRow[]): Message[] => {
    const reactions = reactionsOf(
      connectionId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => messageOfRow(r, connectionId, urls, reactions.get(r.id) ?? []));
  };

  const position = (r: { timestamp: number; seq?: number }): PagePosition => ({ timestamp: r.timestamp, seq: r.seq! });
  const oldestOf = (connectionId: string, chatId: string) =>
    (q.oldest.get(connectionId, chatId) as { timestamp: number } | undefined)?.timestamp;
  const hasAfter = (connectionId: string, chatId: string, at: PagePosition) =>
    q.anyAfter.get(connectionId, chatId, at.timestamp, at.seq) !== undefined;

  const range = (connectionId: string, chatId: string, after: PagePosition, until = Number.MAX_SAFE_INTEGER, batch = 500): { messages: Message[]; next: PagePosition | null } => {
    const rows = q.range.all(connectionId, chatId, after.timestamp, after.seq, until, batch) as MessageRawRow[];
    const last = rows[rows.length - 1];
    return { messages: withReactions(connectionId, rows), next: last && rows.length === batch ? position(last) : null };
  };

  const objectPages = chatPages<MessageRawRow, Message>({
    first: (c, chat, n) => q.firstPage.all(c, chat, n) as MessageRawRow[],
    before: (c, chat, at, n) => q.pageBefore.all(c, chat, at.timestamp, at.seq, n) as MessageRawRow[],
    after: (c, chat, at, n) => q.pageAfter.all(c, chat, at.timestamp, at.seq, n) as MessageRawRow[],
    position,
    finish: withReactions,
    oldest: oldestOf,
    hasAfter,
  });

  /** Rendered pages read one MESSAGE_ITEM_SQL text per row (message-json.ts). */
  const renderedPages = chatPages<string, string | Message>({
    first: (c, chat, n) => q.renderFirst.all({ c, chat, n, mediaPrefix: urls.of(c, '') }) as string[],
    before: (c, chat, at, n) =>
      q.renderBefore.all({ c, chat, ts: at.timestamp, seq: at.seq, n, mediaPrefix: urls.of(c, '') }) as string[],
    after: (c, chat, at, n) =>
      q.renderAfter.all({ c, chat, ts: at.timestamp, seq: at.seq, n, mediaPrefix: urls.of(c, '') }) as string[],
    position: itemPosition,
    finish(connectionId, items) {
      const out = new Array<string | Message>(items.length);
      const left: number[] = [];
      for (let i = 0; i < items.length; i++) {
        const json = itemJson(items[i]!);
        if (json === undefined) left.push(i);
        else out[i] = json;
      }
      if (left.length > 0) {
        // The rows SQL left to JavaScript (structured content, unusual media) are read and built as `page` builds them.
        const rows = left.map((i) => q.get.get(connectionId, itemId(items[i]!)) as MessageRawRow);
        withReactions(connectionId, rows).forEach((m, k) => (out[left[k]!] = m));
      }
      return out;
    },
    oldest: oldestOf,
    hasAfter,
  });

  return {
    /** Inserts or merges a message (a later copy never lowers its ack). Returns true when it was new. */
    upsert(connectionId: string, m: StoredMessage, known?: { existed: boolean }): boolean {
      // `known`: the caller just looked the message up (ackOf) in the same transaction; saves the lookup here.
      const existed = known ? known.existed : q.exists.get(connectionId, m.id) !== undefined;
      q.upsert.run({
        connectionId,
        id: m.id,
        chatId: m.chatId,
        keyId: m.keyId,
        fromMe: m.fromMe ? 1 : 0,
        timestamp: m.timestamp,
        senderJid: m.senderJid,
        senderPushName: m.senderPushName,
        type: m.type,
        text: m.text,
        quotedMessageId: m.quotedMessageId,
        media: m.media ? mediaColumn(m.media) : null,
        ack: m.ack,
        raw: m.raw ? Buffer.from(m.raw) : null,
        mentions: m.mentions?.length ? JSON.stringify(m.mentions) : null,
        kind: m.kind,
        rawType: m.rawType,
        content: contentJson(m),
        messageSecret: m.messageSecret ? Buffer.from(m.messageSecret) : null,
        isForwarded: m.isForwarded ? 1 : 0,
      });
      search.reindex(connectionId, m.id, { fresh: !existed });
      return !existed;
    },
    /** The stored ack of a message: a number or null when stored, undefined when there is no such message. */
    ackOf(connectionId: string, id: string): number | null | undefined {
      return (q.ackOf.get(connectionId, id) as { ack: number | null } | undefined)?.ack;
    },
    /** Ack and kind of a stored message; undefined when there is no such message. */
    stateOf(connectionId: string, id: string): { ack: number | null; kind: MessageKindName } | undefined {
      return q.stateOf.get(connectionId, id) as { ack: number | null; kind: MessageKindName } | undefined;
    },
    get(connectionId: string, id: string): Message | undefined {
      const r = q.get.get(connectionId, id) as MessageRawRow | undefined;
      return r && withReactions(connectionId, [r])[0];
    },
    /**
     * The message of a chat with this key id, whichever side sent it (reactions and edits name their target by
     * key id; the sender's fromMe perspective is not ours). Undefined when unknown.
     */
    findByChatAndKey(connectionId: string, chatId: string, keyId: string): Message | undefined {
      const r = q.byChatAndKey.get(connectionId, chatId, keyId) as MessageRawRow | undefined;
      return r && withReactions(connectionId, [r])[0];
    },
    /** Any message with this key id (media file names are `<key id>.<ext>`). */
    findByKeyId(connectionId: string, keyId: string): Message | undefined {
      const r = q.byKey.get(connectionId, keyId) as MessageRawRow | undefined;
      return r && messageOfRow(r, connectionId, urls);
    },
    /** Replaces the stored WebMessageInfo bytes (after a media re-upload rewrote the media's directPath). */
    setRaw(connectionId: string, id: string, raw: Uint8Array): void {
      q.setRaw.run(Buffer.from(raw), connectionId, id);
    },
    /**
     * Applies an edit: new text and `edited_at`, the previous text kept in the edit history; the chat's preview takes
     * the new text when it is this message.
     */
    edit(connectionId: string, id: string, text: string, editedAt: number): void {
      const current = q.get.get(connectionId, id) as MessageRawRow | undefined;
      if (!current) return;
      q.addEdit.run(connectionId, id, editedAt, current.text, text);
      q.setText.run(text, editedAt, connectionId, id);
      q.previewEdited.run(text, connectionId, current.chat_id, id);
      search.reindex(connectionId, id);
    },
    /** Edit history of a message, oldest first. */
    edits(connectionId: string, id: string): Array<{ editedAt: number; previousText: string; text: string }> {
      return (q.edits.all(connectionId, id) as MessageEditRawRow[]).map(messageEditOfRow);
    },
    /** A stored poll: its record, `messageSecret` and raw WebMessageInfo; undefined when `id` is not a poll. */
    poll(connectionId: string, id: string): { poll: MessagePoll; secret: Buffer | null; raw: Buffer | null } | undefined {
      const r = q.pollOf.get(connectionId, id) as { content: string | null; message_secret: Buffer | null; raw: Buffer | null } | undefined;
      const poll = r && contentOf(r.content).poll;
      return poll ? { poll, secret: r.message_secret, raw: r.raw } : undefined;
    },
    /**
     * Records a voter's latest vote (an older vote than the stored one is ignored; an empty list withdraws it) and
     * re-aggregates the poll's option counts. Returns the updated poll, undefined when `pollId` is not a stored poll.
     */
    vote(connectionId: string, pollId: string, voterJid: string, options: string[], timestamp: number): MessagePoll | undefined {
      const r = q.pollOf.get(connectionId, pollId) as { content: string | null } | undefined;
      const content = r && contentOf(r.content);
      if (!content?.poll) return undefined;
      q.setVote.run(connectionId, pollId, voterJid, JSON.stringify(options), timestamp);
      const poll = tallyPoll(content.poll, q.votes.all(connectionId, pollId) as PollVoteRawRow[]);
      q.setContent.run(contentJson({ ...content, poll }), connectionId, pollId);
      return poll;
    },
    /**
     * Marks a message deleted for everyone: kind `revoked` (type `text`), no text, no media, no reactions; the chat's
     * preview, when it is this message, keeps its time and side with body "" and kind `revoked`.
     */
    revoke(connectionId: string, id: string): void {
      q.revoke.run(connectionId, id);
      q.previewRevoked.run(connectionId, connectionId, id, id);
      q.deleteReactions.run(connectionId, id);
      search.remove(connectionId, id);
    },
    /**
     * Sets (or with `emoji` "" removes) the reaction of `senderJid` on a message.
     * Returns false when nothing changed (the same reaction seen twice, e.g. our own echoed back).
     */
    react(connectionId: string, messageId: string, senderJid: string, emoji: string, timestamp: number): boolean {
      const current = (q.reaction.get(connectionId, messageId, senderJid) as { emoji: string } | undefined)?.emoji ?? '';
      if (current === emoji) return false;
      if (emoji === '') q.deleteReaction.run(connectionId, messageId, senderJid);
      else q.setReaction.run(connectionId, messageId, senderJid, emoji, timestamp);
      return true;
    },
    /**
     * Raw WebMessageInfo of up to `limit` newest incoming messages of a chat, newest first (read receipts: markRead
     * asks for as many as the chat's unread count, which are the unread ones).
     */
    latestIncomingRaws(connectionId: string, chatId: string, limit: number): Buffer[] {
      return (q.latestIncoming.all(connectionId, chatId, limit) as Array<{ raw: Buffer }>).map((r) => r.raw);
    },
    /** Number of incoming messages of a chat newer than `timestamp` (unread after a read receipt). */
    countIncomingAfter(connectionId: string, chatId: string, timestamp: number): number {
      return (q.countIncomingAfter.get(connectionId, chatId, timestamp) as { n: number }).n;
    },
    /** The stored proto.WebMessageInfo bytes of a message, if kept. */
    getRaw(connectionId: string, id: string): Buffer | undefined {
      return ((q.getRaw.get(connectionId, id) as { raw: Buffer | null } | undefined)?.raw) ?? undefined;
    },
    /** Raw WebMessageInfo of any message with this key id (Baileys' getMessage for retry receipts). */
    findRawByKeyId(connectionId: string, keyId: string): Buffer | undefined {
      return ((q.findRawByKey.get(connectionId, keyId) as { raw: Buffer } | undefined)?.raw) ?? undefined;
    },
    /**
     * One page of a chat, newest first. `before` is a decoded cursor. `historyStartsAt` is the oldest stored
     * timestamp once the page reaches the end (nextBefore null), and null for a chat with no messages.
     */
    page: objectPages.page,
    /**
     * Position of a message in its chat's order (for `around=`); undefined when the message is not in that chat.
     */
    positionOf(connectionId: string, chatId: string, id: string): PagePosition | undefined {
      const r = q.position.get(connectionId, id) as { chat_id: string; timestamp: number; seq: number } | undefined;
      return r && r.chat_id === chatId ? { timestamp: r.timestamp, seq: r.seq } : undefined;
    },
    /**
     * The page of up to `limit` messages newer than `after` (the closest ones), newest first like every page.
     * `nextAfter`: cursor to continue towards newer messages, null when the page reaches the newest;
     * `nextBefore`: the cursor of the page's oldest message (older messages exist: at least `after`'s own).
     */
    pageAfter: objectPages.pageAfter,
    /**
     * The page of `limit` messages centred on the message at `at` (it included; older half first rounded down),
     * newest first, with cursors both ways (`nextBefore`/`historyStartsAt` as in `page`, `nextAfter` as in
     * `pageAfter`).
     */
    pageAround: objectPages.pageAround,
    /**
     * `page`, `pageAfter` and `pageAround` with each message as its API JSON rendered by SQLite (message-json.ts),
     * or as a Message where the SQL leaves it to JavaScript: the REST read path (issue 16). Same pages, same cursors.
     */
    rendered: renderedPages,
    /**
     * A chat's messages oldest first, read in batches of `batch` by keyset (the whole chat never sits in memory),
     * between `since` and `until` (unix seconds, inclusive). For exports.
     */
    *iterate(connectionId: string, chatId: string, opts: { since?: number; until?: number; batch?: number } = {}): Generator<Message> {
      let after: PagePosition | null = rangeStart(opts.since);
      while (after) {
        const page = range(connectionId, chatId, after, opts.until, opts.batch);
        yield* page.messages;
        after = page.next;
      }
    },
    /**
     * One batch of `iterate`: up to `batch` (500) messages of a chat oldest first, after the position `after`
     * (`rangeStart(since)` for the first) and up to `until` (unix seconds, inclusive); `next` is where the following
     * batch starts, null after the last one. The pages of exports, read on the reader threads (reader.ts).
     */
    range,
    /** Raw WebMessageInfo of the newest incoming message of a chat (to send its read receipt). */
    latestIncomingRaw(connectionId: string, chatId: string): Buffer | undefined {
      return (q.latestIncoming.get(connectionId, chatId, 1) as { raw: Buffer } | undefined)?.raw;
    },
    /** Raises the ack of an own message (0 = error always applies). Returns true when the row changed. */
    setAck(connectionId: string, id: string, ack: number): boolean {
      return q.setAck.run(ack, connectionId, id, ack, ack).changes > 0;
    },
  };
}
