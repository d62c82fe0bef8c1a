/**
 * Messages table and the spec's Message record (interface-spec §2.5), with keyset paging newest-first.
 * The paging cursor is opaque to clients: base64url of "<timestamp>:<id>" of the last message of a page.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './database.ts';

export const MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'location', 'contact'] as const;

/** Media attached to a message; `url` is the authenticated media-proxy URL path. */
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

/** The fields the message model produces (the spec's Message §2.5 plus `ack`). */
export interface MessageCore {
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

/**
 * The spec's Message (§2.5) plus `ack` (WAMessageStatus of own messages: 0 error, 1 pending, 2 server,
 * 3 delivered, 4 read, 5 played), `editedAt` (unix seconds of the latest edit, or null) and `reactions`.
 */
export interface Message extends MessageCore {
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
  edited_at: number | null;
  is_forwarded: number;
  raw?: Buffer | null;
  seq?: number;
}

const COLUMNS = `id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name, type, text, quoted_id, media, ack, edited_at, is_forwarded`;

function toMessage(r: RawRow, reactions: Reaction[] = []): Message {
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
    isForwarded: r.is_forwarded === 1,
    editedAt: r.edited_at,
    reactions,
  };
}

/** The record of a message just inserted: no edits, no reactions yet (saves reading it back). */
export function newMessageRecord(m: MessageCore & { isForwarded?: boolean }): Message {
  return {
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
    isForwarded: !!m.isForwarded,
    editedAt: null,
    reactions: [],
  };
}

