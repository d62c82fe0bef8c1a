/**
 * Messages table and the spec's Message record (interface-spec §2.5), with keyset paging newest-first.
 * The paging cursor is opaque to clients: base64url of "<timestamp>:<id>" of the last message of a page.
 */
import type { Db } from './database.ts';

export const MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'location', 'contact'] as const;

/** Media attached to a message; `url` is the authenticated media-proxy URL path. */
export interface MessageMedia {
  url: string;
  mimetype: string;
  filename: string | null;
  size: number | null;
}

/** The spec's Message (§2.5) plus `ack` (WAMessageStatus of own messages: 0 error, 1 pending, 2 server, 3 delivered, 4 read, 5 played). */
export interface Message {
  id: string;
  chatId: string;
  timestamp: number;
  fromMe: boolean;
  senderJid: string;
  senderPushName: string;
  /** One of MESSAGE_TYPES, or the real type name of kinds the spec does not list (e.g. `sticker`). */
  type: string;
  text: string;
  quotedMessageId: string | null;
  media: MessageMedia | null;
  ack: number | null;
}

/** A message as the engine stores it: the record plus its key id and the raw WebMessageInfo bytes. */
export interface StoredMessage extends Message {
  keyId: string;
  raw: Uint8Array | null;
}

export interface MessagePage {
  messages: Message[];
  nextBefore: string | null;
  historyStartsAt: number | null;
}

interface RawRow {
  id: string;
  chat_id: string;
  key_id: string;
  from_me: number;
  timestamp: number;
  sender_jid: string;
  sender_push_name: string;
  type: string;
  text: string;
  quoted_id: string | null;
  media: string | null;
  ack: number | null;
  raw?: Buffer | null;
}

const COLUMNS = `id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name, type, text, quoted_id, media, ack`;

function toMessage(r: RawRow): Message {
  return {
    id: r.id,
    chatId: r.chat_id,
    timestamp: r.timestamp,
    fromMe: r.from_me === 1,
    senderJid: r.sender_jid,
    senderPushName: r.sender_push_name,
    type: r.type,
    text: r.text,
    quotedMessageId: r.quoted_id,
    media: r.media ? (JSON.parse(r.media) as MessageMedia) : null,
    ack: r.ack,
  };
}

/** Message id of the spec's shape `<fromMe>_<chatId>_<key.id>` (DESIGN.md §4). */
export function messageIdOf(fromMe: boolean, chatId: string, keyId: string): string {
  return `${fromMe}_${chatId}_${keyId}`;
}

/** Splits a message id into its parts; undefined when it does not have the spec's shape. */
export function parseMessageId(id: string): { fromMe: boolean; chatId: string; keyId: string } | undefined {
  const m = /^(true|false)_(.+@[^_]+)_(.+)$/.exec(id);
  if (!m) return undefined;
  return { fromMe: m[1] === 'true', chatId: m[2]!, keyId: m[3]! };
}

export function encodeCursor(timestamp: number, id: string): string {
  return Buffer.from(`${timestamp}:${id}`).toString('base64url');
}

/** Decodes a `before` cursor; undefined when it is not one this service issued. */
export function decodeCursor(cursor: string): { timestamp: number; id: string } | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const i = text.indexOf(':');
  if (i <= 0) return undefined;
  const timestamp = Number(text.slice(0, i));
  const id = text.slice(i + 1);
  if (!Number.isSafeInteger(timestamp) || !id) return undefined;
  return { timestamp, id };
}

export type MessagesRepo = ReturnType<typeof messagesRepo>;

