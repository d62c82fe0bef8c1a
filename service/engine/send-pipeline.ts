/**
 * Human-like pacing before a send (interface-spec §4.3 rule 2): a read receipt for the chat's newest incoming
 * message, the typing indicator for a random delay that grows with the text length, then `paused`.
 * `skipPresence: true` bypasses all of it. Presence failures never fail the send.
 */
import { proto, type WAMessageKey, type WAPresence } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Store } from '../db/store.ts';

export interface PacingOptions {
  /** Typing delay bounds in ms; the delay is ~40 ms per character clamped to [min, max], then ×U(0.8, 1.2). */
  typingDelayMs: { min: number; max: number };
}

/** Typing time in ms for a text of `length` characters. */
export function typingDelayFor(length: number, bounds: { min: number; max: number }): number {
  const base = Math.min(bounds.max, Math.max(bounds.min, length * 40));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** What pacing needs of a session (session.ts `read`, `presence`). */
export interface PresenceSender {
  read(keys: WAMessageKey[]): Promise<void>;
  presence(state: WAPresence, jid?: string): Promise<void>;
}

/** Reads the chat, shows "typing…" for a human-like time, then clears it. */
export async function humanizeBeforeSend(
  session: PresenceSender,
  ctx: { store: Store; connectionId: string; chatJid: string; chatId: string; textLength: number; logger: Logger },
  opts: PacingOptions,
): Promise<void> {
  const { store, connectionId, chatJid, chatId } = ctx;
  try {
    const raw = store.messages.latestIncomingRaw(connectionId, chatId);
    if (raw) {
      const key = proto.WebMessageInfo.decode(raw).key;
      if (key) await session.read([key]);
      store.chats.markRead(connectionId, chatId);
    }
    await session.presence('composing', chatJid);
    await new Promise((r) => setTimeout(r, typingDelayFor(ctx.textLength, opts.typingDelayMs)));
    await session.presence('paused', chatJid);
  } catch (err) {
    ctx.logger.warn({ err }, 'presence before send failed; sending anyway');
  }
}
