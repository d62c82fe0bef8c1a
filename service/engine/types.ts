/**
 * The engine's public surface, as the HTTP layer and the service assembly use it.
 * The implementation is `engine/engine.ts`; one Baileys session per connection lives behind it.
 */
import type { Logger } from 'pino';
import type { Message } from '../db/messages.ts';
import type { Store } from '../db/store.ts';

export interface EngineOptions {
  store: Store;
  logger: Logger;
  /** WhatsApp-protocol WebSocket URL every session connects to (WhatsApp's own when undefined). */
  waUrl?: string;
  /** 32-byte root key of the server's Noise certificate chain; set only for the sandbox (DESIGN.md §4). */
  waRootPublicKey?: Buffer;
  /** Identifier of this worker, shown as Connection.workerId. */
  workerId: string;
  /** Folder for media files, one subfolder per connection. */
  mediaDir: string;
  /** Human-like pacing before sends without skipPresence: a random delay in [min, max] ms while "typing". */
  typingDelayMs?: { min: number; max: number };
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
  /** Closes every session (not logged out). */
  close(): Promise<void>;
}