export function messagesRepo(db: Db) {
  const q = {
    upsert: db.prepare(
      `INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name,
         type, text, quoted_id, media, ack, raw)
       VALUES (@connectionId, @id, @chatId, @keyId, @fromMe, @timestamp, @senderJid, @senderPushName,
         @type, @text, @quotedMessageId, @media, @ack, @raw)
       ON CONFLICT(connection_id, id) DO UPDATE SET
         sender_push_name = CASE WHEN excluded.sender_push_name <> '' THEN excluded.sender_push_name ELSE sender_push_name END,
         type = excluded.type, text = excluded.text, quoted_id = excluded.quoted_id,
         media = COALESCE(excluded.media, media), ack = MAX(COALESCE(ack, 0), COALESCE(excluded.ack, 0)),
         raw = COALESCE(excluded.raw, raw)`,
    ),
    exists: db.prepare(`SELECT 1 FROM messages WHERE connection_id = ? AND id = ?`),
    get: db.prepare(`SELECT ${COLUMNS} FROM messages WHERE connection_id = ? AND id = ?`),
    getRaw: db.prepare(`SELECT raw FROM messages WHERE connection_id = ? AND id = ?`),
    findRawByKey: db.prepare(`SELECT raw FROM messages WHERE connection_id = ? AND key_id = ? AND raw IS NOT NULL LIMIT 1`),
    firstPage: db.prepare(
      `SELECT ${COLUMNS} FROM messages WHERE connection_id = ? AND chat_id = ?
       ORDER BY timestamp DESC, id DESC LIMIT ?`,
    ),
    pageBefore: db.prepare(
      `SELECT ${COLUMNS} FROM messages WHERE connection_id = ? AND chat_id = ? AND (timestamp, id) < (?, ?)
       ORDER BY timestamp DESC, id DESC LIMIT ?`,
    ),
    oldest: db.prepare(
      `SELECT timestamp FROM messages WHERE connection_id = ? AND chat_id = ? ORDER BY timestamp ASC, id ASC LIMIT 1`,
    ),
    latestIncomingRaw: db.prepare(
      `SELECT raw FROM messages WHERE connection_id = ? AND chat_id = ? AND from_me = 0 AND raw IS NOT NULL
       ORDER BY timestamp DESC, id DESC LIMIT 1`,
    ),
    setAck: db.prepare(
      `UPDATE messages SET ack = ? WHERE connection_id = ? AND id = ? AND (ack IS NULL OR ack < ? OR ? = 0)`,
    ),
  };

  return {
    /** Inserts or merges a message (a later copy never lowers its ack). Returns true when it was new. */
    upsert(connectionId: string, m: StoredMessage): boolean {
      const existed = q.exists.get(connectionId, m.id) !== undefined;
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
        media: m.media ? JSON.stringify(m.media) : null,
        ack: m.ack,
        raw: m.raw ? Buffer.from(m.raw) : null,
      });
      return !existed;
    },
    get(connectionId: string, id: string): Message | undefined {
      const r = q.get.get(connectionId, id) as RawRow | undefined;
      return r && toMessage(r);
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
    page(connectionId: string, chatId: string, limit: number, before?: { timestamp: number; id: string }): MessagePage {
      const rows = (
        before
          ? q.pageBefore.all(connectionId, chatId, before.timestamp, before.id, limit + 1)
          : q.firstPage.all(connectionId, chatId, limit + 1)
      ) as RawRow[];
      const more = rows.length > limit;
      const messages = rows.slice(0, limit).map(toMessage);
      const last = messages[messages.length - 1];
      if (more && last) return { messages, nextBefore: encodeCursor(last.timestamp, last.id), historyStartsAt: null };
      const oldest = q.oldest.get(connectionId, chatId) as { timestamp: number } | undefined;
      return { messages, nextBefore: null, historyStartsAt: oldest?.timestamp ?? null };
    },
    /** Raw WebMessageInfo of the newest incoming message of a chat (to send its read receipt). */
    latestIncomingRaw(connectionId: string, chatId: string): Buffer | undefined {
      return ((q.latestIncomingRaw.get(connectionId, chatId) as { raw: Buffer } | undefined)?.raw) ?? undefined;
    },
    /** Raises the ack of an own message (0 = error always applies). Returns true when the row changed. */
    setAck(connectionId: string, id: string, ack: number): boolean {
      return q.setAck.run(ack, connectionId, id, ack, ack).changes > 0;
    },
  };
}
