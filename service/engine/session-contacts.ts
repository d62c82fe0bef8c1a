/**
 * A session's contacts and LID ↔ phone-number mapping (part of `Session`, session.ts).
 *
 * - Every contact write of the session goes through `upsert`, which skips a write identical to the last one for the
 *   same JID: rc14 emits `contacts.update` with the pushName of nearly every incoming message, and re-applying the
 *   last upsert of a JID changes nothing (the store's upsert only merges non-null fields). The memory holds at most
 *   CONTACT_CACHE_MAX JIDs and is cleared (`forget`) when a transaction may have rolled a write back.
 * - `modelContext()` is what the message model needs: own identity, and LID → PN lookups from Baileys' mapping store
 *   (`lid-mapping` keys in the auth state, `<lid user>_reverse` → PN user) with the contacts table as fallback.
 */
import { jidDecode, jidNormalizedUser } from '@whiskeysockets/baileys';
import type { Store } from '../db/store.ts';
import type { ModelContext } from './message-model.ts';

/** Most JIDs whose last contact write a session remembers. */
const CONTACT_CACHE_MAX = 10_000;

/** The contact fields one write sets (the store's `contacts.upsert` input). */
export type ContactWrite = Parameters<Store['contacts']['upsert']>[1];

/** Own identity as the live creds know it (session-lifecycle.ts `me`). */
export interface OwnIdentity {
  jid: string;
  lid: string | null;
  name: string;
}

export class SessionContacts {
  /** The last write per JID, as a JSON signature of its fields. */
  readonly #lastWrite = new Map<string, string>();

  constructor(
    private readonly store: Store,
    private readonly connectionId: string,
    private readonly me: () => OwnIdentity | undefined,
  ) {}

  /** Creates or merges a contact, unless it is the same write as the last one for its JID; call inside a transaction. */
  upsert(c: ContactWrite): void {
    // the upsert treats a missing field as null, so equivalent writes get one signature
    const signature = JSON.stringify([c.lid ?? null, c.name ?? null, c.pushName ?? null, c.phoneNumber ?? null, !!c.isGroup]);
    if (this.#lastWrite.get(c.jid) === signature) return;
    this.store.contacts.upsert(this.connectionId, c);
    if (this.#lastWrite.size >= CONTACT_CACHE_MAX) this.#lastWrite.clear();
    this.#lastWrite.set(c.jid, signature);
  }

  /** Records a LID ↔ PN pair (both JIDs, normalised here). */
  pair(lid: string, pn: string): void {
    const pnJid = jidNormalizedUser(pn);
    this.upsert({ jid: pnJid, lid: jidNormalizedUser(lid), phoneNumber: phoneOf(pnJid) });
  }

  /** Forgets the remembered writes (a transaction that failed may have rolled some back). */
  forget(): void {
    this.#lastWrite.clear();
  }

  /** Context for the message model: own identity and LID → PN lookups from Baileys' mapping store and contacts. */
  modelContext(): ModelContext {
    const me = this.me();
    const { store, connectionId } = this;
    return {
      mediaUrl: (file) => store.mediaUrls.of(connectionId, file),
      ownJid: me?.jid ?? null,
      ownLid: me?.lid ?? null,
      pnForLid: (lid) => {
        const user = jidDecode(lid)?.user;
        if (!user) return undefined;
        const pnUser = store.authState.getKeys(connectionId, 'lid-mapping', [`${user}_reverse`]).get(`${user}_reverse`);
        if (pnUser) return `${JSON.parse(pnUser) as string}@s.whatsapp.net`;
        return store.contacts.jidForLid(connectionId, lid);
      },
    };
  }

  /** The PN JID of a user JID: LIDs mapped when known, otherwise returned as they are (normalised). */
  toPn(jid: string): string {
    const bare = jidNormalizedUser(jid);
    return bare.endsWith('@lid') ? (this.modelContext().pnForLid(bare) ?? bare) : bare;
  }
}

/** "+<digits>" for a phone-number JID; null for LIDs and groups. */
export function phoneOf(jid: string): string | null {
  if (!jid.endsWith('@s.whatsapp.net')) return null;
  const user = jidDecode(jid)?.user;
  return user ? `+${user}` : null;
}
