/**
 * PostgreSQL migration 2: the message side of the store — chats, contacts, messages with their edits, reactions and
 * poll votes, the group metadata cache, and the full-text index of messages. Column for column the SQLite schema
 * (service/db/migrations.ts, as of its migration 14) with PostgreSQL types: flags `boolean`, unix times and seqs
 * `bigint`, counters and acks `integer`, JSON documents `text` (copied into API JSON as the bytes they are), raw
 * protobuf bytes `bytea`. Ids, JIDs and emoji are `text COLLATE "C"`: every ORDER BY and comparison on them is by
 * code point, as SQLite's BINARY collation orders them, whatever the database's locale.
 *
 * Differences from SQLite, each keeping the results the same:
 * - `messages.seq` (arrival order, the tie-break of equal timestamps) comes from the sequence `messages_seq` rather
 *   than MAX(seq) + 1: several hosts insert at once. Values may have gaps; only their order is used.
 * - `message_edits.ord` stands in for SQLite's rowid (the tie-break of edits in the same second).
 * - The search index `message_search` is a table with a `tsvector` (the 'simple' configuration is not involved: the
 *   lexemes and positions are computed in TypeScript by the same tokenizer rules as SQLite FTS5's unicode61 with
 *   remove_diacritics 2, service/db/pg/fts.ts) and a GIN index; `rowid` is the same key as the FTS5 rowid
 *   (timestamp << 32 | seq), so "most recent first" and cursors order the same way. `ntokens` (the body's token
 *   count) and `tags` (the FTS5 tag tokens) keep bm25 relevance identical to FTS5's. Rows go with their connection
 *   (foreign key) and, as on SQLite, when the connection is stopped (trigger).
 */
export const messagesSchema = `
CREATE TABLE chats (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  id            text COLLATE "C" NOT NULL,     -- chat JID, phone-number JID where the mapping is known
  lid           text,
  name          text,
  is_group      boolean NOT NULL DEFAULT false,
  unread        integer NOT NULL DEFAULT 0,
  last_ts       bigint,
  last_body     text,
  last_from_me  boolean,
  last_id       text,                          -- messages.id of the preview
  last_kind     text,
  PRIMARY KEY (connection_id, id)
);
CREATE INDEX chats_recent ON chats(connection_id, last_ts DESC NULLS LAST, id);

CREATE TABLE contacts (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  jid           text COLLATE "C" NOT NULL,
  lid           text COLLATE "C",
  name          text,
  push_name     text,
  phone_number  text,
  is_group      boolean NOT NULL DEFAULT false,
  PRIMARY KEY (connection_id, jid)
);
CREATE INDEX contacts_lid ON contacts(connection_id, lid);

CREATE SEQUENCE messages_seq;
CREATE TABLE messages (
  connection_id    text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  id               text COLLATE "C" NOT NULL,  -- "<fromMe>_<chatId>_<key.id>"
  chat_id          text COLLATE "C" NOT NULL,
  key_id           text COLLATE "C" NOT NULL,
  from_me          boolean NOT NULL,
  timestamp        bigint NOT NULL,            -- unix seconds
  sender_jid       text COLLATE "C" NOT NULL,
  sender_push_name text NOT NULL DEFAULT '',
  type             text NOT NULL,
  text             text NOT NULL DEFAULT '',
  quoted_id        text,
  media            text,                       -- JSON MessageMedia column (file name, not URL) or NULL
  ack              integer,
  raw              bytea,
  edited_at        bigint,
  seq              bigint NOT NULL DEFAULT nextval('messages_seq'),
  mentions         text,                       -- JSON array or NULL
  kind             text NOT NULL DEFAULT 'text',
  raw_type         text,
  content          text,                       -- JSON structured content or NULL
  message_secret   bytea,
  is_forwarded     boolean NOT NULL DEFAULT false,
  PRIMARY KEY (connection_id, id)
);
ALTER SEQUENCE messages_seq OWNED BY messages.seq;
CREATE INDEX messages_page ON messages(connection_id, chat_id, timestamp DESC, seq DESC);
CREATE INDEX messages_key ON messages(connection_id, key_id);
CREATE INDEX messages_seq_order ON messages(seq);

CREATE TABLE message_reactions (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  message_id    text COLLATE "C" NOT NULL,
  sender_jid    text COLLATE "C" NOT NULL,
  emoji         text COLLATE "C" NOT NULL,
  timestamp     bigint NOT NULL,
  PRIMARY KEY (connection_id, message_id, sender_jid)
);

CREATE TABLE message_edits (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  message_id    text COLLATE "C" NOT NULL,
  edited_at     bigint NOT NULL,
  previous_text text NOT NULL,
  text          text NOT NULL,
  ord           bigserial                      -- insertion order (SQLite's rowid)
);
CREATE INDEX message_edits_message ON message_edits(connection_id, message_id, edited_at);

CREATE TABLE poll_votes (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  poll_id       text COLLATE "C" NOT NULL,
  voter_jid     text COLLATE "C" NOT NULL,
  options       text NOT NULL,                 -- JSON array of option names
  timestamp     bigint NOT NULL,
  PRIMARY KEY (connection_id, poll_id, voter_jid)
);

CREATE TABLE group_metadata (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  group_id      text COLLATE "C" NOT NULL,
  metadata      text NOT NULL,
  fetched_at    bigint NOT NULL,
  PRIMARY KEY (connection_id, group_id)
);

CREATE TABLE message_search (
  connection_id text COLLATE "C" NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  message_id    text COLLATE "C" NOT NULL,
  rowid         bigint NOT NULL,               -- timestamp << 32 | (seq & 0xffffffff): chat order
  body          text NOT NULL,                 -- search.ts searchBody (snippets are cut from it)
  ntokens       integer NOT NULL,              -- tokens of body
  tags          text[] NOT NULL,               -- FTS5 tag tokens: c<connection> k<chat> s<sender> t<type> f0|f1
  tsv           tsvector NOT NULL,             -- body's tokens at their positions (fts.ts)
  PRIMARY KEY (connection_id, message_id)
);
CREATE INDEX message_search_rowid ON message_search(rowid);
CREATE INDEX message_search_tsv ON message_search USING gin (tsv);
CREATE INDEX message_search_tags ON message_search USING gin (tags);

CREATE FUNCTION connection_stopped_cleanup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM message_search WHERE connection_id = OLD.id;
  DELETE FROM group_metadata WHERE connection_id = OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER connection_stopped AFTER UPDATE OF status ON connections
  FOR EACH ROW WHEN (NEW.status = 'stopped' AND OLD.status <> 'stopped')
  EXECUTE FUNCTION connection_stopped_cleanup();
`;
