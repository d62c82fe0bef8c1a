/**
 * The `messages` table and its edits, reactions and poll votes on PostgreSQL: pgMessagesRepo is messagesRepo
 * (service/db/messages.ts) method for method, asynchronous, with the same records, pages, cursors and order. Every
 * write keeps the full-text index (repos/search.ts) and the chat's preview in step in the same transaction, as on
 * SQLite.
 *
 * `rendered` pages hold Message objects only (never pre-rendered JSON): the route serialises each with the same
 * serializer as `page`, so the API's bytes are those of the SQLite path (whose SQL rendering writes exactly those
 * bytes, db/message-json.ts). `iterate` is an async generator.
 *
 * PostgreSQL text cannot hold U+0000: in free text (message text, push names, edit history) it is stored as U+FFFD;
 * an unpaired surrogate is stored as SQLite reads it back (message-scope.ts pgText).
 */
import { MediaUrls } from '../../media-url.ts';
import {
  contentJson,
  contentOf,
  encodeCursor,
  mediaColumn,
  messageEditOfRow,
  messageOfRow,
  rangeStart,
  reactionsByMessage,
  tallyPoll,
  type ChatPage,
  type Message,
  type MessageEditRawRow,
  type MessageKindName,
  type MessagePoll,
  type MessageRawRow,
  type PagePosition,
  type PollVoteRawRow,
  type Reaction,
  type ReactionRawRow,
  type StoredMessage,
} from '../../messages.ts';
import { atomically, pgText } from './message-scope.ts';
import type { PgScope, Queryable } from './scope.ts';
import { indexEntryOf, writeIndexRow, type PgIndexSource } from './search.ts';

const COLUMNS = `id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name, type, text, quoted_id, media, ack, edited_at, mentions, kind, raw_type, content, is_forwarded, seq`;

/** A `messages` row as these queries read it: COLUMNS, `seq` included. */
type SeqRawRow = MessageRawRow & { seq: number };

const position = (r: { timestamp: number; seq: number }): PagePosition => ({ timestamp: r.timestamp, seq: r.seq });

