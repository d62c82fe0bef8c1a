/**
 * The sandbox database schema as ordered migrations, applied by `PRAGMA user_version` (one transaction
 * per migration). Append new migrations; never edit a released one.
 */
import type Database from 'better-sqlite3';

export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;

  CREATE TABLE accounts (
    pn TEXT PRIMARY KEY,
    lid TEXT NOT NULL UNIQUE,
    push_name TEXT NOT NULL,
    registration_id INTEGER NOT NULL,
    identity_pub BLOB NOT NULL,
    identity_priv BLOB NOT NULL,
    signed_prekey_id INTEGER NOT NULL,
    signed_prekey_pub BLOB NOT NULL,
    signed_prekey_priv BLOB NOT NULL,
    signed_prekey_sig BLOB NOT NULL,
    next_prekey_id INTEGER NOT NULL,
    next_device_id INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL
  );

  -- one-time prekeys of the simulated phones; handed_out = given to a client by 'encrypt key'
  CREATE TABLE phone_prekeys (
    pn TEXT NOT NULL REFERENCES accounts(pn) ON DELETE CASCADE,
    key_id INTEGER NOT NULL,
    pub BLOB NOT NULL,
    priv BLOB NOT NULL,
    handed_out INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (pn, key_id)
  ) WITHOUT ROWID;
  CREATE INDEX phone_prekeys_available ON phone_prekeys (pn, handed_out, key_id);

  -- libsignal state of the simulated phones, keyed by the remote libsignal address
  CREATE TABLE signal_sessions (
    pn TEXT NOT NULL,
    address TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (pn, address)
  ) WITHOUT ROWID;
  CREATE TABLE signal_identities (
    pn TEXT NOT NULL,
    address TEXT NOT NULL,
    identity_key BLOB NOT NULL,
    PRIMARY KEY (pn, address)
  ) WITHOUT ROWID;

  -- linked companion devices (Baileys clients)
  CREATE TABLE devices (
    pn TEXT NOT NULL REFERENCES accounts(pn) ON DELETE CASCADE,
    device_id INTEGER NOT NULL,
    key_index INTEGER NOT NULL,
    noise_pub BLOB NOT NULL,
    registration_id INTEGER NOT NULL,
    identity_pub BLOB NOT NULL,
    signed_prekey_id INTEGER NOT NULL,
    signed_prekey_pub BLOB NOT NULL,
    signed_prekey_sig BLOB NOT NULL,
    platform TEXT,
    bundle_uploaded INTEGER NOT NULL DEFAULT 0,
    history_sent INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    last_seen_at INTEGER,
    PRIMARY KEY (pn, device_id)
  );
  CREATE TABLE device_prekeys (
    pn TEXT NOT NULL,
    device_id INTEGER NOT NULL,
    key_id INTEGER NOT NULL,
    pub BLOB NOT NULL,
    PRIMARY KEY (pn, device_id, key_id),
    FOREIGN KEY (pn, device_id) REFERENCES devices (pn, device_id) ON DELETE CASCADE
  ) WITHOUT ROWID;

  -- 1:1 messages between accounts (and to unknown numbers), as the phones know them
  CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id TEXT NOT NULL,
    from_pn TEXT NOT NULL,
    to_pn TEXT NOT NULL,
    ts INTEGER NOT NULL,
    text TEXT,
    message BLOB NOT NULL,
    UNIQUE (from_pn, msg_id)
  );
  CREATE INDEX messages_to ON messages (to_pn, ts, seq);
  CREATE INDEX messages_from ON messages (from_pn, ts, seq);

  -- undelivered stanzas per companion; a row is deleted only when the client's receipt arrives
  CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    pn TEXT NOT NULL,
    device_id INTEGER NOT NULL,
    msg_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    sender_pn TEXT,
    attrs TEXT NOT NULL,
    plaintext BLOB,
    enc_type TEXT,
    ciphertext BLOB,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (pn, device_id, msg_id),
    FOREIGN KEY (pn, device_id) REFERENCES devices (pn, device_id) ON DELETE CASCADE
  );
  CREATE INDEX outbox_device ON outbox (pn, device_id, seq);
  `,
  // v2: media host blobs, decrypted media per message, receipts and chatstates seen by phones
  `
  -- encrypted media files served by the HTTPS media host; body NULL = expired/deleted (404)
  CREATE TABLE media_blobs (
    direct_path TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    body BLOB,
    created_at INTEGER NOT NULL
  );

  -- the plaintext of a media message as the phones know it (re-encrypted for media re-upload)
  CREATE TABLE message_media (
    from_pn TEXT NOT NULL,
    msg_id TEXT NOT NULL,
    plaintext BLOB NOT NULL,
    PRIMARY KEY (from_pn, msg_id)
  ) WITHOUT ROWID;

  -- receipts a phone saw from other accounts' devices (delivery/read)
  CREATE TABLE receipts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    pn TEXT NOT NULL,
    from_pn TEXT NOT NULL,
    msg_ids TEXT NOT NULL,
    type TEXT NOT NULL,
    ts INTEGER NOT NULL
  );
  CREATE INDEX receipts_pn ON receipts (pn, seq);

  -- chatstates and presence a phone saw from other accounts' devices
  CREATE TABLE chatstates (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    pn TEXT NOT NULL,
    from_pn TEXT NOT NULL,
    state TEXT NOT NULL,
    ts INTEGER NOT NULL
  );
  CREATE INDEX chatstates_pn ON chatstates (pn, seq);
  `,
  // v3: groups (members, metadata), group messages and their recipients, sender keys of the simulated phones
  `
  -- a group; id is the group JID's user part ('<id>@g.us'); times are unix seconds; pn columns are E.164 digits
  CREATE TABLE groups (
    id TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    subject_owner TEXT NOT NULL,
    subject_ts INTEGER NOT NULL,
    description TEXT,
    description_id TEXT,
    description_owner TEXT,
    description_ts INTEGER,
    creator TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    addressing_mode TEXT NOT NULL CHECK (addressing_mode IN ('pn', 'lid')),
    invite_code TEXT NOT NULL
  );
  -- current members; role member | admin | superadmin
  CREATE TABLE group_participants (
    group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    pn TEXT NOT NULL,
    role TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (group_id, pn)
  ) WITHOUT ROWID;
  CREATE INDEX group_participants_pn ON group_participants (pn, group_id);

  -- a group message is one messages row (to_pn = group id, group_id set) plus one recipient row per member phone
  ALTER TABLE messages ADD COLUMN group_id TEXT;
  CREATE INDEX messages_group ON messages (group_id, ts, seq) WHERE group_id IS NOT NULL;
  CREATE TABLE group_message_recipients (
    pn TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (pn, seq)
  ) WITHOUT ROWID;

  -- the skmsg of a queued group message (delivered after the row's 1:1 part, if any)
  ALTER TABLE outbox ADD COLUMN sk_ciphertext BLOB;

  -- sender-key records of the phones: sender '' = the phone's own sending key for the group, else the
  -- sending companion's name; record is JSON (see sender-keys.ts)
  CREATE TABLE sender_keys (
    pn TEXT NOT NULL,
    group_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (pn, group_id, sender)
  ) WITHOUT ROWID;
  -- which companion devices already got a phone's sender key for a group (WhatsApp's "sender key memory")
  CREATE TABLE sender_key_sent (
    sender_pn TEXT NOT NULL,
    group_id TEXT NOT NULL,
    pn TEXT NOT NULL,
    device_id INTEGER NOT NULL,
    PRIMARY KEY (sender_pn, group_id, pn, device_id)
  ) WITHOUT ROWID;
  `,
  // v4: group settings — announcement (only admins send), locked (only admins edit the info), disappearing messages
  `
  ALTER TABLE groups ADD COLUMN announce INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE groups ADD COLUMN locked INTEGER NOT NULL DEFAULT 0;
  -- seconds a message stays (0 = off)
  ALTER TABLE groups ADD COLUMN ephemeral INTEGER NOT NULL DEFAULT 0;
  `,
  // v5: block lists (who blocked whom; blocklist IQs, a blocked account's messages refused)
  `
  CREATE TABLE block_list (
    pn TEXT NOT NULL REFERENCES accounts(pn) ON DELETE CASCADE,
    blocked_pn TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (pn, blocked_pn)
  ) WITHOUT ROWID;
  `,
  // v6: profiles (about text, profile picture) and the app-state sync key each account's phone shares with its
  // companions (so they can write app-state patches, e.g. the push name)
  `
  -- about (status text) and picture of an account; the picture's full image and preview are media_blobs rows
  CREATE TABLE profiles (
    pn TEXT PRIMARY KEY REFERENCES accounts(pn) ON DELETE CASCADE,
    about TEXT,
    about_set_at INTEGER,
    picture_id TEXT,
    picture_path TEXT,
    preview_path TEXT,
    picture_set_at INTEGER
  ) WITHOUT ROWID;

  -- the account's app-state sync key (6-byte id, 32-byte key data), made on first use
  CREATE TABLE app_state_keys (
    pn TEXT PRIMARY KEY REFERENCES accounts(pn) ON DELETE CASCADE,
    key_id BLOB NOT NULL,
    key_data BLOB NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;

  -- companions the phone already sent its app-state key to
  CREATE TABLE app_state_key_shares (
    pn TEXT NOT NULL,
    device_id INTEGER NOT NULL,
    PRIMARY KEY (pn, device_id),
    FOREIGN KEY (pn, device_id) REFERENCES devices (pn, device_id) ON DELETE CASCADE
  ) WITHOUT ROWID;
  `,
  // v7: status posts companions make (to status@broadcast), and which phones received each (their status list)
  `
  CREATE TABLE statuses (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id TEXT NOT NULL,
    from_pn TEXT NOT NULL,
    ts INTEGER NOT NULL,
    message BLOB NOT NULL,                   -- the proto.Message the viewers' phones decrypted
    UNIQUE (from_pn, msg_id)
  );
  CREATE TABLE status_viewers (
    pn TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (pn, seq)
  ) WITHOUT ROWID;
  `,
];

/**
 * Bring `db` to the latest schema version.
 * @throws if the file's schema is newer than this build knows.
 */
export function migrate(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`sandbox database schema v${current} is newer than this build (v${MIGRATIONS.length})`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    const sql = MIGRATIONS[v] ?? '';
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
