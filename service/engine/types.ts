/**
 * The engine's public surface, as the HTTP layer and the service assembly use it.
 * The implementation is `engine/engine.ts`; one Baileys session per connection lives behind it.
 */
import type { Logger } from 'pino';
import type { ConnectionOptions } from 'node:tls';
import type { OutboundPolicy } from '../net/outbound.ts';
import type { IdempotencyRef } from '../db/idempotency.ts';
import type { Message } from '../db/messages.ts';
import type { ConnectionStatus } from '../db/connections.ts';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';
import type { NumberCheck } from './number-check.ts';
import type { Operations } from './operations.ts';
import type { Profiles } from './profiles.ts';

export interface EngineOptions {
  store: Store;
  /** The event log the sessions append to (events/log.ts). */
  events: EventLog;
  logger: Logger;
  /** WhatsApp-protocol WebSocket URL every session connects to (WhatsApp's own when undefined). */
  waUrl?: string;
  /**
   * 32-byte root key of the server's Noise certificate chain; set only for the sandbox (docs/architecture.md § Sandbox
   * trust).
   */
  waRootPublicKey?: Buffer;
  /**
   * PEM of the sandbox media host's CA; trusted only by this engine's Baileys media requests (docs/architecture.md §
   * Sandbox trust).
   */
  waCaCertPem?: string;
  /** Identifier of this worker, shown as Connection.workerId. */
  workerId: string;
  /** Folder for media files, one subfolder per connection. */
  mediaDir: string;
  /** Human-like pacing before sends without skipPresence: a random delay in [min, max] ms while "typing". */
  typingDelayMs?: { min: number; max: number };
  /** Clock in ms since the epoch (the edit window is checked against it); `Date.now` by default. Tests inject one. */
  now?: () => number;
  /**
   * How long a send (and a reaction or edit) waits for the server's acknowledgement of the message, in ms (10 000).
   * Without it in time the answer carries the message still pending (ack 1).
   */
  serverAckTimeoutMs?: number;
  /** The outbound URL policy that checks, pins and fetches a send request's `url` (one with LAN access off by default). */
  outbound?: OutboundPolicy;
  /** TLS options for those fetches (tests trust a local CA). */
  urlFetchTls?: ConnectionOptions;
  /** Total time for fetching a send request's `url`, in ms (60 000). */
  urlFetchTimeoutMs?: number;
  /** How long a connection attempt may take to reach the QR or the logged-in state, in ms (20 000). */
  connectTimeoutMs?: number;
  /** Whether the data dir has room (free space ≥ `--min-free-mb`); sessions wait for it after a storage failure. */
  storageHasRoom?: () => boolean;
  /** Download status-post media as it arrives (`serve --download-status-media`); otherwise only on request. */
  downloadStatusMedia?: boolean;
  /** How long a logged-in session waits for the offline-delivered marker before going online anyway, in ms (20 000). */
  onlineFallbackMs?: number;
}

export type MediaKind = 'image' | 'video' | 'audio' | 'document';

/** Fields every send takes (interface-spec §4.3). */
export interface SendCommon {
  /** A JID or a phone number in international format ("+15550101", "15550101"). */
  chatId: string;
  /** Message id (spec shape) of the message to quote. */
  replyTo?: string;
  skipPresence?: boolean;
  /** Who the text or caption @-mentions: international numbers or user JIDs (Baileys `mentions`). */
  mentions?: string[];
}

/** Media given as exactly one of `url` (https, fetched by the service) or `base64` (a data URL works too). */
export interface MediaFields {
  url?: string;
  base64?: string;
  mimetype?: string;
  filename?: string;
  caption?: string;
}

/** One send request; `type` picks the endpoint's kind. */
export type SendInput = SendCommon &
  (
    | { type: 'text'; text: string }
    | ({ type: 'image' | 'video' | 'document' } & MediaFields)
    | ({ type: 'audio'; ptt?: boolean } & MediaFields)
    | { type: 'location'; latitude: number; longitude: number; name?: string; address?: string }
    | { type: 'contact'; name: string; phoneNumber: string }
    | { type: 'poll'; name: string; options: string[]; selectableCount?: number }
  );

/** Options of a call that sends a message (a send, reaction, edit, revoke, forward, sticker or status post). */
export interface SendOptions {
  /**
   * The request's Idempotency-Key (db/idempotency.ts): the relay names the message it records on the key's row, in
   * the transaction that records it (before any frame of it leaves), so a retry after an unknown outcome can answer
   * from the store instead of sending again (docs/api.md "Idempotent requests").
   */
  idempotency?: IdempotencyRef | undefined;
}

/** A media file ready to stream. */
export interface MediaFileInfo {
  path: string;
  size: number;
  mimetype: string;
  /** Original file name (documents), if any. */
  filename: string | null;
}

/** Profile of a linked account (interface-spec §2.2, plus `about` and `pictureUrl`). */
export type { OwnProfile as Profile, ContactProfile } from './profiles.ts';

export interface SendTextInput {
  /** A JID or a phone number in international format ("+15550101", "15550101"). */
  chatId: string;
  text: string;
  /** Message id (spec shape) of the message to quote. */
  replyTo?: string;
  skipPresence?: boolean;
}

export type { NumberCheck } from './number-check.ts';
export type { GroupAction, GroupInfo, GroupSummary, ParticipantResult } from './groups.ts';
import type { GroupAction, GroupInfo, GroupSummary, ParticipantResult } from './groups.ts';

export type { ForwardInput, StatusInput, StickerInput } from './operations.ts';

