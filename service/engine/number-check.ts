/**
 * "Is this number on WhatsApp?" for up to 50 numbers in one usync query (`contact` + `lid` protocols, as
 * WhatsApp Web asks before a first message; Baileys `lib/WAUSync`, the contact protocol answers `in`/`out` per
 * user and the LID protocol the account's LID), with answers cached per connection for 24 h.
 *
 * Result per number: `{ phoneNumber: '+15550101', exists, jid: '15550101@s.whatsapp.net' | null,
 * lid: '…@lid' | null, checkedAt: ISO time of the query that answered it }` (a cached answer keeps its checkedAt).
 */
import { USyncQuery, USyncUser, jidNormalizedUser } from '@whiskeysockets/baileys';

export interface NumberCheck {
  phoneNumber: string;
  exists: boolean;
  jid: string | null;
  lid: string | null;
  checkedAt: string;
}

/** What the check needs of a session (session.ts `usyncQuery`, Baileys `executeUSyncQuery`). */
export interface UsyncClient {
  usyncQuery(query: USyncQuery): Promise<{ list: Array<{ id: string; contact?: unknown; lid?: unknown }> } | undefined>;
}

/** How long an answer is reused, in ms (24 h). */
export const NUMBER_CHECK_TTL_MS = 24 * 60 * 60 * 1000;
/** Most numbers per request. */
export const MAX_NUMBERS_PER_CHECK = 50;

/** Digits of an international number or a user JID (`+1 555-0101`, `15550101@c.us`), or undefined. */
export function numberDigits(input: string): string | undefined {
  const s = input.trim();
  const jid = /^(\d+)(?::\d+)?@(s\.whatsapp\.net|c\.us)$/.exec(s);
  const digits = jid ? jid[1]! : /^\+?[\d\s().-]+$/.test(s) ? s.replace(/\D/g, '') : undefined;
  return digits && digits.length >= 6 && digits.length <= 15 ? digits : undefined;
}

export class NumberChecker {
  #cache = new Map<string, { result: NumberCheck; expiresAt: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Answers for `digitsList` (already validated, see numberDigits), in the same order; one usync query for the
   * numbers not in the cache. @throws whatever the query throws (the socket closed, a timeout)
   */
  async check(connectionId: string, session: UsyncClient, digitsList: string[]): Promise<NumberCheck[]> {
    const now = this.now();
    const key = (digits: string) => `${connectionId}:${digits}`;
    const missing = [...new Set(digitsList.filter((d) => (this.#cache.get(key(d))?.expiresAt ?? 0) <= now))];
    if (missing.length > 0) {
      const query = new USyncQuery().withContactProtocol().withLIDProtocol();
      for (const digits of missing) query.withUser(new USyncUser().withPhone(`+${digits}`));
      const result = await session.usyncQuery(query);
      const checkedAt = new Date(now).toISOString();
      const byDigits = new Map((result?.list ?? []).map((u) => [u.id.split('@')[0]!.split(':')[0]!, u]));
      for (const digits of missing) {
        const u = byDigits.get(digits);
        const exists = u?.contact === true;
        this.#cache.set(key(digits), {
          result: {
            phoneNumber: `+${digits}`,
            exists,
            jid: exists ? jidNormalizedUser(u!.id) : null,
            lid: exists && typeof u!.lid === 'string' && u!.lid ? jidNormalizedUser(u!.lid) : null,
            checkedAt,
          },
          expiresAt: now + NUMBER_CHECK_TTL_MS,
        });
      }
    }
    return digitsList.map((d) => this.#cache.get(key(d))!.result);
  }

  /** Forgets a connection's answers (it was deleted or logged out). */
  forget(connectionId: string): void {
    for (const k of this.#cache.keys()) if (k.startsWith(`${connectionId}:`)) this.#cache.delete(k);
  }
}
