/**
 * Groups on the service side: the per-session group metadata cache Baileys reads as `cachedGroupMetadata`, stored
 * in the `group_metadata` table (a send after a restart needs no metadata query) and kept fresh from `w:gp2`
 * notifications (Baileys' `groups.update` / `group-participants.update` events, built from the
 * notification stubs in rc14 `lib/Utils/process-message.js`), and the mapping of Baileys' `GroupMetadata` to the
 * API's group records. Without the refresh Baileys would encrypt group sends for a stale member list (found with
 * the sandbox: a removed member kept getting the sender key, an added one got nothing).
 *
 * Protocol facts: `w:g2` IQ errors come back as a Boom whose `data` is the numeric `<error code>` (rc14
 * `assertNodeErrorFree`) or, for metadata queries, with `statusCode` set to it (`extractGroupMetadata`);
 * WhatsApp answers 403 (`forbidden` / `not-authorized`) to a non-admin's admin action and to a metadata query by a
 * non-member, and 404 (`item-not-found`) for an unknown group.
 */
import { isLidUser, jidNormalizedUser, type GroupMetadata, type GroupParticipant, type ParticipantAction } from '@whiskeysockets/baileys';
import { badRequest, forbidden, notFound, ServiceError } from '../errors.ts';
import type { Store } from '../db/store.ts';
import { toPnJid, type ModelContext } from './message-model.ts';

/** A group as listed (`GET /connections/:id/groups`). */
export interface GroupSummary {
  id: string;
  subject: string;
  description: string | null;
  /** Creator as a phone-number JID where known (else the LID), null when WhatsApp does not say. */
  owner: string | null;
  /** ISO 8601, null when unknown. */
  createdAt: string | null;
  participantsCount: number;
  /** `pn`: members named by phone number; `lid`: members named by LID (with their phone number alongside). */
  addressingMode: 'pn' | 'lid';
}

export interface GroupParticipantInfo {
  /** Phone-number JID where known, else the LID. */
  jid: string;
  /** International format with +, null when only the LID is known. */
  phoneNumber: string | null;
  lid: string | null;
  /** Contact name or push name, null when unknown ("You" is not invented for the own account: its push name). */
  name: string | null;
  isAdmin: boolean;
  isSuperAdmin: boolean;
}

/** A group with its members (`GET /connections/:id/groups/:groupId`). */
export interface GroupInfo extends GroupSummary {
  participants: GroupParticipantInfo[];
}

/** Outcome of one participant of an add/remove/promote/demote request. */
export interface ParticipantResult {
  jid: string;
  phoneNumber: string | null;
  /** WhatsApp's per-participant code: 200 done, 403 not allowed (e.g. the creator), 404 not a member / unknown,
   * 408 recently left, 409 already a member. */
  status: number;
}

export type GroupAction = Exclude<ParticipantAction, 'modify'>;

/**
 * Where a GroupCache keeps its groups across restarts (`storedGroups`: the `group_metadata` table). `fetchedAt` is
 * the unix ms the server last sent a group's whole metadata; null in `put` marks a delta from a notification.
 */
export interface GroupCacheBacking {
  load(): Array<{ meta: GroupMetadata; fetchedAt: number }>;
  put(meta: GroupMetadata, fetchedAt: number | null): void;
  remove(id: string): void;
  clear(): void;
}

/**
 * The store's `group_metadata` rows of one connection as a GroupCacheBacking. Writes join the group-commit batch
 * (`store.ingest`), so a notification's change is durable before the frames that follow it leave; rows that do
 * not parse are skipped (the next send asks the server instead).
 */
export function storedGroups(store: Store, connectionId: string): GroupCacheBacking {
  const repo = store.groupMetadata;
  return {
    load() {
      const out: Array<{ meta: GroupMetadata; fetchedAt: number }> = [];
      for (const row of repo.list(connectionId)) {
        try {
          const meta = JSON.parse(row.json) as GroupMetadata;
          if (meta?.id === row.groupId && Array.isArray(meta.participants)) out.push({ meta, fetchedAt: row.fetchedAt });
        } catch {
          // a damaged row: left out, the group is asked from the server when needed
        }
      }
      return out;
    },
    put: (meta, fetchedAt) => store.ingest(() => repo.put(connectionId, meta.id, JSON.stringify(meta), fetchedAt)),
    remove: (id) => store.ingest(() => repo.remove(connectionId, id)),
    clear: () => store.ingest(() => repo.clear(connectionId)),
  };
}

/** How old the oldest whole metadata of the cache may get before a connect asks the server for every group (24 h). */
export const GROUP_REFRESH_MAX_AGE_MS = 24 * 3600 * 1000;

/**
 * Group metadata by group JID, for one session: what Baileys reads as `cachedGroupMetadata`. Kept in memory and,
 * with a backing, in the store (loaded on first use), so the first send to a group after a restart needs no
 * metadata query; updated from `w:gp2` notifications.
 */
export class GroupCache {
  #groups: Map<string, GroupMetadata> | undefined;
  readonly #fetchedAt = new Map<string, number>();

