/**
 * Sandbox persistence: the one SQLite file (`<dataDir>/sandbox.db`) holding everything a WhatsApp
 * server and the simulated phones would keep — server keys, accounts and their phone Signal keys,
 * libsignal sessions/identities, linked companion devices and their uploaded prekey bundles,
 * conversations, and the per-companion undelivered queue ("outbox").
 *
 * Owns: every SQL statement (nothing else in the sandbox writes SQL; the schema is in `schema.ts`),
 * and the group-commit writer: hot-path writes (Signal session updates, received
 * messages) are queued with `enqueue()` and committed together in one transaction by `commit()`,
 * so many concurrent deliveries cost one fsync. Reads of queued-but-uncommitted Signal sessions are
 * served from an in-memory write-through cache.
 *
 * Durability: WAL; a group commit is written with `synchronous=NORMAL` and its WAL fsynced on the thread pool
 * (`db/wal-sync.ts`, the same sync FULL makes, off the event loop); callers `await commit()`, which resolves after
 * that fsync, before anything that depends on the write reaching disk (sending ciphertext, acknowledging a
 * message, answering 201). Other transactions commit with FULL.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { migrate } from './schema.ts';
import { DatabaseOpenError, relaxedTransaction } from '../db/database.ts';
import { WalSync } from '../db/wal-sync.ts';

export interface AccountRow {
  pn: string;
  /** LID user digits (no `@lid`). */
  lid: string;
  pushName: string;
  registrationId: number;
  /** Phone identity key pair (32-byte Curve25519, no 0x05 prefix); also the ADV account key. */
  identityPub: Buffer;
  identityPriv: Buffer;
  signedPreKeyId: number;
  signedPreKeyPub: Buffer;
  signedPreKeyPriv: Buffer;
  signedPreKeySig: Buffer;
  nextPreKeyId: number;
  nextDeviceId: number;
  createdAt: number;
}

export interface DeviceRow {
  pn: string;
  deviceId: number;
  keyIndex: number;
  noisePub: Buffer;
  registrationId: number;
  identityPub: Buffer;
  signedPreKeyId: number;
  signedPreKeyPub: Buffer;
  signedPreKeySig: Buffer;
  platform: string | null;
  bundleUploaded: boolean;
  historySent: boolean;
  createdAt: number;
  lastSeenAt: number | null;
}

export interface MessageRow {
  seq: number;
  msgId: string;
  fromPn: string;
  toPn: string;
  /** Unix seconds. */
  ts: number;
  text: string | null;
  /** Encoded `proto.Message`. */
  message: Buffer;
  /** Group id (JID user part) of a group message (then `toPn` is the group id too); null for 1:1. */
  groupId: string | null;
}

export type NewMessage = Omit<MessageRow, 'seq' | 'groupId'> & { groupId?: string | null };

export interface OutboxRow {
  seq: number;
  pn: string;
  deviceId: number;
  msgId: string;
  /**
   * `message` (from a phone), `history` (initial history sync), `relay` (another companion's ciphertext),
   * `notification` (a `<notification>` with `attrs`; `plaintext` is its encoded child node; removed by its `<ack>`).
   */
  kind: OutboxKind;
  /** Account whose phone (device 0) encrypts `plaintext`; null for relayed ciphertext. */
  senderPn: string | null;
  /** Stanza attributes of the `<message>` to deliver (all strings). */
  attrs: Record<string, string>;
  /**
   * Encoded `proto.Message` (unpadded) of a phone's row: what `ciphertext` encrypts, kept to encrypt it again when
   * the companion sends a retry receipt. For a group row, the sender-key distribution message.
   */
  plaintext: Buffer | null;
  /**
   * The bytes delivered in the row's `<enc>` (`pkmsg`/`msg`): a phone's ciphertext, made once (at send, or at the
   * first delivery for rows queued without it) and sent as-is on every redelivery, or a companion's relayed
   * ciphertext. Null until made.
   */
  encType: string | null;
  ciphertext: Buffer | null;
  /** A group message's `skmsg`, sent after the 1:1 part (the SKDM), if any. */
  skCiphertext: Buffer | null;
  attempts: number;
}

export type GroupRole = 'member' | 'admin' | 'superadmin';
export type AddressingMode = 'pn' | 'lid';

export interface GroupRow {
  /** The group JID's user part (`<id>@g.us`). */
  id: string;
  subject: string;
  /** pn of whoever set the subject. */
  subjectOwner: string;
  /** Unix seconds. */
  subjectTs: number;
  description: string | null;
  descriptionId: string | null;
  descriptionOwner: string | null;
  descriptionTs: number | null;
  creator: string;
  /** Unix seconds. */
  createdAt: number;
  addressingMode: AddressingMode;
  inviteCode: string;
  /** Only admins may send. */
  announce: boolean;
  /** Only admins may change the subject, description and settings. */
  locked: boolean;
  /** Disappearing-messages timer in seconds; 0 = off. */
  ephemeral: number;
}

/** A group as created (settings start off). */
export type NewGroup = Omit<GroupRow, 'announce' | 'locked' | 'ephemeral'>;

export interface GroupParticipantRow {
  pn: string;
  role: GroupRole;
  addedAt: number;
}

interface GroupSql {
  id: string;
  subject: string;
  subject_owner: string;
  subject_ts: number;
  description: string | null;
  description_id: string | null;
  description_owner: string | null;
  description_ts: number | null;
  creator: string;
  created_at: number;
  addressing_mode: string;
  invite_code: string;
  announce: number;
  locked: number;
  ephemeral: number;
}

const toGroup = (r: GroupSql): GroupRow => ({
  id: r.id,
  subject: r.subject,
  subjectOwner: r.subject_owner,
  subjectTs: r.subject_ts,
  description: r.description,
  descriptionId: r.description_id,
  descriptionOwner: r.description_owner,
  descriptionTs: r.description_ts,
  creator: r.creator,
  createdAt: r.created_at,
  addressingMode: r.addressing_mode === 'lid' ? 'lid' : 'pn',
  inviteCode: r.invite_code,
  announce: r.announce !== 0,
  locked: r.locked !== 0,
  ephemeral: r.ephemeral,
});

export type NewOutbox = Omit<OutboxRow, 'seq' | 'attempts' | 'skCiphertext'> & { skCiphertext?: Buffer | null };
export type OutboxKind = 'message' | 'history' | 'relay' | 'notification';

export interface PreKey {
  keyId: number;
  pub: Buffer;
}

export interface DeviceBundleUpload {
  registrationId: number;
  identityPub: Buffer;
  signedPreKeyId: number;
  signedPreKeyPub: Buffer;
  signedPreKeySig: Buffer;
  preKeys: PreKey[];
}

interface AccountSql {
  pn: string;
  lid: string;
  push_name: string;
  registration_id: number;
  identity_pub: Buffer;
  identity_priv: Buffer;
  signed_prekey_id: number;
  signed_prekey_pub: Buffer;
  signed_prekey_priv: Buffer;
  signed_prekey_sig: Buffer;
  next_prekey_id: number;
  next_device_id: number;
  created_at: number;
}

