/**
 * The engine's public surface, as the HTTP layer and the service assembly use it.
 * The implementation is `engine/engine.ts`; one Baileys session per connection lives behind it.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Message } from '../db/messages.ts';
import type { Store } from '../db/store.ts';

export interface EngineOptions {
  store: Store;
  logger: Logger;
  /** WhatsApp-protocol WebSocket URL every session connects to (WhatsApp's own when undefined). */
  waUrl?: string;
  /** 32-byte root key of the server's Noise certificate chain; set only for the sandbox (DESIGN.md §4). */
  waRootPublicKey?: Buffer;
  /** PEM of the sandbox media host's CA; trusted only by this engine's Baileys media requests (DESIGN.md §4). */
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
  /** Dispatcher for fetching `url` media of send requests; undici's global one by default (tests trust a local CA). */
  urlFetchDispatcher?: Dispatcher;
  /** How long a connection attempt may take to reach the QR or the logged-in state, in ms (20 000). */
  connectTimeoutMs?: number;
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

/** A media file ready to stream. */
export interface MediaFileInfo {
  path: string;
  size: number;
  mimetype: string;
  /** Original file name (documents), if any. */
  filename: string | null;
}

/** Profile of a linked account (interface-spec §2.2). */
export interface Profile {
  id: string;
  pushName: string;
}

export interface SendTextInput {
  /** A JID or a phone number in international format ("+15550101", "15550101"). */
  chatId: string;
  text: string;
  /** Message id (spec shape) of the message to quote. */
  replyTo?: string;
  skipPresence?: boolean;
}

export interface Engine {
  /** Starts (or keeps) the session of a stored, non-stopped connection. Idempotent. */
  start(connectionId: string): void;
  /** Starts every stored connection that is not stopped (service boot). */
  startAll(): void;
  /** Closes and reopens the session; a linked one comes back online without a scan. */
  restart(connectionId: string): Promise<void>;
  /** Stops the session; with `logout`, unlinks the device from the phone and wipes the auth state. */
  stop(connectionId: string, opts?: { logout?: boolean }): Promise<void>;
  /** Latest QR string of a connection waiting for a scan; undefined while none exists yet. */
  currentQr(connectionId: string): string | undefined;
  /** Profile of an online connection; undefined otherwise. */
  profile(connectionId: string): Profile | undefined;
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
  send(connectionId: string, input: SendInput): Promise<Message>;
  /**
   * Reacts to a message (`emoji` "" removes the reaction) and returns the reacted-to Message with its reactions.
   * @throws ServiceError 404 unknown message, 409 not online.
   */
  react(connectionId: string, input: { chatId: string; messageId: string; emoji: string }): Promise<Message>;
  /**
   * Edits the text of an own text message within the edit window and returns the updated Message.
   * @throws ServiceError 404 unknown message, 403 someone else's message, 400 not a text message or too late, 409 not online.
   */
  editMessage(connectionId: string, messageId: string, input: { chatId: string; text: string }): Promise<Message>;
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
  /** Closes every session (not logged out). */
  close(): Promise<void>;
}