interface ReactionRow {
  message_id: string;
  sender_jid: string;
  emoji: string;
  timestamp: number;
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

/** Position of a message in its chat: newest first by timestamp, then by arrival (`seq`) within a second. */
export interface PagePosition {
  timestamp: number;
  seq: number;
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

export type MessagesRepo = ReturnType<typeof messagesRepo>;

export function messagesRepo(db: Db) {
  const q = {
    upsert: db.prepare(
      `INSERT INTO messages (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name,
         type, text, quoted_id, media, ack, raw, seq, is_forwarded)
       VALUES (@connectionId, @id, @chatId, @keyId, @fromMe, @timestamp, @senderJid, @senderPushName,
         @type, @text, @quotedMessageId, @media, @ack, @raw, (SELECT IFNULL(MAX(seq), 0) + 1 FROM messages), @isForwarded)
       ON CONFLICT(connection_id, id) DO UPDATE SET
         sender_push_name = CASE WHEN excluded.sender_push_name <> '' THEN excluded.sender_push_name ELSE sender_push_name END,
         type = excluded.type, text = excluded.text, quoted_id = excluded.quoted_id,
         media = COALESCE(excluded.media, media), ack = MAX(COALESCE(ack, 0), COALESCE(excluded.ack, 0)),
         raw = COALESCE(excluded.raw, raw), is_forwarded = MAX(is_forwarded, excluded.is_forwarded)`,
    ),
    exists: db.prepare(`SELECT 1 FROM messages WHERE connection_id = ? AND id = ?`),
    ackOf: db.prepare(`SELECT ack FROM messages WHERE connection_id = ? AND id = ?`),
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
    oldest: db.prepare(
      `SELECT timestamp FROM messages WHERE connection_id = ? AND chat_id = ? ORDER BY timestamp ASC, seq ASC LIMIT 1`,
    ),
    latestIncomingRaw: db.prepare(
      `SELECT raw FROM messages WHERE connection_id = ? AND chat_id = ? AND from_me = 0 AND raw IS NOT NULL
       ORDER BY timestamp DESC, seq DESC LIMIT 1`,
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
    revoke: db.prepare(`UPDATE messages SET type = 'revoked', text = '', media = NULL WHERE connection_id = ? AND id = ?`),
    reaction: db.prepare(`SELECT emoji FROM message_reactions WHERE connection_id = ? AND message_id = ? AND sender_jid = ?`),
    setReaction: db.prepare(
      `INSERT INTO message_reactions (connection_id, message_id, sender_jid, emoji, timestamp) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(connection_id, message_id, sender_jid) DO UPDATE SET emoji = excluded.emoji, timestamp = excluded.timestamp`,
    ),
    deleteReaction: db.prepare(`DELETE FROM message_reactions WHERE connection_id = ? AND message_id = ? AND sender_jid = ?`),
    unreadIncoming: db.prepare(
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
    const byId = new Map<string, Reaction[]>();
    if (ids.length === 0) return byId;
    let query = reactionQueries.get(ids.length);
    if (!query) {
      query = db.prepare(
        `SELECT message_id, sender_jid, emoji, timestamp FROM message_reactions
         WHERE connection_id = ? AND message_id IN (${ids.map(() => '?').join(',')}) ORDER BY timestamp, sender_jid`,
      );
      reactionQueries.set(ids.length, query);
    }
    const rows = query.all(connectionId, ...ids) as ReactionRow[];
    for (const r of rows) {
      const list = byId.get(r.message_id) ?? [];
      list.push({ senderJid: r.sender_jid, emoji: r.emoji, timestamp: r.timestamp });
      byId.set(r.message_id, list);
    }
    return byId;
  }
  const withReactions = (connectionId: string, rows: RawRow[]): Message[] => {
    const reactions = reactionsOf(
      connectionId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => toMessage(r, reactions.get(r.id) ?? []));
  };

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
        media: m.media ? JSON.stringify(m.media) : null,
        ack: m.ack,
        raw: m.raw ? Buffer.from(m.raw) : null,
        isForwarded: m.isForwarded ? 1 : 0,
      });
      return !existed;
    },
    /** The stored ack of a message: a number or null when stored, undefined when there is no such message. */
    ackOf(connectionId: string, id: string): number | null | undefined {
      return (q.ackOf.get(connectionId, id) as { ack: number | null } | undefined)?.ack;
    },
    get(connectionId: string, id: string): Message | undefined {
      const r = q.get.get(connectionId, id) as RawRow | undefined;
      return r && withReactions(connectionId, [r])[0];
    },
    /**
     * The message of a chat with this key id, whichever side sent it (reactions and edits name their target by
     * key id; the sender's fromMe perspective is not ours). Undefined when unknown.
     */
    findByChatAndKey(connectionId: string, chatId: string, keyId: string): Message | undefined {
      const r = q.byChatAndKey.get(connectionId, chatId, keyId) as RawRow | undefined;
      return r && withReactions(connectionId, [r])[0];
    },
    /** Any message with this key id (media file names are `<key id>.<ext>`). */
    findByKeyId(connectionId: string, keyId: string): Message | undefined {
      const r = q.byKey.get(connectionId, keyId) as RawRow | undefined;
      return r && toMessage(r);
    },
    /** Replaces the stored WebMessageInfo bytes (after a media re-upload rewrote the media's directPath). */
    setRaw(connectionId: string, id: string, raw: Uint8Array): void {
      q.setRaw.run(Buffer.from(raw), connectionId, id);
    },
    /** Applies an edit: new text and `edited_at`, the previous text kept in the edit history. */
    edit(connectionId: string, id: string, text: string, editedAt: number): void {
      const current = q.get.get(connectionId, id) as RawRow | undefined;
      if (!current) return;
      q.addEdit.run(connectionId, id, editedAt, current.text, text);
      q.setText.run(text, editedAt, connectionId, id);
    },
    /** Edit history of a message, oldest first. */
    edits(connectionId: string, id: string): Array<{ editedAt: number; previousText: string; text: string }> {
      return (q.edits.all(connectionId, id) as Array<{ edited_at: number; previous_text: string; text: string }>).map((r) => ({
        editedAt: r.edited_at,
        previousText: r.previous_text,
        text: r.text,
      }));
    },
    /** Marks a message deleted for everyone: type `revoked`, no text, no media. */
    revoke(connectionId: string, id: string): void {
      q.revoke.run(connectionId, id);
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
    /** Raw WebMessageInfo of up to `limit` newest incoming messages of a chat (read receipts). */
    latestIncomingRaws(connectionId: string, chatId: string, limit: number): Buffer[] {
      return (q.unreadIncoming.all(connectionId, chatId, limit) as Array<{ raw: Buffer }>).map((r) => r.raw);
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
    page(connectionId: string, chatId: string, limit: number, before?: PagePosition): MessagePage {
      const rows = (
        before
          ? q.pageBefore.all(connectionId, chatId, before.timestamp, before.seq, limit + 1)
          : q.firstPage.all(connectionId, chatId, limit + 1)
      ) as RawRow[];
      const more = rows.length > limit;
      const pageRows = rows.slice(0, limit);
      const messages = withReactions(connectionId, pageRows);
      const last = pageRows[pageRows.length - 1];
      if (more && last) {
        return { messages, nextBefore: encodeCursor({ timestamp: last.timestamp, seq: last.seq! }), historyStartsAt: null };
      }
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