interface DeviceSql {
  pn: string;
  device_id: number;
  key_index: number;
  noise_pub: Buffer;
  registration_id: number;
  identity_pub: Buffer;
  signed_prekey_id: number;
  signed_prekey_pub: Buffer;
  signed_prekey_sig: Buffer;
  platform: string | null;
  bundle_uploaded: number;
  history_sent: number;
  created_at: number;
  last_seen_at: number | null;
}

interface MessageSql {
  seq: number;
  msg_id: string;
  from_pn: string;
  to_pn: string;
  ts: number;
  text: string | null;
  message: Buffer;
  group_id: string | null;
}

interface OutboxSql {
  seq: number;
  pn: string;
  device_id: number;
  msg_id: string;
  kind: string;
  sender_pn: string | null;
  attrs: string;
  plaintext: Buffer | null;
  enc_type: string | null;
  ciphertext: Buffer | null;
  sk_ciphertext: Buffer | null;
  attempts: number;
}

const toAccount = (r: AccountSql): AccountRow => ({
  pn: r.pn,
  lid: r.lid,
  pushName: r.push_name,
  registrationId: r.registration_id,
  identityPub: r.identity_pub,
  identityPriv: r.identity_priv,
  signedPreKeyId: r.signed_prekey_id,
  signedPreKeyPub: r.signed_prekey_pub,
  signedPreKeyPriv: r.signed_prekey_priv,
  signedPreKeySig: r.signed_prekey_sig,
  nextPreKeyId: r.next_prekey_id,
  nextDeviceId: r.next_device_id,
  createdAt: r.created_at,
});

const toDevice = (r: DeviceSql): DeviceRow => ({
  pn: r.pn,
  deviceId: r.device_id,
  keyIndex: r.key_index,
  noisePub: r.noise_pub,
  registrationId: r.registration_id,
  identityPub: r.identity_pub,
  signedPreKeyId: r.signed_prekey_id,
  signedPreKeyPub: r.signed_prekey_pub,
  signedPreKeySig: r.signed_prekey_sig,
  platform: r.platform,
  bundleUploaded: r.bundle_uploaded !== 0,
  historySent: r.history_sent !== 0,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
});

const toMessage = (r: MessageSql): MessageRow => ({
  seq: r.seq,
  msgId: r.msg_id,
  fromPn: r.from_pn,
  toPn: r.to_pn,
  ts: r.ts,
  text: r.text,
  message: r.message,
  groupId: r.group_id,
});

const toOutbox = (r: OutboxSql): OutboxRow => ({
  seq: r.seq,
  pn: r.pn,
  deviceId: r.device_id,
  msgId: r.msg_id,
  kind: r.kind as OutboxKind,
  senderPn: r.sender_pn,
  attrs: JSON.parse(r.attrs) as Record<string, string>,
  plaintext: r.plaintext,
  encType: r.enc_type,
  ciphertext: r.ciphertext,
  skCiphertext: r.sk_ciphertext,
  attempts: r.attempts,
});