export function pgMessagesRepo(scope: PgScope, urls: MediaUrls = new MediaUrls()) {
  const { sql } = scope;
  const cols = sql.unsafe(COLUMNS);

  async function reactionsOf(connectionId: string, ids: string[]): Promise<Map<string, Reaction[]>> {
    if (ids.length === 0) return new Map();
    return reactionsByMessage(await sql<ReactionRawRow[]>`
      SELECT message_id, sender_jid, emoji, timestamp FROM message_reactions
      WHERE connection_id = ${connectionId} AND message_id = ANY(${ids}::text[]) ORDER BY timestamp, sender_jid`);
  }
  async function withReactions(connectionId: string, rows: readonly SeqRawRow[]): Promise<Message[]> {
    const reactions = await reactionsOf(
      connectionId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => messageOfRow(r, connectionId, urls, reactions.get(r.id) ?? []));
  }
  async function getRow(connectionId: string, id: string): Promise<SeqRawRow | undefined> {
    const [r] = await sql<SeqRawRow[]>`SELECT ${cols} FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
    return r;
  }

  // ---- keyset paging (messages.ts chatPages, asynchronous) ----
  const first = (c: string, chat: string, n: number) =>
    sql<SeqRawRow[]>`SELECT ${cols} FROM messages WHERE connection_id = ${c} AND chat_id = ${chat}
      ORDER BY timestamp DESC, seq DESC LIMIT ${n}`;
  const before = (c: string, chat: string, at: PagePosition, n: number) =>
    sql<SeqRawRow[]>`SELECT ${cols} FROM messages WHERE connection_id = ${c} AND chat_id = ${chat}
      AND (timestamp, seq) < (${at.timestamp}::bigint, ${at.seq}::bigint) ORDER BY timestamp DESC, seq DESC LIMIT ${n}`;
  const after = (c: string, chat: string, at: PagePosition, n: number) =>
    sql<SeqRawRow[]>`SELECT ${cols} FROM messages WHERE connection_id = ${c} AND chat_id = ${chat}
      AND (timestamp, seq) > (${at.timestamp}::bigint, ${at.seq}::bigint) ORDER BY timestamp ASC, seq ASC LIMIT ${n}`;
  async function oldest(c: string, chat: string): Promise<number | undefined> {
    const [r] = await sql<Array<{ timestamp: number }>>`
      SELECT timestamp FROM messages WHERE connection_id = ${c} AND chat_id = ${chat} ORDER BY timestamp ASC, seq ASC LIMIT 1`;
    return r?.timestamp;
  }
  async function hasAfter(c: string, chat: string, at: PagePosition): Promise<boolean> {
    const rows = await sql`SELECT 1 FROM messages WHERE connection_id = ${c} AND chat_id = ${chat}
      AND (timestamp, seq) > (${at.timestamp}::bigint, ${at.seq}::bigint) LIMIT 1`;
    return rows.length > 0;
  }

  async function page(
    connectionId: string,
    chatId: string,
    limit: number,
    at?: PagePosition,
  ): Promise<ChatPage<Message>> {
    const rows = at ? await before(connectionId, chatId, at, limit + 1) : await first(connectionId, chatId, limit + 1);
    const more = rows.length > limit;
    const pageRows = rows.slice(0, limit);
    const messages = await withReactions(connectionId, pageRows);
    const last = pageRows[pageRows.length - 1];
    if (more && last) return { messages, nextBefore: encodeCursor(position(last)), historyStartsAt: null };
    return { messages, nextBefore: null, historyStartsAt: (await oldest(connectionId, chatId)) ?? null };
  }
  async function pageAfter(
    connectionId: string,
    chatId: string,
    limit: number,
    at: PagePosition,
  ): Promise<ChatPage<Message> & { nextAfter: string | null }> {
    const rows = await after(connectionId, chatId, at, limit + 1);
    const more = rows.length > limit;
    const pageRows = rows.slice(0, limit);
    const newest = pageRows[pageRows.length - 1];
    const oldestRow = pageRows[0];
    return {
      messages: await withReactions(connectionId, pageRows.reverse()),
      nextBefore: encodeCursor(oldestRow ? position(oldestRow) : at),
      historyStartsAt: null,
      nextAfter: more && newest ? encodeCursor(position(newest)) : null,
    };
  }
  async function pageAround(
    connectionId: string,
    chatId: string,
    limit: number,
    at: PagePosition,
  ): Promise<ChatPage<Message> & { nextAfter: string | null }> {
    const newerWanted = Math.floor((limit - 1) / 2);
    const newerRows = (await after(connectionId, chatId, at, newerWanted + 1)).slice(0, newerWanted);
    const older = await page(connectionId, chatId, limit - newerRows.length, {
      timestamp: at.timestamp,
      seq: at.seq + 1,
    });
    const newest = newerRows[newerRows.length - 1];
    const newestAt = newest && position(newest);
    const moreNewer = newestAt ? await hasAfter(connectionId, chatId, newestAt) : false;
    return {
      messages: [...(await withReactions(connectionId, newerRows.reverse())), ...older.messages],
      nextBefore: older.nextBefore,
      historyStartsAt: older.historyStartsAt,
      nextAfter: moreNewer && newestAt ? encodeCursor(newestAt) : null,
    };
  }
  async function range(
    connectionId: string,
    chatId: string,
    from: PagePosition,
    until = Number.MAX_SAFE_INTEGER,
    batch = 500,
  ): Promise<{ messages: Message[]; next: PagePosition | null }> {
    const rows = await sql<
      SeqRawRow[]
    >`SELECT ${cols} FROM messages WHERE connection_id = ${connectionId} AND chat_id = ${chatId}
      AND (timestamp, seq) > (${from.timestamp}::bigint, ${from.seq}::bigint) AND timestamp <= ${until}::bigint
      ORDER BY timestamp ASC, seq ASC LIMIT ${batch}`;
    const last = rows[rows.length - 1];
    return {
      messages: await withReactions(connectionId, rows),
      next: last && rows.length === batch ? position(last) : null,
    };
  }

  return {
    /** messagesRepo.upsert: inserts or merges a message (a later copy never lowers its ack); true when it was new. */
    upsert(connectionId: string, m: StoredMessage, known?: { existed: boolean }): Promise<boolean> {
      const text = pgText(m.text);
      const media = m.media ? mediaColumn(m.media) : null;
      // The index entry of the row as this copy writes it. One round trip writes both when the stored row ends up
      // as assumed (new, or merged without older media or another sender); otherwise the entry is written again
      // from the row the statement returns.
      const entry = indexEntryOf({
        connection_id: connectionId,
        id: m.id,
        chat_id: m.chatId,
        sender_jid: m.senderJid,
        type: m.type,
        from_me: m.fromMe,
        text,
        media,
      });
      const matches = (sql: Queryable) =>
        sql`m.media IS NOT DISTINCT FROM ${media}::text AND m.sender_jid = ${m.senderJid} AND m.chat_id = ${m.chatId} AND m.from_me = ${m.fromMe}`;
      return atomically(scope, async (sql) => {
        const [r] = await sql<Array<PgIndexSource & { inserted: boolean; handled: boolean }>>`
        WITH m AS (
        INSERT INTO messages AS t (connection_id, id, chat_id, key_id, from_me, timestamp, sender_jid, sender_push_name,
          type, text, quoted_id, media, ack, raw, mentions, kind, raw_type, content, message_secret, is_forwarded)
        VALUES (${connectionId}, ${m.id}, ${m.chatId}, ${m.keyId}, ${m.fromMe}, ${m.timestamp}, ${m.senderJid}, ${pgText(m.senderPushName)},
          ${m.type}, ${text}, ${m.quotedMessageId}, ${media}, ${m.ack}::integer,
          ${m.raw ? Buffer.from(m.raw) : null}::bytea, ${m.mentions?.length ? JSON.stringify(m.mentions) : null},
          ${m.kind}, ${m.rawType}, ${contentJson(m)}, ${m.messageSecret ? Buffer.from(m.messageSecret) : null}::bytea, ${!!m.isForwarded})
        ON CONFLICT (connection_id, id) DO UPDATE SET
          sender_push_name = CASE WHEN excluded.sender_push_name <> '' THEN excluded.sender_push_name ELSE t.sender_push_name END,
          type = excluded.type, text = excluded.text, quoted_id = excluded.quoted_id,
          kind = excluded.kind, raw_type = excluded.raw_type,
          content = CASE WHEN t.kind = 'poll' AND excluded.kind = 'poll' THEN t.content ELSE excluded.content END,
          message_secret = COALESCE(excluded.message_secret, t.message_secret),
          media = COALESCE(excluded.media, t.media), ack = GREATEST(COALESCE(t.ack, 0), COALESCE(excluded.ack, 0)),
          raw = COALESCE(excluded.raw, t.raw), mentions = COALESCE(excluded.mentions, t.mentions),
          is_forwarded = t.is_forwarded OR excluded.is_forwarded
        RETURNING connection_id, id, chat_id, sender_jid, type, from_me, timestamp, seq, text, media, (xmax = 0) AS inserted
        ), ${
          entry
            ? sql`indexed AS (
          INSERT INTO message_search (connection_id, message_id, rowid, body, ntokens, tags, tsv)
          SELECT m.connection_id, m.id, (LEAST(GREATEST(m.timestamp, 0), 2147483647) << 32) | (m.seq & 4294967295),
            ${entry.body}, ${entry.ntokens}, ${entry.tags}::text[], ${entry.tsv}::tsvector
          FROM m WHERE ${matches(sql)}
          ON CONFLICT (connection_id, message_id) DO UPDATE SET
            rowid = excluded.rowid, body = excluded.body, ntokens = excluded.ntokens, tags = excluded.tags, tsv = excluded.tsv
          RETURNING 1)`
            : sql`indexed AS (
          DELETE FROM message_search s USING m WHERE s.connection_id = m.connection_id AND s.message_id = m.id AND ${matches(sql)}
          RETURNING 1)`
        }
        SELECT m.*, (${matches(sql)}) AS handled FROM m`;
        const existed = known ? known.existed : !r!.inserted;
        if (!r!.handled) await writeIndexRow(sql, r!, !existed);
        return !existed;
      });
    },
    /** messagesRepo.ackOf: a number or null when stored, undefined when there is no such message. */
    async ackOf(connectionId: string, id: string): Promise<number | null | undefined> {
      const [r] = await sql<
        Array<{ ack: number | null }>
      >`SELECT ack FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
      return r?.ack;
    },
    /** messagesRepo.stateOf. */
    async stateOf(
      connectionId: string,
      id: string,
    ): Promise<{ ack: number | null; kind: MessageKindName } | undefined> {
      const [r] = await sql<Array<{ ack: number | null; kind: MessageKindName }>>`
        SELECT ack, kind FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
      return r && { ack: r.ack, kind: r.kind };
    },
    async get(connectionId: string, id: string): Promise<Message | undefined> {
      const r = await getRow(connectionId, id);
      return r && (await withReactions(connectionId, [r]))[0];
    },
    /** messagesRepo.findByChatAndKey: the message of a chat with this key id, whichever side sent it. */
    async findByChatAndKey(connectionId: string, chatId: string, keyId: string): Promise<Message | undefined> {
      const [r] = await sql<SeqRawRow[]>`SELECT ${cols} FROM messages
        WHERE connection_id = ${connectionId} AND chat_id = ${chatId} AND key_id = ${keyId} ORDER BY from_me LIMIT 2`;
      return r && (await withReactions(connectionId, [r]))[0];
    },
    /** messagesRepo.findByKeyId (without reactions, as on SQLite; the first by id, the order of SQLite's key index). */
    async findByKeyId(connectionId: string, keyId: string): Promise<Message | undefined> {
      const [r] = await sql<
        SeqRawRow[]
      >`SELECT ${cols} FROM messages WHERE connection_id = ${connectionId} AND key_id = ${keyId} ORDER BY id LIMIT 1`;
      return r && messageOfRow(r, connectionId, urls);
    },
    /** messagesRepo.setRaw. */
    async setRaw(connectionId: string, id: string, raw: Uint8Array): Promise<void> {
      await sql`UPDATE messages SET raw = ${Buffer.from(raw)}::bytea WHERE connection_id = ${connectionId} AND id = ${id}`;
    },
    /** messagesRepo.edit: new text and edited_at, the previous text in the history, the chat's preview, the index. */
    edit(connectionId: string, id: string, text: string, editedAt: number): Promise<void> {
      return atomically(scope, async (sql) => {
        const [current] = await sql<
          SeqRawRow[]
        >`SELECT ${cols} FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
        if (!current) return;
        const next = pgText(text);
        await sql`INSERT INTO message_edits (connection_id, message_id, edited_at, previous_text, text)
        VALUES (${connectionId}, ${id}, ${editedAt}, ${current.text}, ${next})`;
        const [row] = await sql<PgIndexSource[]>`UPDATE messages SET text = ${next}, edited_at = ${editedAt}
        WHERE connection_id = ${connectionId} AND id = ${id}
        RETURNING connection_id, id, chat_id, sender_jid, type, from_me, timestamp, seq, text, media`;
        await sql`UPDATE chats SET last_body = ${next} WHERE connection_id = ${connectionId} AND id = ${current.chat_id} AND last_id = ${id}`;
        await writeIndexRow(sql, row!);
      });
    },
    /** messagesRepo.edits: oldest first. */
    async edits(
      connectionId: string,
      id: string,
    ): Promise<Array<{ editedAt: number; previousText: string; text: string }>> {
      const rows = await sql<MessageEditRawRow[]>`
        SELECT edited_at, previous_text, text FROM message_edits WHERE connection_id = ${connectionId} AND message_id = ${id}
        ORDER BY edited_at, ord`;
      return rows.map(messageEditOfRow);
    },
    /** messagesRepo.poll: undefined when `id` is not a poll. */
    async poll(
      connectionId: string,
      id: string,
    ): Promise<{ poll: MessagePoll; secret: Buffer | null; raw: Buffer | null } | undefined> {
      const [r] = await sql<Array<{ content: string | null; message_secret: Buffer | null; raw: Buffer | null }>>`
        SELECT content, message_secret, raw FROM messages WHERE connection_id = ${connectionId} AND id = ${id} AND kind = 'poll'`;
      const poll = r && contentOf(r.content).poll;
      return poll ? { poll, secret: r.message_secret, raw: r.raw } : undefined;
    },
    /** messagesRepo.vote: records a voter's latest vote and re-aggregates the poll; undefined when not a stored poll. */
    vote(
      connectionId: string,
      pollId: string,
      voterJid: string,
      options: string[],
      timestamp: number,
    ): Promise<MessagePoll | undefined> {
      return atomically(scope, async (sql) => {
        const [r] = await sql<Array<{ content: string | null }>>`
        SELECT content FROM messages WHERE connection_id = ${connectionId} AND id = ${pollId} AND kind = 'poll'`;
        const content = r && contentOf(r.content);
        if (!content?.poll) return undefined;
        await sql`INSERT INTO poll_votes AS v (connection_id, poll_id, voter_jid, options, timestamp)
        VALUES (${connectionId}, ${pollId}, ${voterJid}, ${JSON.stringify(options)}, ${timestamp})
        ON CONFLICT (connection_id, poll_id, voter_jid) DO UPDATE SET options = excluded.options, timestamp = excluded.timestamp
        WHERE excluded.timestamp >= v.timestamp`;
        const votes = await sql<PollVoteRawRow[]>`
        SELECT voter_jid, options FROM poll_votes WHERE connection_id = ${connectionId} AND poll_id = ${pollId} ORDER BY timestamp, voter_jid`;
        const poll = tallyPoll(content.poll, votes);
        await sql`UPDATE messages SET content = ${contentJson({ ...content, poll })} WHERE connection_id = ${connectionId} AND id = ${pollId}`;
        return poll;
      });
    },
    /** messagesRepo.revoke: kind `revoked`, no text, media or reactions; the chat's preview follows; out of the index. */
    revoke(connectionId: string, id: string): Promise<void> {
      return atomically(scope, async (sql) => {
        const [r] = await sql<Array<{ chat_id: string }>>`
        UPDATE messages SET type = 'text', kind = 'revoked', raw_type = NULL, content = NULL, text = '', media = NULL
        WHERE connection_id = ${connectionId} AND id = ${id} RETURNING chat_id`;
        if (r) {
          await sql`UPDATE chats SET last_body = '', last_kind = 'revoked'
          WHERE connection_id = ${connectionId} AND id = ${r.chat_id} AND last_id = ${id}`;
        }
        await sql`DELETE FROM message_reactions WHERE connection_id = ${connectionId} AND message_id = ${id}`;
        await sql`DELETE FROM message_search WHERE connection_id = ${connectionId} AND message_id = ${id}`;
      });
    },
    /** messagesRepo.react: sets (or with "" removes) a sender's reaction; false when nothing changed. */
    react(
      connectionId: string,
      messageId: string,
      senderJid: string,
      emoji: string,
      timestamp: number,
    ): Promise<boolean> {
      return atomically(scope, async (sql) => {
        const [r] = await sql<Array<{ emoji: string }>>`SELECT emoji FROM message_reactions
        WHERE connection_id = ${connectionId} AND message_id = ${messageId} AND sender_jid = ${senderJid}`;
        if ((r?.emoji ?? '') === emoji) return false;
        if (emoji === '') {
          await sql`DELETE FROM message_reactions WHERE connection_id = ${connectionId} AND message_id = ${messageId} AND sender_jid = ${senderJid}`;
        } else {
          await sql`INSERT INTO message_reactions (connection_id, message_id, sender_jid, emoji, timestamp)
          VALUES (${connectionId}, ${messageId}, ${senderJid}, ${emoji}, ${timestamp})
          ON CONFLICT (connection_id, message_id, sender_jid) DO UPDATE SET emoji = excluded.emoji, timestamp = excluded.timestamp`;
        }
        return true;
      });
    },
    /** messagesRepo.latestIncomingRaws: newest first. */
    async latestIncomingRaws(connectionId: string, chatId: string, limit: number): Promise<Buffer[]> {
      const rows = await sql<Array<{ raw: Buffer }>>`SELECT raw FROM messages
        WHERE connection_id = ${connectionId} AND chat_id = ${chatId} AND NOT from_me AND raw IS NOT NULL
        ORDER BY timestamp DESC, seq DESC LIMIT ${limit}`;
      return rows.map((r) => r.raw);
    },
    /** messagesRepo.countIncomingAfter. */
    async countIncomingAfter(connectionId: string, chatId: string, timestamp: number): Promise<number> {
      const [r] = await sql<Array<{ n: number }>>`SELECT COUNT(*) AS n FROM messages
        WHERE connection_id = ${connectionId} AND chat_id = ${chatId} AND NOT from_me AND timestamp > ${timestamp}::bigint`;
      return r!.n;
    },
    /** messagesRepo.getRaw. */
    async getRaw(connectionId: string, id: string): Promise<Buffer | undefined> {
      const [r] = await sql<
        Array<{ raw: Buffer | null }>
      >`SELECT raw FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
      return r?.raw ?? undefined;
    },
    /** messagesRepo.findRawByKeyId. */
    async findRawByKeyId(connectionId: string, keyId: string): Promise<Buffer | undefined> {
      const [r] = await sql<Array<{ raw: Buffer }>>`SELECT raw FROM messages
        WHERE connection_id = ${connectionId} AND key_id = ${keyId} AND raw IS NOT NULL ORDER BY id LIMIT 1`;
      return r?.raw ?? undefined;
    },
    /** messagesRepo.page. */
    page,
    /** messagesRepo.positionOf: undefined when the message is not in that chat. */
    async positionOf(connectionId: string, chatId: string, id: string): Promise<PagePosition | undefined> {
      const [r] = await sql<Array<{ chat_id: string; timestamp: number; seq: number }>>`
        SELECT chat_id, timestamp, seq FROM messages WHERE connection_id = ${connectionId} AND id = ${id}`;
      return r && r.chat_id === chatId ? { timestamp: r.timestamp, seq: r.seq } : undefined;
    },
    /** messagesRepo.pageAfter. */
    pageAfter,
    /** messagesRepo.pageAround. */
    pageAround,
    /** messagesRepo.rendered: the same pages (Message objects, serialised by the route; see the module comment). */
    rendered: {
      page: page as (
        connectionId: string,
        chatId: string,
        limit: number,
        before?: PagePosition,
      ) => Promise<ChatPage<string | Message>>,
      pageAfter: pageAfter as (
        connectionId: string,
        chatId: string,
        limit: number,
        after: PagePosition,
      ) => Promise<ChatPage<string | Message> & { nextAfter: string | null }>,
      pageAround: pageAround as (
        connectionId: string,
        chatId: string,
        limit: number,
        at: PagePosition,
      ) => Promise<ChatPage<string | Message> & { nextAfter: string | null }>,
    },
    /** messagesRepo.iterate: a chat's messages oldest first, in batches by keyset. */
    async *iterate(
      connectionId: string,
      chatId: string,
      opts: { since?: number; until?: number; batch?: number } = {},
    ): AsyncGenerator<Message> {
      let from: PagePosition | null = rangeStart(opts.since);
      while (from) {
        const batch = await range(connectionId, chatId, from, opts.until, opts.batch);
        yield* batch.messages;
        from = batch.next;
      }
    },
    /** messagesRepo.range. */
    range,
    /** messagesRepo.latestIncomingRaw. */
    async latestIncomingRaw(connectionId: string, chatId: string): Promise<Buffer | undefined> {
      const [r] = await sql<Array<{ raw: Buffer }>>`SELECT raw FROM messages
        WHERE connection_id = ${connectionId} AND chat_id = ${chatId} AND NOT from_me AND raw IS NOT NULL
        ORDER BY timestamp DESC, seq DESC LIMIT 1`;
      return r?.raw;
    },
    /** messagesRepo.setAck: raises the ack (0 always applies); true when the row changed. */
    async setAck(connectionId: string, id: string, ack: number): Promise<boolean> {
      const r = await sql`UPDATE messages SET ack = ${ack} WHERE connection_id = ${connectionId} AND id = ${id}
        AND (ack IS NULL OR ack < ${ack} OR ${ack}::integer = 0)`;
      return r.count > 0;
    },
  };
}
