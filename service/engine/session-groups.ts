/**
 * A session's view of its groups (part of `Session`, session.ts): the metadata cache Baileys reads as
 * `cachedGroupMetadata` (a group send then needs no metadata query), kept in the store across restarts (refilled
 * from the server at a connect only when empty or old) and current from the `groups.upsert`, `groups.update` and
 * `group-participants.update` events (`w:gp2` notifications), which also rename group chats, teach LID ↔ PN pairs
 * and log `group.update` / `group.participants`.
 *
 * A group first seen through a message (its creation or add notification never reached this device) is asked from
 * the server once (`onSeen`): in the background, after the message is committed and without holding anything back,
 * one query at a time and at most one per `intervalMs`; a failed query is not repeated for each further message but
 * after a backoff. Its answer names the chat and logs `group.update` with the subject and description.
 */
import { jidNormalizedUser, type BaileysEventMap, type GroupMetadata, type WASocket } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';
import { GroupCache, groupError, isMember, storedGroups } from './groups.ts';
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
  /** Pacing of the queries for groups first seen through a message (FIRST_SIGHT_PACING by default). */
  pacing?: FirstSightPacing;
}

/** How the metadata of groups first seen through a message is asked for (`SessionGroups.onSeen`). */
export interface FirstSightPacing {
  /** Least time between the starts of two queries, ms. */
  intervalMs: number;
  /** Wait after a group's first failed query before it is asked again, ms; doubled per failure up to `maxRetryMs`. */
  retryMs: number;
  maxRetryMs: number;
}

/** One query a second at most; after a failure 30 s, 1 min, 2 min, … up to 30 min. */
export const FIRST_SIGHT_PACING: FirstSightPacing = { intervalMs: 1_000, retryMs: 30_000, maxRetryMs: 30 * 60_000 };

export class SessionGroups {
  /** Metadata of the groups the account is in (groups.ts), kept in the `group_metadata` table. */
  readonly cache: GroupCache;
  readonly #pacing: FirstSightPacing;
  /** Groups first seen through a message that wait for their query, first seen first. */
  #queue: string[] = [];
  /** Groups queued, being asked, or waiting out the backoff of a failed query: further messages add nothing. */
  readonly #pending = new Set<string>();
  /** Failed queries per group, and when the group may be asked again (unix ms). */
  readonly #failures = new Map<string, { count: number; retryAt: number }>();
  readonly #retryTimers = new Set<NodeJS.Timeout>();
  /** Whether the queue is being worked through (one loop at a time). */
  #draining = false;
  /** When the last first-sight query started (unix ms). */
  #lastQueryAt = 0;
  /** The connect's listing of every group, while it runs: it may name the queued groups, so the queue waits for it. */
  #refreshing: Promise<unknown> | undefined;

  constructor(private readonly d: SessionGroupsDeps) {
    this.cache = new GroupCache(storedGroups(d.store, d.connectionId));
    this.#pacing = d.pacing ?? FIRST_SIGHT_PACING;
  }