  constructor(private readonly backing?: GroupCacheBacking) {}

  #map(): Map<string, GroupMetadata> {
    if (!this.#groups) {
      this.#groups = new Map();
      for (const { meta, fetchedAt } of this.backing?.load() ?? []) {
        this.#groups.set(meta.id, meta);
        this.#fetchedAt.set(meta.id, fetchedAt);
      }
    }
    return this.#groups;
  }

  #put(meta: GroupMetadata, fetchedAt: number | null): void {
    this.#map().set(meta.id, meta);
    if (fetchedAt !== null) this.#fetchedAt.set(meta.id, fetchedAt);
    else if (!this.#fetchedAt.has(meta.id)) this.#fetchedAt.set(meta.id, 0);
    this.backing?.put(meta, fetchedAt);
  }

  get(jid: string): GroupMetadata | undefined {
    return this.#map().get(jid);
  }

  /** Caches the whole metadata of a group as the server just sent it. */
  set(meta: GroupMetadata, fetchedAt = Date.now()): void {
    this.#put(meta, fetchedAt);
  }

  delete(jid: string): void {
    if (!this.#map().delete(jid)) return;
    this.#fetchedAt.delete(jid);
    this.backing?.remove(jid);
  }

  all(): GroupMetadata[] {
    return [...this.#map().values()];
  }

  clear(): void {
    this.#map().clear();
    this.#fetchedAt.clear();
    this.backing?.clear();
  }

  /** Forgets every group not in `ids` (after the server listed the groups the account is in). */
  retainOnly(ids: Iterable<string>): void {
    const keep = new Set(ids);
    for (const id of [...this.#map().keys()]) if (!keep.has(id)) this.delete(id);
  }

  /**
   * Whether a connect should ask the server for every group: nothing is cached, or some group's whole metadata is
   * older than `maxAgeMs` (the cache otherwise follows the notifications, which WhatsApp also delivers offline).
   */
  needsRefresh(now = Date.now(), maxAgeMs = GROUP_REFRESH_MAX_AGE_MS): boolean {
    if (this.#map().size === 0) return true;
    for (const t of this.#fetchedAt.values()) if (now - t > maxAgeMs) return true;
    return false;
  }

  /** Merges a `groups.update` delta (subject, description, settings) into a cached group. */
  update(delta: Partial<GroupMetadata> & { id: string }): void {
    const current = this.#map().get(delta.id);
    if (!current) return;
    const next: GroupMetadata = { ...current };
    if (delta.subject !== undefined) next.subject = delta.subject;
    if ('desc' in delta) next.desc = delta.desc;
    if (delta.announce !== undefined) next.announce = delta.announce;
    if (delta.restrict !== undefined) next.restrict = delta.restrict;
    if (delta.ephemeralDuration !== undefined) next.ephemeralDuration = delta.ephemeralDuration;
    this.#put(next, null);
  }

  /**
   * Applies a `group-participants.update` to a cached group. Participants are matched by any of their names (JID,
   * phone number, LID), since notifications of LID groups name members by LID with `phone_number` alongside.
   * Returns false when the group is not cached (the next send fetches it).
   */
  applyParticipants(groupId: string, action: ParticipantAction, participants: GroupParticipant[]): boolean {
    const current = this.#map().get(groupId);
    if (!current) return false;
    const names = (p: Partial<GroupParticipant>) =>
      [p.id, p.phoneNumber, p.lid].filter((x): x is string => !!x).map((j) => jidNormalizedUser(j));
    const wanted = new Set(participants.flatMap(names));
    const matches = (p: GroupParticipant) => names(p).some((n) => wanted.has(n));
    let list = current.participants;
    switch (action) {
      case 'add':
        list = [
          ...list.filter((p) => !matches(p)),
          ...participants.map((p) => ({ id: p.id, ...(p.phoneNumber && { phoneNumber: p.phoneNumber }), ...(p.lid && { lid: p.lid }), admin: null })),
        ];
        break;
      case 'remove':
        list = list.filter((p) => !matches(p));
        break;
      case 'promote':
        list = list.map((p) => (matches(p) && p.admin !== 'superadmin' ? { ...p, admin: 'admin' } : p));
        break;
      case 'demote':
        list = list.map((p) => (matches(p) ? { ...p, admin: null } : p));
        break;
      default:
        return true;
    }
    this.#put({ ...current, participants: list, size: list.length }, null);
    return true;
  }
}

/** True when `meta` lists the account (by its PN JID or LID). */
export function isMember(meta: GroupMetadata, ctx: ModelContext): boolean {
  const own = [ctx.ownJid, ctx.ownLid].filter((x): x is string => !!x).map((j) => jidNormalizedUser(j));
  return meta.participants.some((p) => [p.id, p.phoneNumber, p.lid].some((n) => !!n && own.includes(jidNormalizedUser(n))));
}

const phoneOfJid = (jid: string | null): string | null => (jid?.endsWith('@s.whatsapp.net') ? `+${jid.split('@')[0]}` : null);

/** The API record of a group (without members). */
export function groupSummaryOf(meta: GroupMetadata, ctx: ModelContext): GroupSummary {
  const owner = meta.owner ? toPnJid(meta.owner, meta.ownerPn, ctx) : null;
  return {
    id: meta.id,
    subject: meta.subject ?? '',
    description: meta.desc ?? null,
    owner,
    createdAt: meta.creation ? new Date(meta.creation * 1000).toISOString() : null,
    participantsCount: meta.participants.length || meta.size || 0,
    addressingMode: meta.addressingMode === 'lid' ? 'lid' : 'pn',
  };
}

/** The API record of one member: PN JID where known, its LID, a name from the contacts, the admin role. */
export function participantOf(p: GroupParticipant, ctx: ModelContext, nameOf: (jid: string) => string | undefined): GroupParticipantInfo {
  const id = jidNormalizedUser(p.id);
  const lid = isLidUser(id) ? id : p.lid ? jidNormalizedUser(p.lid) : null;
  const jid = toPnJid(id, p.phoneNumber, ctx);
  return {
    jid,
    phoneNumber: phoneOfJid(jid),
    lid,
    name: nameOf(jid) ?? p.name ?? p.notify ?? null,
    isAdmin: p.admin === 'admin' || p.admin === 'superadmin',
    isSuperAdmin: p.admin === 'superadmin',
  };
}

export function groupInfoOf(meta: GroupMetadata, ctx: ModelContext, nameOf: (jid: string) => string | undefined): GroupInfo {
  return { ...groupSummaryOf(meta, ctx), participants: meta.participants.map((p) => participantOf(p, ctx, nameOf)) };
}

/**
 * A group id of a path: `120363…@g.us` or its user part alone. @throws ServiceError 400 for anything else.
 */
export function groupJidOf(input: string): string {
  const id = input.trim();
  const m = /^([0-9]{1,40}(?:-[0-9]{1,20})?)(@g\.us)?$/.exec(id);
  if (!m) throw badRequest('groupId must be a group JID (…@g.us)');
  return `${m[1]}@g.us`;
}

/**
 * A participant of a request (international number, `…@s.whatsapp.net`, `…@c.us` or `…@lid`) as a user JID;
 * in a LID-addressed group a member known by phone number is named by its LID, as WhatsApp names it there.
 * @throws ServiceError 400 naming the index of a malformed entry.
 */
export function participantJidOf(input: string, index: number, meta?: GroupMetadata, field = 'participants'): string {
  const value = input.trim();
  let jid: string | undefined;
  if (/^\+?[\d\s().-]+$/.test(value)) {
    const digits = value.replace(/\D/g, '');
    if (digits.length >= 6 && digits.length <= 15) jid = `${digits}@s.whatsapp.net`;
  } else {
    const m = /^(\d{1,20})(?::\d+)?@(s\.whatsapp\.net|c\.us|lid)$/.exec(value);
    if (m) jid = `${m[1]}@${m[2] === 'lid' ? 'lid' : 's.whatsapp.net'}`;
  }
  if (!jid) throw badRequest(`body/${field}/${index} is not an international phone number or a user JID`);
  if (meta?.addressingMode === 'lid' && !isLidUser(jid)) {
    const member = meta.participants.find((p) => p.phoneNumber && jidNormalizedUser(p.phoneNumber) === jid);
    if (member) return jidNormalizedUser(member.id);
  }
  return jid;
}

/** The code of a failed `w:g2` IQ (see the module doc), undefined for transport errors. */
function iqCode(err: unknown): number | undefined {
  const e = err as { data?: unknown; output?: { statusCode?: number } } | null;
  if (typeof e?.data === 'number' && e.data > 0) return e.data;
  // Baileys' connection errors are Booms too (401 logged out, 408 timed out, 428 closed, 440 replaced): only the
  // codes a w:g2 answer carries count.
  const status = e?.output?.statusCode;
  return status === 400 || status === 403 || status === 404 || status === 406 ? status : undefined;
}

/**
 * The API error for a failed group request: 404 `Group not found`; 403 `Not a group admin` for an admin action
 * (`read`: a read of a group the account is not in answers 404 instead); 400 for a request WhatsApp found malformed;
 * 502 otherwise (transport errors, anything unexpected).
 */
export function groupError(err: unknown, kind: 'read' | 'admin' | 'member'): ServiceError {
  if (err instanceof ServiceError) return err;
  const code = iqCode(err);
  const text = err instanceof Error ? err.message : String(err);
  if (code === 404 || ((code === 403 || code === 401) && kind === 'read')) return notFound('Group not found');
  if (code === 403 || code === 401) return forbidden(kind === 'admin' ? 'Not a group admin' : 'Not a group member');
  if (code === 400 || code === 406) return badRequest(`WhatsApp refused the group request: ${text}`);
  return new ServiceError(502, `The group request failed: ${text}${code ? ` (${code})` : ''}`);
}
