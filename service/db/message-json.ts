/**
 * A stored message rendered as its API JSON by SQLite itself (issue 16: fast reads).
 *
 * Reading a page of 50 messages into JavaScript objects costs several times what SQLite spends finding them:
 * ~1,000 column values cross into V8 one by one, become a Message each, and are serialised again. Instead, the
 * page queries select one text per message, built in SQL (one `format()` of `json_quote`d columns) in exactly the
 * bytes the route's response serializer (fast-json-stringify over http/schemas.ts MessageSchema) writes for the
 * same record: the same key order, `JSON.stringify`'s escaping (json_quote escapes like it: `"`, `\`, U+0000–U+001F
 * with the short forms \b \f \n \r \t), integers truncated like its `asInteger`, and booleans from the stored 0/1.
 *
 * Values inside JSON columns (`media`, `mentions`) are copied as the JSON text they are stored as: the store writes
 * them with JSON.stringify, whose output a parse and re-serialisation reproduces exactly (lone surrogates stay
 * `\udXXX` escapes, which decoding them in SQL would not keep).
 *
 * SQL renders the common rows and leaves the others to JavaScript, which reads and serialises them as before
 * (messages.ts `renderedPages`):
 * - rows with structured content (`content`: location, contacts, poll, selection, album, albumId);
 * - rows whose media column is not the current shape with plain values: a `file` name with a character
 *   encodeURIComponent would escape (the URL is `@mediaPrefix` + the file), a legacy `url`, a missing or non-text
 *   `mimetype`, a non-text `filename`, a `size` that is not a safe integer. Checked only for rows with media.
 * test/unit/message-json.test.ts compares both renderings over adversarial rows.
 */

/** Booleans as fast-json-stringify writes the record's `=== 1` mapping. */
const bool = (column: string) => `CASE ${column} WHEN 1 THEN 'true' ELSE 'false' END`;
/** A nullable integer column (fast-json-stringify truncates non-integers; CAST does too). */
const nullableInt = (column: string) => `IFNULL(CAST(${column} AS INTEGER), 'null')`;

/** The media value, or U+0003 (JSON never holds it unescaped) for media left to JavaScript: see the file header. */
const MEDIA_JSON = `CASE WHEN m.media IS NULL THEN 'null'
    WHEN json_type(m.media, '$.url') IS NULL
      AND json_type(m.media, '$.file') = 'text' AND (m.media ->> '$.file') NOT GLOB '*[^-A-Za-z0-9._]*'
      AND json_type(m.media, '$.mimetype') = 'text'
      AND IFNULL(json_type(m.media, '$.filename'), '') IN ('text', 'null')
      AND (json_type(m.media, '$.size') = 'null'
        OR (json_type(m.media, '$.size') = 'integer' AND (m.media ->> '$.size') BETWEEN -9007199254740991 AND 9007199254740991))
    THEN format('{"url":%s,"mimetype":%s,"filename":%s,"size":%s}', json_quote(@mediaPrefix || (m.media ->> '$.file')),
      m.media -> '$.mimetype', m.media -> '$.filename', m.media -> '$.size')
    ELSE char(3) END`;

/**
 * The reactions array: one object per sender, by timestamp then sender (messages.ts reactionsOf's order). Most
 * messages have none: the index probe alone decides that, without the sorted aggregate.
 */
const REACTIONS_JSON = `CASE WHEN EXISTS (SELECT 1 FROM message_reactions r WHERE r.connection_id = m.connection_id AND r.message_id = m.id)
    THEN (SELECT '[' || group_concat(format('{"senderJid":%s,"emoji":%s,"timestamp":%s}', json_quote(r.sender_jid), json_quote(r.emoji),
      CAST(r.timestamp AS INTEGER)), ',' ORDER BY r.timestamp, r.sender_jid) || ']'
      FROM message_reactions r WHERE r.connection_id = m.connection_id AND r.message_id = m.id)
    ELSE '[]' END`;

/** The Message JSON of row `m` (one format() call: far fewer intermediate strings than a chain of `||`). */
const MESSAGE_JSON = `format('{"id":%s,"chatId":%s,"timestamp":%s,"fromMe":%s,"senderJid":%s,"senderPushName":%s,"type":%s,"kind":%s,\
"rawType":%s,"text":%s,"quotedMessageId":%s,"media":%s,"location":null,"contacts":null,"poll":null,"selection":null,\
"album":null,"albumId":null,"ack":%s,"mentions":%s,"isForwarded":%s,"editedAt":%s,"reactions":%s}',
    json_quote(m.id), json_quote(@chat), CAST(m.timestamp AS INTEGER), ${bool('m.from_me')}, json_quote(m.sender_jid),
    json_quote(m.sender_push_name), json_quote(m.type), json_quote(m.kind), json_quote(m.raw_type), json_quote(m.text),
    json_quote(m.quoted_id), ${MEDIA_JSON}, ${nullableInt('m.ack')},
    CASE WHEN m.mentions IS NULL OR m.mentions = '' THEN '[]' ELSE m.mentions END, ${bool('m.is_forwarded')},
    ${nullableInt('m.edited_at')}, ${REACTIONS_JSON})`;

/**
 * SQL expression over a `messages` row aliased `m` of the chat `@chat` (its `chatId` is `json_quote(@chat)`,
 * evaluated once per statement): one text per row, read by `itemJson`, `itemId` and `itemPosition`. Binds
 * `@mediaPrefix`: MediaUrls.of(connectionId, '') (the media URL without the file name).
 *
 * The text is the Message JSON, or U+0001 and the message id for a row with structured content; then U+0002 and
 * the row's position `<timestamp>:<seq>`. Media left to JavaScript put U+0003 in the JSON. No control character
 * occurs unescaped in JSON text, and the position follows the last U+0002, so an id holding one still reads back
 * whole. One text per row rather than a row of columns: each value read into JavaScript costs about as much as
 * rendering it.
 */
export const MESSAGE_ITEM_SQL = `CASE WHEN m.content IS NULL THEN ${MESSAGE_JSON} ELSE char(1) || m.id END
  || char(2) || m.timestamp || ':' || m.seq`;

/** The Message JSON of a MESSAGE_ITEM_SQL text; undefined for a row left to JavaScript (`itemId`). */
export function itemJson(text: string): string | undefined {
  if (text.charCodeAt(0) === 1) return undefined;
  const json = text.slice(0, text.lastIndexOf('\u0002'));
  return json.includes('\u0003') ? undefined : json;
}

/** The message id of a MESSAGE_ITEM_SQL text left to JavaScript. */
export function itemId(text: string): string {
  if (text.charCodeAt(0) === 1) return text.slice(1, text.lastIndexOf('\u0002'));
  // {"id":<JSON string>,"chatId":… — inside a JSON string every `"` is escaped, so the first `,"chatId":` ends it.
  return JSON.parse(text.slice('{"id":'.length, text.indexOf(',"chatId":'))) as string;
}

/** The chat position of a MESSAGE_ITEM_SQL text. */
export function itemPosition(text: string): { timestamp: number; seq: number } {
  const end = text.lastIndexOf('\u0002');
  const colon = text.indexOf(':', end);
  return { timestamp: Number(text.slice(end + 1, colon)), seq: Number(text.slice(colon + 1)) };
}
