/**
 * Schema migrations for the service database, applied in order inside one transaction each.
 * `PRAGMA user_version` records how many have been applied; never edit a shipped migration, append a new one.
 */
export const migrations: readonly string[] = [
  /* 1: users, tokens, connections, Baileys auth state, chats, contacts, messages, event log, settings */ `
  CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    email          TEXT,
    subject        TEXT UNIQUE,               -- identity-provider "iss|sub" for JWT users
    disabled       INTEGER NOT NULL DEFAULT 0,
    last_event_seq INTEGER NOT NULL DEFAULT 0, -- per-user event log counter
    created_at     TEXT NOT NULL
  );

  CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,               -- display prefix, e.g. "wh_4f9Kx2"
    hash         TEXT NOT NULL UNIQUE,        -- SHA-256 hex of the whole token
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
  );
  CREATE INDEX api_tokens_user ON api_tokens(user_id);

  CREATE TABLE connections (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name          TEXT,
    worker_id     TEXT NOT NULL,
    session_name  TEXT NOT NULL UNIQUE,
    phone_number  TEXT,                       -- "+<digits>" once linked
    jid           TEXT,                       -- own PN JID "<digits>@s.whatsapp.net"
    lid           TEXT,                       -- own LID "<digits>@lid"
    push_name     TEXT,
    status        TEXT NOT NULL,
    status_reason TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
  );
  CREATE INDEX connections_user ON connections(user_id, created_at);

  -- Baileys AuthenticationCreds as one BufferJSON document per connection.
  CREATE TABLE auth_creds (
    connection_id TEXT PRIMARY KEY REFERENCES connections(id) ON DELETE CASCADE,
    creds         TEXT NOT NULL
  );
  -- Baileys SignalKeyStore: one row per (type, id), value BufferJSON text.
  CREATE TABLE auth_keys (
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    type          TEXT NOT NULL,
    id            TEXT NOT NULL,
    value         TEXT NOT NULL,
    PRIMARY KEY (connection_id, type, id)
  ) WITHOUT ROWID;

  CREATE TABLE chats (
    connection_id   TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    id              TEXT NOT NULL,            -- chat JID, phone-number JID where the mapping is known
    lid             TEXT,
    name            TEXT,
    is_group        INTEGER NOT NULL DEFAULT 0,
    unread          INTEGER NOT NULL DEFAULT 0,
    last_ts         INTEGER,
    last_body       TEXT,
    last_from_me    INTEGER,
    PRIMARY KEY (connection_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX chats_recent ON chats(connection_id, last_ts DESC);

  CREATE TABLE contacts (
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    jid           TEXT NOT NULL,
    lid           TEXT,
    name          TEXT,                       -- address-book name
    push_name     TEXT,                       -- name the contact chose
    phone_number  TEXT,
    is_group      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (connection_id, jid)
  ) WITHOUT ROWID;

  CREATE TABLE messages (
    connection_id    TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    id               TEXT NOT NULL,           -- "<fromMe>_<chatId>_<key.id>"
    chat_id          TEXT NOT NULL,
    key_id           TEXT NOT NULL,
    from_me          INTEGER NOT NULL,
    timestamp        INTEGER NOT NULL,        -- unix seconds
    sender_jid       TEXT NOT NULL,
    sender_push_name TEXT NOT NULL DEFAULT '',
    type             TEXT NOT NULL,
    text             TEXT NOT NULL DEFAULT '',
    quoted_id        TEXT,
    media            TEXT,                    -- JSON MessageMedia or NULL
    ack              INTEGER,                 -- WAMessageStatus (0 error … 5 played) for own messages
    raw              BLOB,                    -- proto.WebMessageInfo bytes, for retries and quoting
    PRIMARY KEY (connection_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX messages_page ON messages(connection_id, chat_id, timestamp DESC, id DESC);
  CREATE INDEX messages_key ON messages(connection_id, key_id);

  CREATE TABLE events (
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    connection_id TEXT,
    type          TEXT NOT NULL,
    payload       TEXT NOT NULL,              -- JSON
    created_at    TEXT NOT NULL,
    PRIMARY KEY (user_id, seq)
  ) WITHOUT ROWID;
  CREATE INDEX events_created ON events(created_at);

  CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL                       -- JSON
  ) WITHOUT ROWID;
  `,
  /* webhooks and their durable delivery outbox (issue #4) */ `
  CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    connection_id   TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,            -- JSON array of event types
    secret          TEXT NOT NULL,            -- "whsec_<base64 32 bytes>"
    active          INTEGER NOT NULL DEFAULT 1,
    disabled_reason TEXT,                     -- why the service set active = 0 (e.g. HTTP 410)
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
  );
  CREATE INDEX webhooks_connection ON webhooks(connection_id);

  CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    event_seq       INTEGER NOT NULL,         -- events.seq of the user's event
    msg_id          TEXT NOT NULL,            -- webhook-id header, stable across retries and replays
    event_type      TEXT NOT NULL,
    body            TEXT NOT NULL,            -- exact JSON bytes sent
    status          TEXT NOT NULL,            -- pending | delivering | delivered | failed | skipped
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,         -- ms since the epoch
    lease_until     INTEGER,
    last_status     INTEGER,                  -- HTTP status of the last attempt
    last_error      TEXT,
    last_response   TEXT,                     -- at most 1 KiB of the last response body (never returned by the API)
    replay_of       TEXT,
    delivered_at    TEXT,
    created_at      TEXT NOT NULL
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries(webhook_id, status, next_attempt_at);
  CREATE INDEX webhook_deliveries_log ON webhook_deliveries(webhook_id, created_at);
  CREATE INDEX webhook_deliveries_open ON webhook_deliveries(status) WHERE status IN ('pending', 'delivering');
  CREATE INDEX webhook_deliveries_event ON webhook_deliveries(user_id, event_seq);
  `,
  /* message edits (editedAt + history) and reactions (per message, per sender) (issue #3) */ `
  ALTER TABLE messages ADD COLUMN edited_at INTEGER; -- unix seconds of the latest edit
  CREATE TABLE message_reactions (
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    message_id    TEXT NOT NULL,             -- the reacted-to message
    sender_jid    TEXT NOT NULL,
    emoji         TEXT NOT NULL,
    timestamp     INTEGER NOT NULL,          -- unix seconds
    PRIMARY KEY (connection_id, message_id, sender_jid)
  ) WITHOUT ROWID;
  CREATE TABLE message_edits (
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    message_id    TEXT NOT NULL,
    edited_at     INTEGER NOT NULL,          -- unix seconds
    previous_text TEXT NOT NULL,
    text          TEXT NOT NULL
  );
  CREATE INDEX message_edits_message ON message_edits(connection_id, message_id, edited_at);
  `,
  /* billing: local-provider slots and Stripe customers per user (issue #6) */ `
  CREATE TABLE billing_accounts (
    user_id     TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    local_slots INTEGER,                     -- slots set with the local provider; NULL = the configured default
    updated_at  TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE stripe_customers (
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    mode            TEXT NOT NULL,           -- 'test' or 'live', from the secret key
    customer_id     TEXT NOT NULL,           -- "cus_..."
    subscription_id TEXT,                    -- "sub_..." once found after checkout
    updated_at      TEXT NOT NULL,
    PRIMARY KEY (user_id, mode)
  ) WITHOUT ROWID;
  `,
  /* messages.seq: arrival order, the tie-break of equal timestamps in chat pages (a second holds many messages) */ `
  ALTER TABLE messages ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
  UPDATE messages SET seq = r.n
    FROM (SELECT connection_id AS c, id AS i, ROW_NUMBER() OVER (ORDER BY timestamp, id) AS n FROM messages) AS r
    WHERE messages.connection_id = r.c AND messages.id = r.i;
  DROP INDEX messages_page;
  CREATE INDEX messages_page ON messages(connection_id, chat_id, timestamp DESC, seq DESC);
  CREATE INDEX messages_seq ON messages(seq);
  `,
  /*
   * Identity namespaces (issue 20 item 4): `kind` 'local' (created by name through the CLI or the desktop app; the
   * name is its unique key) or 'jwt' (an identity-provider user keyed by issuer + `sub`; its name is only a label and
   * need not be unique). The inline UNIQUE on `name` must go, so the table is rebuilt; openDatabase runs migrations
   * with foreign keys off and checks them after (a DROP TABLE with them on would cascade into every user's data).
   * Existing rows: a `subject` ("iss|sub", split at the first "|": issuers are URLs) makes a 'jwt' user.
   */ `
  CREATE TABLE users_new (
    id             TEXT PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('local', 'jwt')),
    name           TEXT NOT NULL,             -- local: the unique login name; jwt: a display label
    email          TEXT,
    issuer         TEXT,                      -- jwt: the token's "iss"
    subject        TEXT,                      -- jwt: the token's "sub"
    disabled       INTEGER NOT NULL DEFAULT 0,
    last_event_seq INTEGER NOT NULL DEFAULT 0, -- per-user event log counter
    created_at     TEXT NOT NULL,
    CHECK ((kind = 'local' AND issuer IS NULL AND subject IS NULL)
        OR (kind = 'jwt' AND issuer IS NOT NULL AND subject IS NOT NULL))
  );
  INSERT INTO users_new (id, kind, name, email, issuer, subject, disabled, last_event_seq, created_at)
    SELECT id,
           CASE WHEN subject IS NULL THEN 'local' ELSE 'jwt' END,
           name, email,
           CASE WHEN subject IS NULL THEN NULL
                WHEN instr(subject, '|') > 0 THEN substr(subject, 1, instr(subject, '|') - 1) ELSE '' END,
           CASE WHEN subject IS NULL THEN NULL
                WHEN instr(subject, '|') > 0 THEN substr(subject, instr(subject, '|') + 1) ELSE subject END,
           disabled, last_event_seq, created_at
    FROM users;
  DROP TABLE users;
  ALTER TABLE users_new RENAME TO users;
  CREATE UNIQUE INDEX users_local_name ON users(name) WHERE kind = 'local';
  CREATE UNIQUE INDEX users_jwt_identity ON users(issuer, subject) WHERE kind = 'jwt';
  `,
  /* messages.mentions: JIDs a message mentions (contextInfo.mentionedJid), a JSON array; NULL = none (issue 12) */ `
  ALTER TABLE messages ADD COLUMN mentions TEXT;
  `,
  /* message kinds and structured content, poll secrets and votes (issue #13) */ `
  ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'text'; -- MESSAGE_KINDS; type is derived from it
  ALTER TABLE messages ADD COLUMN raw_type TEXT;                      -- proto field name of 'unsupported' messages
  ALTER TABLE messages ADD COLUMN content TEXT;                       -- JSON: location, contacts, poll, selection, album, albumId
  ALTER TABLE messages ADD COLUMN message_secret BLOB;                -- a poll's messageSecret (decrypts its votes)
  UPDATE messages SET
    kind = CASE
      WHEN type IN ('text', 'image', 'video', 'audio', 'document', 'location', 'contact', 'sticker', 'revoked') THEN type
      WHEN type = 'pollUpdate' THEN 'unsupported' -- votes stored as empty messages before votes were decrypted
      WHEN type LIKE 'poll%' THEN 'poll'
      WHEN type IN ('buttonsResponse') THEN 'buttons_response'
      WHEN type IN ('listResponse') THEN 'list_response'
      ELSE 'unsupported' END,
    raw_type = CASE
      WHEN type IN ('text', 'image', 'video', 'audio', 'document', 'location', 'contact', 'sticker', 'revoked')
        OR (type LIKE 'poll%' AND type <> 'pollUpdate')
        OR type IN ('buttonsResponse', 'listResponse') THEN NULL
      ELSE type || 'Message' END;
  UPDATE messages SET type = CASE WHEN kind = 'sticker' THEN 'image' ELSE 'text' END
    WHERE type NOT IN ('text', 'image', 'video', 'audio', 'document', 'location', 'contact');
  CREATE TABLE poll_votes (
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    poll_id       TEXT NOT NULL,             -- message id of the poll
    voter_jid     TEXT NOT NULL,
    options       TEXT NOT NULL,             -- JSON array of the selected option names (latest vote)
    timestamp     INTEGER NOT NULL,          -- unix seconds of the vote
    PRIMARY KEY (connection_id, poll_id, voter_jid)
  ) WITHOUT ROWID;
  `,
  /* full-text search over messages (issue #15): the FTS5 index kept by service/db/search.ts, dropped with its
     connection, and the marker of the background backfill that indexes the messages stored before it existed */ `
  CREATE VIRTUAL TABLE message_search USING fts5(
    body,                                     -- searchable text (search.ts SEARCH_SOURCES)
    tags,                                     -- filter tokens: c<connection> k<chat> s<sender> t<type> f0|f1
    connection_id UNINDEXED,
    message_id UNINDEXED,                     -- rowid = timestamp << 32 | seq: chat order
    tokenize = 'unicode61 remove_diacritics 2'
  );
  CREATE TRIGGER message_search_connection_stopped AFTER UPDATE OF status ON connections
    WHEN new.status = 'stopped' AND old.status <> 'stopped'
    BEGIN DELETE FROM message_search WHERE connection_id = old.id; END;
  CREATE TRIGGER message_search_connection_deleted AFTER DELETE ON connections
    BEGIN DELETE FROM message_search WHERE connection_id = old.id; END;
  INSERT INTO settings (key, value)
    SELECT 'search.backfill', json_object('after', -1, 'upTo', MAX(seq), 'done', 0, 'total', COUNT(*))
    FROM messages HAVING COUNT(*) > 0;
  `,
  /* messages.is_forwarded: contextInfo.isForwarded of sent and received messages (issue 14 item 6) */ `
  ALTER TABLE messages ADD COLUMN is_forwarded INTEGER NOT NULL DEFAULT 0;
  `,
  /* connections: automatic call rejection and its text to the caller (issue 14 item 8) */ `
  ALTER TABLE connections ADD COLUMN reject_calls INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE connections ADD COLUMN reject_calls_message TEXT;
  `,
  /* group_metadata: the group metadata cache Baileys reads as cachedGroupMetadata, kept across restarts (issue 12) */ `
  CREATE TABLE group_metadata (
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    group_id      TEXT NOT NULL,             -- '<id>@g.us'
    metadata      TEXT NOT NULL,             -- Baileys GroupMetadata as JSON
    fetched_at    INTEGER NOT NULL,          -- unix ms the server last sent it whole (0: known from deltas only)
    PRIMARY KEY (connection_id, group_id)
  ) WITHOUT ROWID;
  CREATE TRIGGER group_metadata_connection_stopped AFTER UPDATE OF status ON connections
    WHEN new.status = 'stopped' AND old.status <> 'stopped'
    BEGIN DELETE FROM group_metadata WHERE connection_id = old.id; END;
  `,
  /* idempotency_keys: the Idempotency-Key of send and operation requests (issue 25 item 5; docs/api.md "Idempotent
     requests"), per user, connection and key, kept 24 h: the request's fingerprint, its first answer, and the id of
     the message the engine recorded for it (set in the transaction that records the message, before it leaves) */ `
  CREATE TABLE idempotency_keys (
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    key           TEXT NOT NULL,             -- the header's value, 1-255 printable ASCII characters
    fingerprint   TEXT NOT NULL,             -- SHA-256 hex of the route, its parameters and the body
    route         TEXT NOT NULL,             -- e.g. 'POST /api/connections/:id/send'
    state         TEXT NOT NULL,             -- 'pending' (reserved, no final answer yet) or 'done'
    message_id    TEXT,                      -- the Message the request answers with, once recorded for sending
    status_code   INTEGER,                   -- the first answer ('done')
    content_type  TEXT,
    response      TEXT,
    created_at    TEXT NOT NULL,             -- ISO 8601; the key expires 24 h later
    PRIMARY KEY (user_id, connection_id, key)
  ) WITHOUT ROWID;
  CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
  `,
  /*
   * chats.last_id / last_kind: which message the chat's preview (`lastMessage`) is, so an edit or a revoke of that
   * message reaches the preview (issue 25 item 2). Existing rows: the preview is the chat's message at `last_ts` from
   * the same side (`last_from_me`); among several in that second, the one whose text is the preview, else one whose
   * edit history started from it, else a revoked one, else the last to arrive. Its current text and kind replace the
   * stored preview, which an edit or a revoke had left stale. A preview whose message is not stored stays as it is.
   */ `
  ALTER TABLE chats ADD COLUMN last_id TEXT;   -- messages.id of the preview; NULL while no message of the chat is stored
  ALTER TABLE chats ADD COLUMN last_kind TEXT; -- that message's kind (MESSAGE_KINDS), 'revoked' once deleted for everyone
  UPDATE chats SET last_id = (
      SELECT m.id FROM messages m
      WHERE m.connection_id = chats.connection_id AND m.chat_id = chats.id AND m.timestamp = chats.last_ts
        AND m.from_me = chats.last_from_me AND m.kind <> 'undecryptable'
      ORDER BY m.text = IFNULL(chats.last_body, '') DESC,
        EXISTS (SELECT 1 FROM message_edits e WHERE e.connection_id = m.connection_id AND e.message_id = m.id
                  AND e.previous_text = IFNULL(chats.last_body, '')) DESC,
        m.kind = 'revoked' DESC,
        m.seq DESC
      LIMIT 1)
    WHERE last_from_me IS NOT NULL;
  UPDATE chats SET last_body = m.text, last_kind = m.kind
    FROM messages m WHERE m.connection_id = chats.connection_id AND m.id = chats.last_id;
  `,
  /* cache_generations: a counter per table that repositories keep in memory, bumped by triggers on every change, so a
     connection's cache learns of another connection's writes (docs/architecture.md § Data plane; issue 26 item 5) */ `
  CREATE TABLE cache_generations (
    name       TEXT PRIMARY KEY,             -- the cached table
    generation INTEGER NOT NULL              -- bumped by each statement that changes the table
  ) WITHOUT ROWID;
  INSERT INTO cache_generations (name, generation) VALUES ('webhooks', 0);
  CREATE TRIGGER webhooks_generation_insert AFTER INSERT ON webhooks
    BEGIN UPDATE cache_generations SET generation = generation + 1 WHERE name = 'webhooks'; END;
  CREATE TRIGGER webhooks_generation_update AFTER UPDATE ON webhooks
    BEGIN UPDATE cache_generations SET generation = generation + 1 WHERE name = 'webhooks'; END;
  CREATE TRIGGER webhooks_generation_delete AFTER DELETE ON webhooks
    BEGIN UPDATE cache_generations SET generation = generation + 1 WHERE name = 'webhooks'; END;
  `,
];
