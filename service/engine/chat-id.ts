/**
 * The one normalisation of an API `chatId` (path, query or body of any route): a JID — `<user>@s.whatsapp.net`,
 * `<user>@c.us` (WAHA/whatsapp-web.js spelling of the same), `<user>@lid`, `<id>@g.us` — or an international
 * phone number (`+15550101`, `15550101`, spaces/dots/dashes/parentheses allowed). Chats are stored under the
 * phone-number JID where it is known (message-model.ts), so a LID whose phone number is known reads that chat.
 */
import { jidNormalizedUser } from '@whiskeysockets/baileys';
import { badRequest } from '../errors.ts';
import type { Repos } from '../db/store-api.ts';
import type { Store } from '../db/store.ts';

/** A chatId as written: a phone number (digits only) or a JID with `@c.us` already turned into `@s.whatsapp.net`. */
export type ParsedChatId = { kind: 'phone'; digits: string; jid: string } | { kind: 'jid'; jid: string; isGroup: boolean };

/**
 * Parses a chatId. @throws ServiceError 400 `chatId must be a JID or a phone number in international format`,
 * 400 `chatId is not a valid international phone number` (fewer than 6 or more than 15 digits).
 */
/** The pseudo-chat of status posts. */
export const STATUS_CHAT_ID = 'status@broadcast';

export function parseChatId(input: string): ParsedChatId {
  const value = input.trim();
  if (/^\+?[\d\s().-]+$/.test(value)) {
    const digits = value.replace(/\D/g, '');
    if (digits.length < 6 || digits.length > 15) throw badRequest('chatId is not a valid international phone number');
    return { kind: 'phone', digits, jid: `${digits}@s.whatsapp.net` };
  }
  // Status posts (issue 13) are read under their pseudo-chat; nothing is sent to it (engine resolveChat refuses).
  if (value === STATUS_CHAT_ID) return { kind: 'jid', jid: value, isGroup: false };
  const m = /^([^@\s]+)@(s\.whatsapp\.net|c\.us|lid|g\.us)$/.exec(value);
  if (!m) throw badRequest('chatId must be a JID or a phone number in international format');
  if (m[2] === 'g.us') return { kind: 'jid', jid: value, isGroup: true };
  const jid = jidNormalizedUser(m[2] === 'c.us' ? `${m[1]}@s.whatsapp.net` : value);
  if (!jid) throw badRequest('chatId must be a JID or a phone number in international format');
  return { kind: 'jid', jid, isGroup: false };
}

/** The key of a LID's reverse entry in Baileys' `lid-mapping` keys (`<lid user>_reverse` → the PN user, JSON). */
const reverseKeyOf = (lid: string): string => `${lid.split('@')[0]!.split(':')[0]!}_reverse`;
const pnJidOf = (storedPnUser: string): string => `${JSON.parse(storedPnUser) as string}@s.whatsapp.net`;

/** The phone-number JID of a LID from the connection's LID mapping (Baileys' key store), then its contacts. */
export function pnForLid(store: Pick<Store, 'authState' | 'contacts'>, connectionId: string, lid: string): string | undefined {
  const key = reverseKeyOf(lid);
  const pnUser = store.authState.getKeys(connectionId, 'lid-mapping', [key]).get(key);
  return pnUser ? pnJidOf(pnUser) : store.contacts.jidForLid(connectionId, lid);
}

/** `pnForLid` through the asynchronous Store's repositories (db/store-api.ts), whichever the engine. */
export async function pnForLidIn(repos: Pick<Repos, 'authState' | 'contacts'>, connectionId: string, lid: string): Promise<string | undefined> {
  const key = reverseKeyOf(lid);
  const pnUser = (await repos.authState.getKeys(connectionId, 'lid-mapping', [key])).get(key);
  return pnUser ? pnJidOf(pnUser) : repos.contacts.jidForLid(connectionId, lid);
}

/**
 * The id a chat is stored under for any accepted form of `input` (reads answer for this chat): the phone-number
 * JID for numbers, `@c.us` and `@s.whatsapp.net`; the mapped phone-number JID for a known LID (else the LID);
 * the group JID. @throws ServiceError 400 as parseChatId.
 */
export function canonicalChatId(store: Pick<Store, 'authState' | 'contacts'>, connectionId: string, input: string): string {
  const parsed = parseChatId(input);
  if (parsed.kind === 'jid' && parsed.jid.endsWith('@lid')) return pnForLid(store, connectionId, parsed.jid) ?? parsed.jid;
  return parsed.jid;
}

/** `canonicalChatId` through the asynchronous Store's repositories (db/store-api.ts). @throws ServiceError 400 */
export async function canonicalChatIdIn(repos: Pick<Repos, 'authState' | 'contacts'>, connectionId: string, input: string): Promise<string> {
  const parsed = parseChatId(input);
  if (parsed.kind === 'jid' && parsed.jid.endsWith('@lid')) return (await pnForLidIn(repos, connectionId, parsed.jid)) ?? parsed.jid;
  return parsed.jid;
}
