/**
 * A session's view of its groups (part of `Session`, session.ts): the metadata cache Baileys reads as
 * `cachedGroupMetadata` (a group send then needs no metadata query), kept in the store across restarts (refilled
 * from the server at a connect only when empty or old) and current from the `groups.upsert`, `groups.update` and
 * `group-participants.update` events (`w:gp2` notifications), which also rename group chats, teach LID ↔ PN pairs
 * and log `group.update` / `group.participants`.
 */
import { jidNormalizedUser, type BaileysEventMap, type GroupMetadata, type WASocket } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';
import { GroupCache, isMember, storedGroups } from './groups.ts';
import { toPnJid } from './message-model.ts';
import { phoneOf, type SessionContacts } from './session-contacts.ts';

export interface SessionGroupsDeps {
  store: Store;
  events: EventLog;
  connectionId: string;
  userId: string;
  log: Logger;
  contacts: SessionContacts;
  /** The live socket (open sessions only); undefined otherwise. */
  socket(): WASocket | undefined;
  /** Whether `sock` is still the session's current socket (a late answer to an old one is dropped). */
  isCurrent(sock: WASocket): boolean;
}

export class SessionGroups {
  /** Metadata of the groups the account is in (groups.ts), kept in the `group_metadata` table. */
  readonly cache: GroupCache;

  constructor(private readonly d: SessionGroupsDeps) {
    this.cache = new GroupCache(storedGroups(d.store, d.connectionId));
  }

  /**
   * On a new socket: refills the cache from the server when it is empty or old (groups.ts `needsRefresh`; the answer
   * arrives as full-metadata `groups.update`s), forgetting the groups the account is no longer in. Otherwise the
   * stored cache stands: the notifications missed while offline arrive at login and update it.
   */
  refresh(sock: WASocket): void {
    if (!this.cache.needsRefresh()) return;
    sock.groupFetchAllParticipating().then(
      (all) => this.d.isCurrent(sock) && this.cache.retainOnly(Object.keys(all)),
      (err: unknown) => this.d.log.warn({ err }, 'could not fetch the groups'),
    );
  }

  /**
   * Metadata of a group the account is in: cached, or asked from the server (and cached). `refresh` asks anyway.
   * @throws the Baileys error of a failed query (groups.ts `groupError` maps it); Error when the session is not open.
   */
  async metadata(jid: string, opts: { refresh?: boolean } = {}): Promise<GroupMetadata> {
    const cached = opts.refresh ? undefined : this.cache.get(jid);
    if (cached) return cached;
    const sock = this.d.socket();
    if (!sock) throw new Error('connection is not open');
    const meta = await sock.groupMetadata(jid);
    this.remember(meta);
    return meta;
  }

  /** Caches full metadata of a group the account is in, names its chat by the subject and learns LID ↔ PN pairs. */
  remember(meta: GroupMetadata): void {
    const { store, connectionId, contacts } = this.d;
    const ctx = contacts.modelContext();
    if (!isMember(meta, ctx)) {
      this.cache.delete(meta.id);
      return;
    }
    this.cache.set(meta);
    store.tx(() => {
      store.chats.upsertMeta(connectionId, { id: meta.id, name: meta.subject || null, isGroup: true });
      for (const p of meta.participants) {
        const lid = p.id.endsWith('@lid') ? jidNormalizedUser(p.id) : p.lid ? jidNormalizedUser(p.lid) : null;
        const pn = p.id.endsWith('@s.whatsapp.net') ? jidNormalizedUser(p.id) : p.phoneNumber ? jidNormalizedUser(p.phoneNumber) : null;
        if (lid && pn) contacts.upsert({ jid: pn, lid, phoneNumber: phoneOf(pn) });
      }
    });
  }

  onUpsert(list: BaileysEventMap['groups.upsert']): void {
    for (const meta of list) this.remember(meta);
  }

  /**
   * `groups.update` carries either full metadata (rc14 emits the participating-groups answer this way) or the delta
   * of one `w:gp2` notification (subject, description, settings, with `author`): the first refills the cache, the
   * second updates it, renames the chat and logs `group.update` for a subject or description change.
   */
  onUpdate(list: BaileysEventMap['groups.update']): void {
    const { store, connectionId, userId } = this.d;
    const ctx = this.d.contacts.modelContext();
    for (const delta of list) {
      if (!delta.id) continue;
      if (Array.isArray(delta.participants)) {
        this.remember(delta as GroupMetadata);
        continue;
      }
      this.cache.update({ ...delta, id: delta.id });
      const changed = delta.subject !== undefined || 'desc' in delta;
      if (!changed) continue;
      const by = delta.author ? toPnJid(delta.author, delta.authorPn, ctx) : null;
      store.tx(() => {
        if (delta.subject) store.chats.upsertMeta(connectionId, { id: delta.id!, name: delta.subject, isGroup: true });
        this.d.events.append(userId, connectionId, 'group.update', {
          groupId: delta.id!,
          ...(delta.subject !== undefined && { subject: delta.subject }),
          ...('desc' in delta && { description: delta.desc ?? null }),
          by,
        });
      });
    }
  }

  /** A member change (`w:gp2` add/remove/promote/demote): updates the cache and logs `group.participants`. */
  onParticipants(sock: WASocket, u: BaileysEventMap['group-participants.update']): void {
    const ctx = this.d.contacts.modelContext();
    const participants = u.participants.map((p) => (typeof p === 'string' ? { id: p } : p));
    const jids = participants.map((p) => toPnJid(p.id, p.phoneNumber, ctx));
    const own = [ctx.ownJid, ctx.ownLid].filter(Boolean);
    const includesMe = jids.some((j) => own.includes(j)) || participants.some((p) => own.includes(jidNormalizedUser(p.id)));
    if (u.action === 'remove' && includesMe) this.cache.delete(u.id);
    else if (!this.cache.applyParticipants(u.id, u.action, participants) && u.action === 'add' && includesMe) {
      sock.groupMetadata(u.id).then(
        (meta) => this.d.isCurrent(sock) && this.remember(meta),
        (err: unknown) => this.d.log.warn({ err, groupId: u.id }, 'could not fetch a group the account was added to'),
      );
    }
    if (u.action === 'modify') return;
    this.d.events.append(this.d.userId, this.d.connectionId, 'group.participants', {
      groupId: u.id,
      action: u.action,
      participants: jids,
      by: u.author ? toPnJid(u.author, u.authorPn, ctx) : null,
    });
  }
}