/** Every SQL statement of the sandbox, prepared once. */
function prepareStatements(db: Database.Database) {
  return {
    getMeta: db.prepare<[string], { value: Buffer }>('SELECT value FROM meta WHERE key = ?'),
    setMeta: db.prepare<[string, Buffer]>('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)'),
    listAccounts: db.prepare<[], AccountSql>('SELECT * FROM accounts ORDER BY created_at, pn'),
    countAccounts: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM accounts'),
    getAccount: db.prepare<[string], AccountSql>('SELECT * FROM accounts WHERE pn = ?'),
    getAccountByLid: db.prepare<[string], AccountSql>('SELECT * FROM accounts WHERE lid = ?'),
    insertAccount: db.prepare<[AccountSql]>(
      `INSERT INTO accounts (pn, lid, push_name, registration_id, identity_pub, identity_priv, signed_prekey_id,
         signed_prekey_pub, signed_prekey_priv, signed_prekey_sig, next_prekey_id, next_device_id, created_at)
       VALUES (@pn, @lid, @push_name, @registration_id, @identity_pub, @identity_priv, @signed_prekey_id,
         @signed_prekey_pub, @signed_prekey_priv, @signed_prekey_sig, @next_prekey_id, @next_device_id, @created_at)`,
    ),
    setAccountPushName: db.prepare<[string, string]>('UPDATE accounts SET push_name = ? WHERE pn = ?'),
    allocateDeviceId: db.prepare<[string], { id: number }>(
      'UPDATE accounts SET next_device_id = next_device_id + 1 WHERE pn = ? RETURNING next_device_id - 1 AS id',
    ),
    setNextPreKeyId: db.prepare<[number, string]>('UPDATE accounts SET next_prekey_id = ? WHERE pn = ?'),
    insertPhonePreKey: db.prepare<[string, number, Buffer, Buffer]>(
      'INSERT INTO phone_prekeys (pn, key_id, pub, priv) VALUES (?, ?, ?, ?)',
    ),
    takePhonePreKey: db.prepare<[string, string], { key_id: number; pub: Buffer }>(
      `UPDATE phone_prekeys SET handed_out = 1
       WHERE pn = ? AND key_id = (SELECT key_id FROM phone_prekeys WHERE pn = ? AND handed_out = 0 ORDER BY key_id LIMIT 1)
       RETURNING key_id, pub`,
    ),
    countPhonePreKeys: db.prepare<[string], { n: number }>(
      'SELECT count(*) AS n FROM phone_prekeys WHERE pn = ? AND handed_out = 0',
    ),
    getPhonePreKey: db.prepare<[string, number], { pub: Buffer; priv: Buffer }>(
      'SELECT pub, priv FROM phone_prekeys WHERE pn = ? AND key_id = ?',
    ),
    deletePhonePreKey: db.prepare<[string, number]>('DELETE FROM phone_prekeys WHERE pn = ? AND key_id = ?'),
    getSession: db.prepare<[string, string], { record: string }>(
      'SELECT record FROM signal_sessions WHERE pn = ? AND address = ?',
    ),
    putSession: db.prepare<[string, string, string]>(
      'INSERT OR REPLACE INTO signal_sessions (pn, address, record) VALUES (?, ?, ?)',
    ),
    deleteSessionsForAddress: db.prepare<[string]>('DELETE FROM signal_sessions WHERE address = ?'),
    deleteSession: db.prepare<[string, string]>('DELETE FROM signal_sessions WHERE pn = ? AND address = ?'),
    getIdentity: db.prepare<[string, string], { identity_key: Buffer }>(
      'SELECT identity_key FROM signal_identities WHERE pn = ? AND address = ?',
    ),
    putIdentity: db.prepare<[string, string, Buffer]>(
      'INSERT OR REPLACE INTO signal_identities (pn, address, identity_key) VALUES (?, ?, ?)',
    ),
    insertDevice: db.prepare<[DeviceSql]>(
      `INSERT INTO devices (pn, device_id, key_index, noise_pub, registration_id, identity_pub, signed_prekey_id,
         signed_prekey_pub, signed_prekey_sig, platform, bundle_uploaded, history_sent, created_at, last_seen_at)
       VALUES (@pn, @device_id, @key_index, @noise_pub, @registration_id, @identity_pub, @signed_prekey_id,
         @signed_prekey_pub, @signed_prekey_sig, @platform, @bundle_uploaded, @history_sent, @created_at, @last_seen_at)`,
    ),
    getDevice: db.prepare<[string, number], DeviceSql>('SELECT * FROM devices WHERE pn = ? AND device_id = ?'),
    listDevices: db.prepare<[string], DeviceSql>('SELECT * FROM devices WHERE pn = ? ORDER BY device_id'),
    listDeliveryTargets: db.prepare<[string], { device_id: number; history_sent: number }>(
      'SELECT device_id, history_sent FROM devices WHERE pn = ? ORDER BY device_id',
    ),
    deleteDevice: db.prepare<[string, number]>('DELETE FROM devices WHERE pn = ? AND device_id = ?'),
    setDeviceBundle: db.prepare<[number, Buffer, number, Buffer, Buffer, string, number]>(
      `UPDATE devices SET registration_id = ?, identity_pub = ?, signed_prekey_id = ?, signed_prekey_pub = ?,
         signed_prekey_sig = ?, bundle_uploaded = 1 WHERE pn = ? AND device_id = ?`,
    ),
    setDeviceSignedPreKey: db.prepare<[number, Buffer, Buffer, string, number]>(
      'UPDATE devices SET signed_prekey_id = ?, signed_prekey_pub = ?, signed_prekey_sig = ? WHERE pn = ? AND device_id = ?',
    ),
    markHistorySent: db.prepare<[string, number]>('UPDATE devices SET history_sent = 1 WHERE pn = ? AND device_id = ?'),
    touchDevice: db.prepare<[number, string, number]>(
      'UPDATE devices SET last_seen_at = ? WHERE pn = ? AND device_id = ?',
    ),
    insertDevicePreKey: db.prepare<[string, number, number, Buffer]>(
      'INSERT OR REPLACE INTO device_prekeys (pn, device_id, key_id, pub) VALUES (?, ?, ?, ?)',
    ),
    takeDevicePreKey: db.prepare<[string, number, string, number], { key_id: number; pub: Buffer }>(
      `DELETE FROM device_prekeys
       WHERE pn = ? AND device_id = ? AND key_id = (SELECT key_id FROM device_prekeys WHERE pn = ? AND device_id = ? ORDER BY key_id LIMIT 1)
       RETURNING key_id, pub`,
    ),
    countDevicePreKeys: db.prepare<[string, number], { n: number }>(
      'SELECT count(*) AS n FROM device_prekeys WHERE pn = ? AND device_id = ?',
    ),
    insertMessage: db.prepare<[string, string, string, number, string | null, Buffer, string | null]>(
      'INSERT OR IGNORE INTO messages (msg_id, from_pn, to_pn, ts, text, message, group_id) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    listReceived: db.prepare<[string], MessageSql>(
      'SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE to_pn = ? ORDER BY ts, seq',
    ),
    listInvolving: db.prepare<[string, string], MessageSql>(
      `SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE from_pn = ? AND group_id IS NULL
       UNION ALL
       SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE to_pn = ? AND from_pn <> to_pn
       ORDER BY ts, seq`,
    ),
    insertOutbox: db.prepare<
      [
        string,
        number,
        string,
        string,
        string | null,
        string,
        Buffer | null,
        string | null,
        Buffer | null,
        Buffer | null,
        number,
      ]
    >(
      `INSERT OR IGNORE INTO outbox (pn, device_id, msg_id, kind, sender_pn, attrs, plaintext, enc_type, ciphertext,
         sk_ciphertext, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    listOutbox: db.prepare<[string, number, number, number], OutboxSql>(
      'SELECT * FROM outbox WHERE pn = ? AND device_id = ? AND seq > ? ORDER BY seq LIMIT ?',
    ),
    getOutboxByMsgId: db.prepare<[string, number, string], OutboxSql>(
      'SELECT * FROM outbox WHERE pn = ? AND device_id = ? AND msg_id = ?',
    ),
    maxOutboxSeq: db.prepare<[], { m: number | null }>('SELECT max(seq) AS m FROM outbox'),
    hasOutboxKind: db.prepare<[string, number, string], { one: number }>(
      'SELECT 1 AS one FROM outbox WHERE pn = ? AND device_id = ? AND kind = ? LIMIT 1',
    ),
    deleteOutbox: db.prepare<[string, number, string]>(
      'DELETE FROM outbox WHERE pn = ? AND device_id = ? AND msg_id = ?',
    ),
    bumpOutboxAttempts: db.prepare<[string, number, string]>(
      'UPDATE outbox SET attempts = attempts + 1 WHERE pn = ? AND device_id = ? AND msg_id = ?',
    ),
    setOutboxCiphertext: db.prepare<[string, Buffer, number]>('UPDATE outbox SET enc_type = ?, ciphertext = ? WHERE seq = ?'),
    requeueOutbox: db.prepare<[string, number, string, string, string | null, string, Buffer | null, string, Buffer, Buffer | null, number, number]>(
      `INSERT INTO outbox (pn, device_id, msg_id, kind, sender_pn, attrs, plaintext, enc_type, ciphertext, sk_ciphertext,
         attempts, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    getMessage: db.prepare<[string, string], MessageSql>(
      'SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE from_pn = ? AND msg_id = ?',
    ),
    findMessageForPhone: db.prepare<[string, string, string], MessageSql>(
      `SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages
       WHERE msg_id = ? AND (from_pn = ? OR to_pn = ?) LIMIT 1`,
    ),
    findMessageInChat: db.prepare<[string, string, string, string, string], MessageSql>(
      `SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages
       WHERE msg_id = ? AND ((from_pn = ? AND to_pn = ?) OR (from_pn = ? AND to_pn = ?)) LIMIT 1`,
    ),
    putBlob: db.prepare<[string, string, Buffer, number]>(
      'INSERT OR REPLACE INTO media_blobs (direct_path, media_type, body, created_at) VALUES (?, ?, ?, ?)',
    ),
    getBlob: db.prepare<[string], { media_type: string; body: Buffer | null }>(
      'SELECT media_type, body FROM media_blobs WHERE direct_path = ?',
    ),
    expireBlob: db.prepare<[string]>('UPDATE media_blobs SET body = NULL WHERE direct_path = ? AND body IS NOT NULL'),
    putMessageMedia: db.prepare<[string, string, Buffer]>(
      'INSERT OR REPLACE INTO message_media (from_pn, msg_id, plaintext) VALUES (?, ?, ?)',
    ),
    getMessageMedia: db.prepare<[string, string], { plaintext: Buffer }>(
      'SELECT plaintext FROM message_media WHERE from_pn = ? AND msg_id = ?',
    ),
    insertReceipt: db.prepare<[string, string, string, string, number]>(
      'INSERT INTO receipts (pn, from_pn, msg_ids, type, ts) VALUES (?, ?, ?, ?, ?)',
    ),
    listReceipts: db.prepare<[string], { from_pn: string; msg_ids: string; type: string; ts: number }>(
      'SELECT from_pn, msg_ids, type, ts FROM receipts WHERE pn = ? ORDER BY seq',
    ),
    listReceiptsFrom: db.prepare<[string], { from_pn: string; msg_ids: string; type: string; ts: number }>(
      'SELECT from_pn, msg_ids, type, ts FROM receipts WHERE from_pn = ? ORDER BY seq',
    ),
    insertChatstate: db.prepare<[string, string, string, number]>(
      'INSERT INTO chatstates (pn, from_pn, state, ts) VALUES (?, ?, ?, ?)',
    ),
    listChatstates: db.prepare<[string], { from_pn: string; state: string; ts: number }>(
      'SELECT from_pn, state, ts FROM chatstates WHERE pn = ? ORDER BY seq',
    ),
    listPeers: db.prepare<[string, string], { pn: string }>(
      `SELECT to_pn AS pn FROM messages WHERE from_pn = ? AND group_id IS NULL
       UNION SELECT from_pn AS pn FROM messages WHERE to_pn = ?`,
    ),
    insertGroupRecipient: db.prepare<[string, number]>(
      'INSERT OR IGNORE INTO group_message_recipients (pn, seq) VALUES (?, ?)',
    ),
    listGroupReceived: db.prepare<[string], MessageSql>(
      `SELECT m.seq, m.msg_id, m.from_pn, m.to_pn, m.ts, m.text, m.message, m.group_id
       FROM group_message_recipients r JOIN messages m ON m.seq = r.seq WHERE r.pn = ? ORDER BY m.ts, m.seq`,
    ),
    listGroupHistory: db.prepare<[string, string], MessageSql>(
      `SELECT m.seq, m.msg_id, m.from_pn, m.to_pn, m.ts, m.text, m.message, m.group_id
       FROM group_message_recipients r JOIN messages m ON m.seq = r.seq WHERE r.pn = ?
       UNION ALL
       SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages
       WHERE from_pn = ? AND group_id IS NOT NULL
       ORDER BY 5, 1`,
    ),
    listGroupMessagesSeenBy: db.prepare<[string, string], MessageSql>(
      `SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE group_id IN (
         SELECT m.group_id FROM group_message_recipients r JOIN messages m ON m.seq = r.seq WHERE r.pn = ?
         UNION SELECT group_id FROM messages WHERE from_pn = ? AND group_id IS NOT NULL)
       ORDER BY ts, seq`,
    ),
    listGroupMessages: db.prepare<[string], MessageSql>(
      'SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE group_id = ? ORDER BY ts, seq',
    ),
    findGroupMessage: db.prepare<[string, string], MessageSql>(
      'SELECT seq, msg_id, from_pn, to_pn, ts, text, message, group_id FROM messages WHERE group_id = ? AND msg_id = ? LIMIT 1',
    ),
    insertGroup: db.prepare<[Omit<GroupSql, 'announce' | 'locked' | 'ephemeral'>]>(
      `INSERT INTO groups (id, subject, subject_owner, subject_ts, description, description_id, description_owner,
         description_ts, creator, created_at, addressing_mode, invite_code)
       VALUES (@id, @subject, @subject_owner, @subject_ts, @description, @description_id, @description_owner,
         @description_ts, @creator, @created_at, @addressing_mode, @invite_code)`,
    ),
    getGroup: db.prepare<[string], GroupSql>('SELECT * FROM groups WHERE id = ?'),
    listGroups: db.prepare<[], GroupSql>('SELECT * FROM groups ORDER BY created_at, id'),
    getGroupByInviteCode: db.prepare<[string], GroupSql>('SELECT * FROM groups WHERE invite_code = ?'),
    listGroupsOf: db.prepare<[string], GroupSql>(
      `SELECT g.* FROM group_participants p JOIN groups g ON g.id = p.group_id WHERE p.pn = ?
       ORDER BY g.created_at, g.id`,
    ),
    listGroupParticipants: db.prepare<[string], { pn: string; role: string; added_at: number }>(
      'SELECT pn, role, added_at FROM group_participants WHERE group_id = ? ORDER BY added_at, pn',
    ),
    setGroupSubject: db.prepare<[string, string, number, string]>(
      'UPDATE groups SET subject = ?, subject_owner = ?, subject_ts = ? WHERE id = ?',
    ),
    setGroupDescription: db.prepare<[string | null, string | null, string, number, string]>(
      'UPDATE groups SET description = ?, description_id = ?, description_owner = ?, description_ts = ? WHERE id = ?',
    ),
    setGroupInviteCode: db.prepare<[string, string]>('UPDATE groups SET invite_code = ? WHERE id = ?'),
    setGroupSettings: db.prepare<[number, number, number, string]>(
      'UPDATE groups SET announce = ?, locked = ?, ephemeral = ? WHERE id = ?',
    ),
    upsertParticipant: db.prepare<[string, string, string, number]>(
      `INSERT INTO group_participants (group_id, pn, role, added_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (group_id, pn) DO UPDATE SET role = excluded.role`,
    ),
    deleteParticipant: db.prepare<[string, string]>('DELETE FROM group_participants WHERE group_id = ? AND pn = ?'),
    insertStatus: db.prepare<[string, string, number, Buffer]>(
      'INSERT INTO statuses (msg_id, from_pn, ts, message) VALUES (?, ?, ?, ?) ON CONFLICT (from_pn, msg_id) DO NOTHING',
    ),
    getStatusSeq: db.prepare<[string, string], { seq: number }>('SELECT seq FROM statuses WHERE from_pn = ? AND msg_id = ?'),
    insertStatusViewer: db.prepare<[string, number]>('INSERT OR IGNORE INTO status_viewers (pn, seq) VALUES (?, ?)'),
    listStatusesSeenBy: db.prepare<[string, number], { msg_id: string; from_pn: string; ts: number; message: Buffer }>(
      `SELECT s.msg_id, s.from_pn, s.ts, s.message FROM status_viewers v JOIN statuses s ON s.seq = v.seq
       WHERE v.pn = ? AND s.ts >= ? ORDER BY s.ts, s.seq`,
    ),
    getSenderKey: db.prepare<[string, string, string], { record: string }>(
      'SELECT record FROM sender_keys WHERE pn = ? AND group_id = ? AND sender = ?',
    ),
    putSenderKey: db.prepare<[string, string, string, string]>(
      'INSERT OR REPLACE INTO sender_keys (pn, group_id, sender, record) VALUES (?, ?, ?, ?)',
    ),
    deleteOwnSenderKeys: db.prepare<[string]>("DELETE FROM sender_keys WHERE group_id = ? AND sender = ''"),
    listOwnSenderKeyHolders: db.prepare<[string], { pn: string }>(
      "SELECT pn FROM sender_keys WHERE group_id = ? AND sender = ''",
    ),
    deleteSenderKeySent: db.prepare<[string]>('DELETE FROM sender_key_sent WHERE group_id = ?'),
    getSenderKeySent: db.prepare<[string, string, string, number], { one: number }>(
      'SELECT 1 AS one FROM sender_key_sent WHERE sender_pn = ? AND group_id = ? AND pn = ? AND device_id = ?',
    ),
    insertSenderKeySent: db.prepare<[string, string, string, number]>(
      'INSERT OR IGNORE INTO sender_key_sent (sender_pn, group_id, pn, device_id) VALUES (?, ?, ?, ?)',
    ),
  };
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);
const sessionKey = (pn: string, address: string): string => `${pn}\u0000${address}`;

/** The sandbox database. One instance per sandbox; not safe to share between processes. */
export class Store {
  readonly db: Database.Database;
  private readonly sessionCache = new Map<string, string | null>();
  private readonly identityCache = new Map<string, Buffer | null>();
  private readonly senderKeyCache = new Map<string, string | null>();
  private pendingWrites: Array<() => void> = [];
  private waiters: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  private commitScheduled = false;
  private closed = false;
  private readonly walSync: WalSync;

  private readonly s: ReturnType<typeof prepareStatements>;

  /**
   * Open (creating if needed) `<dataDir>/sandbox.db` and apply pending migrations.
   * @throws if the directory cannot be created or the file is not a sandbox database.
   */
  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    const file = join(dataDir, 'sandbox.db');
    this.db = new Database(file);
    try {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('foreign_keys = ON');
      this.db.pragma('busy_timeout = 5000');
      migrate(this.db);
      this.s = prepareStatements(this.db);
      this.walSync = new WalSync(file, (err) => process.emitWarning(`sandbox: ${err.message}`, 'SandboxStorage'));
    } catch (err) {
      // A corrupt file fails the first pragma, before anything is written: report it (one line, naming the file).
      this.db.close();
      throw new DatabaseOpenError(`Cannot use ${file} as the sandbox database: ${(err as Error).message}`, file);
    }
  }

  // ---- group commit -------------------------------------------------------------------------

  /** Queue a synchronous write to run inside the next group-commit transaction. */
  enqueue(write: () => void): void {
    this.pendingWrites.push(write);
  }

  /**
   * Commit every write queued so far (and any queued until the next macrotask) in one transaction.
   * Resolves once durable; rejects if the transaction failed (its writes are then lost).
   */
  commit(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('sandbox store is closed'));
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      if (!this.commitScheduled) {
        this.commitScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.commitScheduled = false;
    const writes = this.pendingWrites;
    const waiters = this.waiters;
    this.pendingWrites = [];
    this.waiters = [];
    if (this.closed) {
      for (const w of waiters) w.reject(new Error('sandbox store is closed'));
      return;
    }
    const resolveAll = () => {
      for (const w of waiters) w.resolve();
    };
    try {
      if (writes.length) {
        // NORMAL: durability comes from walSync's fsync, which resolves the waiters.
        relaxedTransaction(this.db, () => {
          for (const write of writes) write();
        });
        this.walSync.committed(resolveAll);
      } else {
        this.walSync.whenDurable(resolveAll); // earlier commits may still be syncing
      }
    } catch (err) {
      // the cache may now be ahead of the file: forget it so reads come from what is durable
      this.sessionCache.clear();
      this.identityCache.clear();
      this.senderKeyCache.clear();
      for (const w of waiters) w.reject(err);
    }
  }

  /** Run `fn` in an immediate transaction now (for rare, already-serialized admin writes). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  // ---- meta ---------------------------------------------------------------------------------

  getMeta(key: string): Buffer | undefined {
    return this.s.getMeta.get(key)?.value;
  }

  setMeta(key: string, value: Buffer): void {
    this.s.setMeta.run(key, value);
  }

  // ---- accounts -----------------------------------------------------------------------------

  listAccounts(): AccountRow[] {
    return this.s.listAccounts.all().map(toAccount);
  }

  countAccounts(): number {
    return this.s.countAccounts.get()?.n ?? 0;
  }

  getAccount(pn: string): AccountRow | undefined {
    const r = this.s.getAccount.get(pn);
    return r && toAccount(r);
  }

  getAccountByLid(lid: string): AccountRow | undefined {
    const r = this.s.getAccountByLid.get(lid);
    return r && toAccount(r);
  }

  /** Insert an account with its initial phone prekeys (one transaction). Throws on duplicate pn/lid. */
  insertAccount(a: AccountRow, preKeys: Array<{ keyId: number; pub: Buffer; priv: Buffer }>): void {
    this.transaction(() => {
      this.s.insertAccount.run({
        pn: a.pn,
        lid: a.lid,
        push_name: a.pushName,
        registration_id: a.registrationId,
        identity_pub: a.identityPub,
        identity_priv: a.identityPriv,
        signed_prekey_id: a.signedPreKeyId,
        signed_prekey_pub: a.signedPreKeyPub,
        signed_prekey_priv: a.signedPreKeyPriv,
        signed_prekey_sig: a.signedPreKeySig,
        next_prekey_id: a.nextPreKeyId,
        next_device_id: a.nextDeviceId,
        created_at: a.createdAt,
      });
      for (const k of preKeys) this.s.insertPhonePreKey.run(a.pn, k.keyId, k.pub, k.priv);
    });
  }

  /** Change an account's push name (the name its phone and companions go by). */
  setAccountPushName(pn: string, pushName: string): void {
    this.s.setAccountPushName.run(pushName, pn);
  }

  /** Reserve the next companion device id (≥ 1) of an account. */
  allocateDeviceId(pn: string): number {
    const r = this.s.allocateDeviceId.get(pn);
    if (!r) throw new Error(`no account ${pn}`);
    return r.id;
  }

  // ---- phone prekeys ------------------------------------------------------------------------

  /** Hand out the lowest unused one-time prekey of a phone (marks it handed out; the private half stays until used). */
  takePhonePreKey(pn: string): PreKey | undefined {
    const r = this.s.takePhonePreKey.get(pn, pn);
    return r && { keyId: r.key_id, pub: r.pub };
  }

  countPhonePreKeys(pn: string): number {
    return this.s.countPhonePreKeys.get(pn)?.n ?? 0;
  }

  addPhonePreKeys(pn: string, keys: Array<{ keyId: number; pub: Buffer; priv: Buffer }>, nextPreKeyId: number): void {
    this.transaction(() => {
      for (const k of keys) this.s.insertPhonePreKey.run(pn, k.keyId, k.pub, k.priv);
      this.s.setNextPreKeyId.run(nextPreKeyId, pn);
    });
  }

  getPhonePreKey(pn: string, keyId: number): { pub: Buffer; priv: Buffer } | undefined {
    return this.s.getPhonePreKey.get(pn, keyId);
  }

  /** Queue removal of a used phone prekey (libsignal `removePreKey`). */
  removePhonePreKey(pn: string, keyId: number): void {
    this.enqueue(() => this.s.deletePhonePreKey.run(pn, keyId));
  }

  // ---- libsignal sessions / identities ------------------------------------------------------

  /** Serialized libsignal SessionRecord (JSON text) of phone `pn` with remote `address`, including queued writes. */
  loadSession(pn: string, address: string): string | undefined {
    const key = sessionKey(pn, address);
    const cached = this.sessionCache.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const record = this.s.getSession.get(pn, address)?.record;
    this.sessionCache.set(key, record ?? null);
    return record;
  }

  /** Queue a session write (visible to `loadSession` at once, durable after `commit()`). */
  storeSession(pn: string, address: string, record: string): void {
    this.sessionCache.set(sessionKey(pn, address), record);
    this.enqueue(() => this.s.putSession.run(pn, address, record));
  }

  /** Queue dropping phone `pn`'s session with `address` (gone from `loadSession` at once, durable after `commit()`). */
  deleteSession(pn: string, address: string): void {
    this.sessionCache.set(sessionKey(pn, address), null);
    this.enqueue(() => this.s.deleteSession.run(pn, address));
  }

  /** Drop every phone's session with a remote address (e.g. a removed companion). */
  deleteSessionsForAddress(address: string): void {
    for (const key of this.sessionCache.keys()) {
      if (key.endsWith(`\u0000${address}`)) this.sessionCache.delete(key);
    }
    this.enqueue(() => this.s.deleteSessionsForAddress.run(address));
  }

  /** Remote identity key a phone last saw for `address` (cached; includes queued writes). */
  getIdentity(pn: string, address: string): Buffer | undefined {
    const key = sessionKey(pn, address);
    const cached = this.identityCache.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const value = this.s.getIdentity.get(pn, address)?.identity_key;
    this.identityCache.set(key, value ?? null);
    return value;
  }

  /** Queue an identity-key write (trust on first use bookkeeping). */
  storeIdentity(pn: string, address: string, key: Buffer): void {
    this.identityCache.set(sessionKey(pn, address), key);
    this.enqueue(() => this.s.putIdentity.run(pn, address, key));
  }

  // ---- companion devices --------------------------------------------------------------------

  insertDevice(d: DeviceRow): void {
    this.s.insertDevice.run({
      pn: d.pn,
      device_id: d.deviceId,
      key_index: d.keyIndex,
      noise_pub: d.noisePub,
      registration_id: d.registrationId,
      identity_pub: d.identityPub,
      signed_prekey_id: d.signedPreKeyId,
      signed_prekey_pub: d.signedPreKeyPub,
      signed_prekey_sig: d.signedPreKeySig,
      platform: d.platform,
      bundle_uploaded: d.bundleUploaded ? 1 : 0,
      history_sent: d.historySent ? 1 : 0,
      created_at: d.createdAt,
      last_seen_at: d.lastSeenAt,
    });
  }

  getDevice(pn: string, deviceId: number): DeviceRow | undefined {
    const r = this.s.getDevice.get(pn, deviceId);
    return r && toDevice(r);
  }

  listDevices(pn: string): DeviceRow[] {
    return this.s.listDevices.all(pn).map(toDevice);
  }

  /** The account's companion devices as a send fans out to them: id and whether its history sync is queued. */
  listDeliveryTargets(pn: string): Array<{ deviceId: number; historySent: boolean }> {
    return this.s.listDeliveryTargets.all(pn).map((r) => ({ deviceId: r.device_id, historySent: r.history_sent !== 0 }));
  }

  /** Remove a companion (cascades its prekeys and undelivered queue). */
  deleteDevice(pn: string, deviceId: number): void {
    this.s.deleteDevice.run(pn, deviceId);
  }

  /** Store a companion's prekey upload (`iq set encrypt`): bundle identity + one-time prekeys, one transaction. */
  saveDeviceBundle(pn: string, deviceId: number, b: DeviceBundleUpload): void {
    this.transaction(() => {
      this.s.setDeviceBundle.run(
        b.registrationId,
        b.identityPub,
        b.signedPreKeyId,
        b.signedPreKeyPub,
        b.signedPreKeySig,
        pn,
        deviceId,
      );
      for (const k of b.preKeys) this.s.insertDevicePreKey.run(pn, deviceId, k.keyId, k.pub);
    });
  }

  setDeviceSignedPreKey(pn: string, deviceId: number, keyId: number, pub: Buffer, sig: Buffer): void {
    this.s.setDeviceSignedPreKey.run(keyId, pub, sig, pn, deviceId);
  }

  markHistorySent(pn: string, deviceId: number): void {
    this.s.markHistorySent.run(pn, deviceId);
  }

  touchDevice(pn: string, deviceId: number): void {
    this.s.touchDevice.run(nowSeconds(), pn, deviceId);
  }

  /** Hand out (and delete) the lowest uploaded one-time prekey of a companion. */
  takeDevicePreKey(pn: string, deviceId: number): PreKey | undefined {
    const r = this.s.takeDevicePreKey.get(pn, deviceId, pn, deviceId);
    return r && { keyId: r.key_id, pub: r.pub };
  }

  countDevicePreKeys(pn: string, deviceId: number): number {
    return this.s.countDevicePreKeys.get(pn, deviceId)?.n ?? 0;
  }

  // ---- messages -----------------------------------------------------------------------------

  /** Queue a message insert (ignored if `(fromPn, msgId)` already exists); durable after `commit()`. */
  enqueueMessage(m: NewMessage): void {
    this.enqueue(() => this.insertMessageNow(m));
  }

  /** Insert a message inside the caller's transaction / write closure. */
  insertMessageNow(m: NewMessage): boolean {
    return this.s.insertMessage.run(m.msgId, m.fromPn, m.toPn, m.ts, m.text, m.message, m.groupId ?? null).changes > 0;
  }

  /**
   * Insert a group message and one recipient row per member phone, inside the caller's write closure. When
   * `(fromPn, msgId)` already exists only the recipients are added.
   * @returns whether the message row is new.
   */
  insertGroupMessageNow(m: NewMessage & { groupId: string }, recipients: string[]): boolean {
    const r = this.s.insertMessage.run(m.msgId, m.fromPn, m.groupId, m.ts, m.text, m.message, m.groupId);
    // a re-sent message (after a retry receipt) may reach phones that missed it the first time
    const seq = r.changes ? Number(r.lastInsertRowid) : this.s.getMessage.get(m.fromPn, m.msgId)?.seq;
    if (seq !== undefined) for (const pn of recipients) this.s.insertGroupRecipient.run(pn, seq);
    return r.changes > 0;
  }

  /** Group messages `pn`'s phone sent or received, oldest first (its group chats in a history sync). */
  listGroupHistory(pn: string): MessageRow[] {
    return this.s.listGroupHistory.all(pn, pn).map(toMessage);
  }

  /** Group messages `pn`'s phone received (it was a member when they were sent), oldest first. */
  listGroupReceived(pn: string): MessageRow[] {
    return this.s.listGroupReceived.all(pn).map(toMessage);
  }

  /** Every message of the groups `pn` received or sent a message in (for reactions/edits/revokes), oldest first. */
  listGroupMessagesSeenBy(pn: string): MessageRow[] {
    return this.s.listGroupMessagesSeenBy.all(pn, pn).map(toMessage);
  }

  /** Messages of one group, oldest first. */
  listGroupMessages(groupId: string): MessageRow[] {
    return this.s.listGroupMessages.all(groupId).map(toMessage);
  }

  /** A message with id `msgId` in group `groupId`. */
  findGroupMessage(groupId: string, msgId: string): MessageRow | undefined {
    const r = this.s.findGroupMessage.get(groupId, msgId);
    return r && toMessage(r);
  }

  // ---- groups -------------------------------------------------------------------------------

  insertGroup(g: NewGroup, participants: Array<{ pn: string; role: GroupRole }>): void {
    this.transaction(() => {
      this.s.insertGroup.run({
        id: g.id,
        subject: g.subject,
        subject_owner: g.subjectOwner,
        subject_ts: g.subjectTs,
        description: g.description,
        description_id: g.descriptionId,
        description_owner: g.descriptionOwner,
        description_ts: g.descriptionTs,
        creator: g.creator,
        created_at: g.createdAt,
        addressing_mode: g.addressingMode,
        invite_code: g.inviteCode,
      });
      for (const p of participants) this.s.upsertParticipant.run(g.id, p.pn, p.role, g.createdAt);
    });
  }

  getGroup(id: string): GroupRow | undefined {
    const r = this.s.getGroup.get(id);
    return r && toGroup(r);
  }

  /** The group whose current invite code is `code`. */
  getGroupByInviteCode(code: string): GroupRow | undefined {
    const r = this.s.getGroupByInviteCode.get(code);
    return r && toGroup(r);
  }

  /** Every group, oldest first. */
  listGroups(): GroupRow[] {
    return this.s.listGroups.all().map(toGroup);
  }

  /** Groups `pn` is a member of, oldest first. */
  listGroupsOf(pn: string): GroupRow[] {
    return this.s.listGroupsOf.all(pn).map(toGroup);
  }

  listGroupParticipants(groupId: string): GroupParticipantRow[] {
    return this.s.listGroupParticipants
      .all(groupId)
      .map((r) => ({ pn: r.pn, role: r.role as GroupRole, addedAt: r.added_at }));
  }

  setGroupSubject(id: string, subject: string, owner: string, ts: number): void {
    this.s.setGroupSubject.run(subject, owner, ts, id);
  }

  setGroupDescription(id: string, description: string | null, descriptionId: string | null, owner: string, ts: number): void {
    this.s.setGroupDescription.run(description, descriptionId, owner, ts, id);
  }

  setGroupInviteCode(id: string, code: string): void {
    this.s.setGroupInviteCode.run(code, id);
  }

  setGroupSettings(id: string, settings: { announce: boolean; locked: boolean; ephemeral: number }): void {
    this.s.setGroupSettings.run(settings.announce ? 1 : 0, settings.locked ? 1 : 0, settings.ephemeral, id);
  }

  /** Add a member (or change an existing member's role). */
  upsertGroupParticipant(groupId: string, pn: string, role: GroupRole, ts: number): void {
    this.s.upsertParticipant.run(groupId, pn, role, ts);
  }

  /** @returns whether `pn` was a member. */
  removeGroupParticipant(groupId: string, pn: string): boolean {
    return this.s.deleteParticipant.run(groupId, pn).changes > 0;
  }

  // ---- sender keys --------------------------------------------------------------------------

  /** A phone's sender-key record JSON for (group, sender) (`''` = its own sending key), including queued writes. */
  loadSenderKey(pn: string, groupId: string, sender: string): string | undefined {
    const key = `${pn}\u0000${groupId}\u0000${sender}`;
    const cached = this.senderKeyCache.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const record = this.s.getSenderKey.get(pn, groupId, sender)?.record;
    this.senderKeyCache.set(key, record ?? null);
    return record;
  }

  /** Queue a sender-key record write (visible at once, durable after `commit()`). */
  storeSenderKey(pn: string, groupId: string, sender: string, record: string): void {
    this.senderKeyCache.set(`${pn}\u0000${groupId}\u0000${sender}`, record);
    this.enqueue(() => this.s.putSenderKey.run(pn, groupId, sender, record));
  }

  /**
   * Forget every phone's own sending key for a group and whom it was sent to (a member left or was removed:
   * the next message of each phone distributes a new key). Visible at once (the cache holds tombstones), queued
   * after every earlier write, durable after `commit()`.
   */
  rotateGroupSenderKeys(groupId: string): void {
    for (const { pn } of this.s.listOwnSenderKeyHolders.all(groupId)) {
      this.senderKeyCache.set(`${pn}\u0000${groupId}\u0000`, null);
    }
    for (const key of this.senderKeyCache.keys()) {
      if (key.endsWith(`\u0000${groupId}\u0000`)) this.senderKeyCache.set(key, null);
    }
    this.enqueue(() => {
      this.s.deleteOwnSenderKeys.run(groupId);
      this.s.deleteSenderKeySent.run(groupId);
    });
  }

  /** Whether `senderPn`'s phone already gave its sender key of `groupId` to a companion (committed state). */
  senderKeySent(senderPn: string, groupId: string, pn: string, deviceId: number): boolean {
    return this.s.getSenderKeySent.get(senderPn, groupId, pn, deviceId) !== undefined;
  }

  /** Record that `senderPn`'s phone gave its sender key of `groupId` to a companion; @returns whether it was new. */
  markSenderKeySentNow(senderPn: string, groupId: string, pn: string, deviceId: number): boolean {
    return this.s.insertSenderKeySent.run(senderPn, groupId, pn, deviceId).changes > 0;
  }

  /** Messages received by `pn`'s phone, oldest first. */
  listReceived(pn: string): MessageRow[] {
    return this.s.listReceived.all(pn).map(toMessage);
  }

  /** Every 1:1 message sent or received by `pn`, oldest first. */
  listInvolving(pn: string): MessageRow[] {
    return this.s.listInvolving.all(pn, pn).map(toMessage);
  }

  /** A message by its sender and id. */
  getMessage(fromPn: string, msgId: string): MessageRow | undefined {
    const r = this.s.getMessage.get(fromPn, msgId);
    return r && toMessage(r);
  }

  /** A message with id `msgId` sent or received by `pn`. */
  findMessageForPhone(pn: string, msgId: string): MessageRow | undefined {
    const r = this.s.findMessageForPhone.get(msgId, pn, pn);
    return r && toMessage(r);
  }

  /** A message with id `msgId` in the 1:1 conversation between `a` and `b` (either direction). */
  findMessageInChat(a: string, b: string, msgId: string): MessageRow | undefined {
    const r = this.s.findMessageInChat.get(msgId, a, b, b, a);
    return r && toMessage(r);
  }

  /** Phone numbers `pn` has exchanged messages with. */
  listPeers(pn: string): string[] {
    return this.s.listPeers
      .all(pn, pn)
      .map((r) => r.pn)
      .filter((p) => p !== pn);
  }

  /** Insert many messages in one transaction (bulk history seeding). */
  insertMessagesBulk(rows: NewMessage[]): void {
    this.transaction(() => {
      for (const m of rows) this.insertMessageNow(m);
    });
  }

  // ---- media --------------------------------------------------------------------------------

  /** Store (or replace) an encrypted media file under its direct path, inside the caller's write. */
  putBlobNow(directPath: string, mediaType: string, body: Buffer): void {
    this.s.putBlob.run(directPath, mediaType, body, nowSeconds());
  }

  /** An encrypted media file: `undefined` if unknown, `body: null` if expired. */
  getBlob(directPath: string): { mediaType: string; body: Buffer | null } | undefined {
    const r = this.s.getBlob.get(directPath);
    return r && { mediaType: r.media_type, body: r.body };
  }

  /** Expire (delete the bytes of) a media file; later downloads get 404. @returns whether it was live. */
  expireBlob(directPath: string): boolean {
    return this.s.expireBlob.run(directPath).changes > 0;
  }

  // ---- status posts ------------------------------------------------------------------------

  /**
   * Records a companion's status post and the phones that received it, inside the caller's write closure. A post
   * sent again (same author and id) only gains viewers.
   */
  insertStatusNow(s: { msgId: string; fromPn: string; ts: number; message: Buffer }, viewers: string[]): void {
    this.s.insertStatus.run(s.msgId, s.fromPn, s.ts, s.message);
    const seq = this.s.getStatusSeq.get(s.fromPn, s.msgId)?.seq;
    if (seq !== undefined) for (const pn of viewers) this.s.insertStatusViewer.run(pn, seq);
  }

  /** Status posts `pn`'s phone received since `sinceTs` (unix seconds), oldest first. */
  listStatusesSeenBy(pn: string, sinceTs: number): Array<{ msgId: string; fromPn: string; ts: number; message: Buffer }> {
    return this.s.listStatusesSeenBy.all(pn, sinceTs).map((r) => ({ msgId: r.msg_id, fromPn: r.from_pn, ts: r.ts, message: r.message }));
  }

  putMessageMediaNow(fromPn: string, msgId: string, plaintext: Buffer): void {
    this.s.putMessageMedia.run(fromPn, msgId, plaintext);
  }

  getMessageMedia(fromPn: string, msgId: string): Buffer | undefined {
    return this.s.getMessageMedia.get(fromPn, msgId)?.plaintext;
  }

  // ---- receipts / chatstates seen by phones -------------------------------------------------

  insertReceiptNow(pn: string, fromPn: string, msgIds: string[], type: string, ts: number): void {
    this.s.insertReceipt.run(pn, fromPn, JSON.stringify(msgIds), type, ts);
  }

  listReceipts(pn: string): Array<{ fromPn: string; msgIds: string[]; type: string; ts: number }> {
    return this.s.listReceipts
      .all(pn)
      .map((r) => ({ fromPn: r.from_pn, msgIds: JSON.parse(r.msg_ids) as string[], type: r.type, ts: r.ts }));
  }

  /** Receipts sent by `fromPn`'s devices (e.g. its phone's reads), as recorded for their recipients. */
  listReceiptsFrom(fromPn: string): Array<{ fromPn: string; msgIds: string[]; type: string; ts: number }> {
    return this.s.listReceiptsFrom
      .all(fromPn)
      .map((r) => ({ fromPn: r.from_pn, msgIds: JSON.parse(r.msg_ids) as string[], type: r.type, ts: r.ts }));
  }

  insertChatstateNow(pn: string, fromPn: string, state: string, ts: number): void {
    this.s.insertChatstate.run(pn, fromPn, state, ts);
  }

  listChatstates(pn: string): Array<{ fromPn: string; state: string; ts: number }> {
    return this.s.listChatstates.all(pn).map((r) => ({ fromPn: r.from_pn, state: r.state, ts: r.ts }));
  }

  // ---- outbox -------------------------------------------------------------------------------

  /** Insert outbox rows inside the caller's transaction / write closure (duplicates ignored). */
  insertOutboxNow(rows: NewOutbox[]): void {
    const t = nowSeconds();
    for (const r of rows) {
      this.s.insertOutbox.run(
        r.pn,
        r.deviceId,
        r.msgId,
        r.kind,
        r.senderPn,
        JSON.stringify(r.attrs),
        r.plaintext,
        r.encType,
        r.ciphertext,
        r.skCiphertext ?? null,
        t,
      );
    }
  }

  /** Up to `limit` queued rows for a companion with `seq > afterSeq`, in order. */
  listOutbox(pn: string, deviceId: number, afterSeq: number, limit: number): OutboxRow[] {
    return this.s.listOutbox.all(pn, deviceId, afterSeq, limit).map(toOutbox);
  }

  getOutboxByMsgId(pn: string, deviceId: number, msgId: string): OutboxRow | undefined {
    const r = this.s.getOutboxByMsgId.get(pn, deviceId, msgId);
    return r && toOutbox(r);
  }

  /** Highest outbox seq ever assigned so far (0 if none). */
  maxOutboxSeq(): number {
    return this.s.maxOutboxSeq.get()?.m ?? 0;
  }

  /** Whether a companion has an undelivered row of `kind`. */
  hasOutboxKind(pn: string, deviceId: number, kind: OutboxKind): boolean {
    return this.s.hasOutboxKind.get(pn, deviceId, kind) !== undefined;
  }

  /** Queue deletion of delivered rows (by message id); durable after `commit()`. */
  deleteOutbox(pn: string, deviceId: number, msgIds: string[]): void {
    this.enqueue(() => {
      for (const id of msgIds) this.s.deleteOutbox.run(pn, deviceId, id);
    });
  }

  /** Queue counting one more failed delivery of a companion's row (whichever `seq` it has by then). */
  bumpOutboxAttempts(pn: string, deviceId: number, msgId: string): void {
    this.enqueue(() => this.s.bumpOutboxAttempts.run(pn, deviceId, msgId));
  }

  /** Queue storing the ciphertext made for a row at its first delivery (durable with the session state, at `commit()`). */
  setOutboxCiphertext(seq: number, encType: string, ciphertext: Buffer): void {
    this.enqueue(() => this.s.setOutboxCiphertext.run(encType, ciphertext, seq));
  }

  /**
   * Queue replacing a row's delivery by a new one at the end of the companion's queue (a new `seq`, the same message
   * id and attempts; plaintext and sk-ciphertext kept unless given): what a retry receipt's re-encrypted message
   * becomes. Nothing happens when the row
   * is gone by the time the write runs (delivered or dropped meanwhile). Durable after `commit()`.
   */
  requeueOutbox(
    pn: string,
    deviceId: number,
    msgId: string,
    next: { attrs: Record<string, string>; encType: string; ciphertext: Buffer; plaintext?: Buffer; skCiphertext?: Buffer },
  ): void {
    this.enqueue(() => {
      const old = this.s.getOutboxByMsgId.get(pn, deviceId, msgId);
      if (!old) return;
      this.s.deleteOutbox.run(pn, deviceId, msgId);
      this.s.requeueOutbox.run(
        pn,
        deviceId,
        msgId,
        old.kind,
        old.sender_pn,
        JSON.stringify(next.attrs),
        next.plaintext ?? old.plaintext,
        next.encType,
        next.ciphertext,
        next.skCiphertext ?? old.sk_ciphertext,
        old.attempts,
        nowSeconds(),
      );
    });
  }

  /** Flush queued writes and close the file. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.walSync.syncNow();
    this.walSync.close();
    this.closed = true;
    this.db.close();
  }
}