  /**
   * On a new socket: refills the cache from the server when it is empty or old (groups.ts `needsRefresh`; the answer
   * arrives as full-metadata `groups.update`s), forgetting the groups the account is no longer in. Otherwise the
   * stored cache stands: the notifications missed while offline arrive at login and update it. Then goes on with the
   * groups first seen through messages that still wait for their query.
   */
  refresh(sock: WASocket): void {
    if (this.cache.needsRefresh()) {
      const listing = sock.groupFetchAllParticipating().then(
        (all) => this.d.isCurrent(sock) && this.cache.retainOnly(Object.keys(all)),
        (err: unknown) => this.d.log.warn({ err }, 'could not fetch the groups'),
      );
      this.#refreshing = listing;
      void listing.finally(() => {
        if (this.#refreshing === listing) this.#refreshing = undefined;
      });
    }
    this.#drain();
  }

  /**
   * The chats of messages just stored (`messages.upsert`, after its commit): each group among them that is not in
   * the cache is queued for one metadata query (see the module doc). Returns at once; nothing waits for the query.
   */
  onSeen(chatIds: Iterable<string>): void {
    const now = Date.now();
    for (const jid of chatIds) {
      if (!jid.endsWith('@g.us') || this.#pending.has(jid) || this.cache.get(jid)) continue;
      const failure = this.#failures.get(jid);
      if (failure && now < failure.retryAt) continue;
      this.#pending.add(jid);
      this.#queue.push(jid);
    }
    if (this.#queue.length) this.#drain();
  }

  /** Forgets the queued groups and their failures (the account was unlinked). */
  forgetSeen(): void {
    this.#queue = [];
    this.#pending.clear();
    this.#failures.clear();
    for (const t of this.#retryTimers) clearTimeout(t);
    this.#retryTimers.clear();
  }

  /** Works through the queue, one query at a time, paced; stops while there is no socket (`refresh` resumes it). */
  #drain(): void {
    if (this.#draining || !this.#queue.length) return;
    this.#draining = true;
    void this.#drainLoop()
      .catch((err: unknown) => this.d.log.error({ err }, 'asking for the metadata of newly seen groups failed'))
      .finally(() => {
        this.#draining = false;
      });
  }

  async #drainLoop(): Promise<void> {
    while (this.#queue.length) {
      const wait = this.#lastQueryAt + this.#pacing.intervalMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
      if (this.#refreshing) await this.#refreshing;
      const sock = this.d.socket();
      if (!sock) return;
      const jid = this.#queue.shift();
      if (!jid) return;
      // In the cache already: named meanwhile (the connect's listing, a late notification, an API call), announced.
      const cached = this.cache.get(jid);
      try {
        let meta = cached;
        if (!meta) {
          this.#lastQueryAt = Date.now();
          meta = await sock.groupMetadata(jid);
          if (!this.d.isCurrent(sock)) {
            this.#queue.unshift(jid); // the socket went: asked again on the next one
            continue;
          }
        }
        if (this.#learned(meta, !cached)) {
          this.#pending.delete(jid);
          this.#failures.delete(jid);
        } else this.#failed(jid, new Error('the account is not a member of the group'), false);
      } catch (err) {
        if (!this.d.isCurrent(sock)) this.#queue.unshift(jid);
        else this.#failed(jid, err, groupError(err, 'read').statusCode !== 404);
      }
    }
  }

  /**
   * Metadata of a group first seen through a message: cached with its chat named (`fresh`: just asked from the
   * server) and `group.update` logged with the subject and description, in one transaction of the group commit.
   * @returns false when the account is not a member.
   */
  #learned(meta: GroupMetadata, fresh: boolean): boolean {
    const { store, events, userId, connectionId } = this.d;
    return store.ingest(() => {
      if (fresh && !this.remember(meta)) return false;
      events.append(userId, connectionId, 'group.update', {
        groupId: meta.id,
        subject: meta.subject ?? '',
        description: meta.desc ?? null,
        by: null,
      });
      return true;
    });
  }

  /**
   * A first-seen group's query failed: it is not asked again before a backoff. A transient failure (`retry`) is
   * asked again when it ends; a refusal (not found, not a member) only when another message of the group arrives
   * after it.
   */
  #failed(jid: string, err: unknown, retry: boolean): void {
    const count = (this.#failures.get(jid)?.count ?? 0) + 1;
    const backoff = Math.min(this.#pacing.retryMs * 2 ** (count - 1), this.#pacing.maxRetryMs);
    this.#failures.set(jid, { count, retryAt: Date.now() + backoff });
    this.d.log.warn({ err, groupId: jid, failures: count, retryInMs: backoff, retry }, 'could not fetch a group first seen through a message');
    if (!retry) {
      this.#pending.delete(jid);
      return;
    }
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer);
      if (!this.#pending.has(jid)) return;
      this.#queue.push(jid);
      this.#drain();
    }, backoff).unref();
    this.#retryTimers.add(timer);
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

  /**
   * Caches full metadata of a group the account is in, names its chat by the subject and learns LID ↔ PN pairs.
   * @returns false when the account is not a member (the group is dropped from the cache instead).
   */
  remember(meta: GroupMetadata): boolean {
    const { store, connectionId, contacts } = this.d;
    const ctx = contacts.modelContext();
    if (!isMember(meta, ctx)) {
      this.cache.delete(meta.id);
      return false;
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
    return true;
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