export interface Engine extends Operations, Profiles {
  /** Starts (or keeps) the session of a stored, non-stopped connection. Idempotent. */
  start(connectionId: string): void;
  /** Starts every stored connection that is not stopped (service boot). */
  startAll(): void;
  /** Closes and reopens the session; a linked one comes back online without a scan. */
  restart(connectionId: string): Promise<void>;
  /** Stops the session; with `logout`, unlinks the device from the phone and wipes the auth state. */
  stop(connectionId: string, opts?: { logout?: boolean }): Promise<void>;
  /**
   * Deletes a connection (soft): stops its session and unlinks the device, best effort (a phone that cannot be
   * told is logged and the connection deleted anyway), then stores status `stopped` with reason `deleted` and logs
   * its `session.status` event. Nothing happens to a connection already stopped.
   */
  remove(connectionId: string): Promise<void>;
  /**
   * The status (and its reason) of a running session as this process knows it: while the disk is full it may not
   * be stored yet. Undefined when no session runs for the connection.
   */
  liveStatus(connectionId: string): { status: ConnectionStatus; reason: string | null } | undefined;
  /**
   * Whether storage counts as unavailable: the last commit failed, or a session still waits for the disk to have
   * room and take a write again (sends answer 507 meanwhile).
   */
  storageUnavailable(): boolean;
  /** Latest QR string of a connection waiting for a scan; undefined while none exists yet. */
  currentQr(connectionId: string): string | undefined;
  /**
   * Asks WhatsApp for an 8-character code that links the connection when typed on the phone of `phoneNumber`
   * (an international number or a user JID), instead of a QR scan; the same number gets the same code while the
   * connection waits. @returns the code as shown, `ABCD-EFGH`.
   * @throws ServiceError 400 malformed phoneNumber, 409 not waiting to be linked (status other than `scan_qr`).
   */
  requestPairingCode(connectionId: string, phoneNumber: string): Promise<string>;
  /**
   * Sends a text and returns the stored Message.
   * @throws ServiceError 400 bad chatId / unknown replyTo / not on WhatsApp, 409 connection not online.
   */
  sendText(connectionId: string, input: SendTextInput): Promise<Message>;
  /**
   * Sends any kind of message through the one send pipeline (chat resolution, quoting, presence, local media copy)
   * and returns the stored Message.
   * @throws ServiceError 400 bad input (chatId, replyTo, media type/size/URL), 409 connection not online.
   */
  send(connectionId: string, input: SendInput, opts?: SendOptions): Promise<Message>;
  /**
   * Reacts to a message (`emoji` "" removes the reaction) and returns the reacted-to Message with its reactions.
   * @throws ServiceError 404 unknown message, 409 not online.
   */
  react(connectionId: string, input: { chatId: string; messageId: string; emoji: string }, opts?: SendOptions): Promise<Message>;
  /**
   * Edits the text of an own text message within the edit window and returns the updated Message.
   * @throws ServiceError 404 unknown message, 403 someone else's message, 400 not a text message or too late, 409 not online.
   */
  editMessage(connectionId: string, messageId: string, input: { chatId: string; text: string }, opts?: SendOptions): Promise<Message>;
  /** Sends read receipts for the chat's unread incoming messages and sets its unread counter to 0. */
  markRead(connectionId: string, chatId: string): Promise<void>;
  /** Starts (`true`) or stops the typing indicator in a chat. */
  setTyping(connectionId: string, chatId: string, typing: boolean): Promise<void>;
  /**
   * The local file of a message's media, downloading it first when it is not on disk (re-upload once when the
   * CDN lost it). @throws ServiceError 404 `Media not found`.
   */
  messageMedia(connectionId: string, messageId: string): Promise<MediaFileInfo>;
  /** The local file `filename` of a connection's media folder (downloaded on demand like messageMedia). */
  mediaFile(connectionId: string, filename: string): Promise<MediaFileInfo>;
  /**
   * Whether each number is on WhatsApp, with its JID and LID (one usync query for the numbers not answered in
   * the last 24 h). `phoneNumbers` are international numbers or user JIDs, 1–50.
   * @throws ServiceError 400 a malformed number (naming its index), 409 not online, 502 the query failed.
   */
  checkNumbers(connectionId: string, phoneNumbers: string[]): Promise<NumberCheck[]>;
  /**
   * The groups the account is in (asked from WhatsApp, which refreshes the cache), by subject; `offset` counts groups.
   * @throws ServiceError 409 not online, 502 the query failed.
   */
  listGroups(connectionId: string, page: { limit: number; offset: number }): Promise<GroupSummary[]>;
  /**
   * One group with its members, from the session's group cache (kept current by notifications) or asked.
   * @throws ServiceError 400 malformed id, 404 `Group not found` (unknown, or the account is not in it), 409 not online.
   */
  group(connectionId: string, groupId: string): Promise<GroupInfo>;
  /**
   * Creates a group with the account as its creator (superadmin). @throws 400 malformed participants, 409, 502.
   */
  createGroup(connectionId: string, input: { subject: string; participants: string[] }): Promise<GroupInfo>;
  /** Changes subject and/or description (`""` removes it). @throws 403 `Not a group admin`, 404, 409, 502. */
  updateGroup(connectionId: string, groupId: string, input: { subject?: string; description?: string }): Promise<GroupInfo>;
  /** Adds, removes, promotes or demotes members; one result per participant. @throws 403 `Not a group admin`, 404. */
  updateParticipants(connectionId: string, groupId: string, input: { action: GroupAction; participants: string[] }): Promise<ParticipantResult[]>;
  /** The account leaves the group. @throws 404 `Group not found`, 409, 502. */
  leaveGroup(connectionId: string, groupId: string): Promise<void>;
  /** The group's current invite code and link. @throws 403 `Not a group admin`, 404, 409, 502. */
  groupInviteCode(connectionId: string, groupId: string): Promise<{ code: string; url: string }>;
  /** Closes every session (not logged out). */
  close(): Promise<void>;
}
