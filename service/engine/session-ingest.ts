/**
 * Ingestion of a session's Baileys events (part of `Session`, session.ts): messages, receipts, reactions, edits,
 * revokes, poll votes, presence, contacts and history sync go through the message model (message-model.ts) into
 * SQLite and the event log, one transaction per event.
 *
 * Durability: rc14 sends the delivery receipt of a message before it emits `messages.upsert`; the session commits in
 * the event handler and its frame gate (commit-before-receipt.ts) holds outgoing frames until the commit is durable.
 * A history chunk is receipted before it is even decoded, so `holdForHistory` holds every outgoing frame until
 * `onHistory` has committed it (at most HISTORY_HOLD_MAX_MS).
 */
import {
  getHistoryMsg,
  jidNormalizedUser,
  PROCESSABLE_HISTORY_TYPES,
  proto,
  type BaileysEventMap,
  type WAMessage,
} from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import { messageIdOf, newMessageRecord, type Message, type StoredMessage } from '../db/messages.ts';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';
import type { FrameGate } from './commit-before-receipt.ts';
import { eventPayloadOf } from './event-payloads.ts';
import { storeHistoryPollVotes } from './history-polls.ts';
import type { MediaStore } from './media-store.ts';
import {
  chatIdOf,
  classify,
  lidPairsOf,
  mediaFileNameOf,
  senderOf,
  STATUS_JID,
  textOf,
  timestampOf,
  toPnJid,
  toStoredMessage,
  type ModelContext,
} from './message-model.ts';
import { decryptVote } from './polls.ts';
import { phoneOf, type OwnIdentity, type SessionContacts } from './session-contacts.ts';
import type { SessionMedia } from './session-media.ts';

/**
 * Longest time outgoing frames wait for a history chunk to be committed (its receipts are among them). A chunk takes
 * well under a second; past this (a chunk Baileys failed to process emits nothing) they are released anyway, before
 * Baileys' keep-alive (30 s + 5 s) would call the connection lost.
 */
const HISTORY_HOLD_MAX_MS = 20_000;

export interface SessionIngestDeps {
  store: Store;
  /** The event log the ingested changes are appended to. */
  events: EventLog;
  connectionId: string;
  userId: string;
  log: Logger;
  contacts: SessionContacts;
  /** Local media files (a revoked message's file is removed). */
  media: MediaStore;
  /** The eager download queue for incoming media. */
  downloads: SessionMedia;
  /** Download status-post media as it arrives; otherwise only on request. */
  downloadStatusMedia: boolean;
  /** Own identity from the live creds. */
  me(): OwnIdentity | undefined;
  /** The current socket's frame gate (history chunks hold it). */
  gate(): FrameGate | undefined;
  /** The initial history sync is complete (the lifecycle may go `online`). */
  historyDone(): void;
}

export class SessionIngest {
  readonly connectionId: string;
  readonly userId: string;
  /** Frame holds for the history chunks being processed, oldest first (Baileys processes them in order). */
  #historyHolds: Array<{ release: () => void; timer: NodeJS.Timeout }> = [];

  constructor(private readonly d: SessionIngestDeps) {
    this.connectionId = d.connectionId;
    this.userId = d.userId;
  }

  /** A LID ↔ PN pair Baileys learned. */
  onLidMapping(m: BaileysEventMap['lid-mapping.update']): void {
    this.d.contacts.pair(m.lid, m.pn);
  }

  /** `contacts.upsert` / `contacts.update`: names, pushNames and LIDs of contacts. */
  onContacts(list: BaileysEventMap['contacts.update']): void {
    const ctx = this.d.contacts.modelContext();
    const { store } = this.d;
    store.ingest(() => {
      for (const c of list) {
        if (!c.id) continue;
        const jid = toPnJid(c.id, c.phoneNumber, ctx);
        this.d.contacts.upsert({
          jid,
          lid: c.lid ? jidNormalizedUser(c.lid) : c.id.endsWith('@lid') ? jidNormalizedUser(c.id) : null,
          name: c.name ?? null,
          pushName: c.notify ?? null,
          phoneNumber: phoneOf(jid),
          isGroup: jid.endsWith('@g.us'),
        });
      }
    });
  }

  /**
   * A history sync chunk arrived: rc14 has already written its receipts, and stores nothing before it has inflated
   * and decoded the chunk (several event-loop turns). Once the server has the receipt it never sends the chunk again,
   * so a crash in between lost it: hold every outgoing frame until `onHistory` has committed the chunk.
   * Mirrors Baileys' own test for a chunk it will process (chats.js `shouldProcessHistoryMsg`, process-message.js).
   */
  holdForHistory(messages: WAMessage[]): void {
    for (const msg of messages) {
      const hist = msg.message && msg.key.fromMe ? getHistoryMsg(msg.message) : undefined;
      if (!hist || !PROCESSABLE_HISTORY_TYPES.includes(hist.syncType as unknown as proto.HistorySync.HistorySyncType)) continue;
      const gate = this.d.gate();
      if (!gate) continue;
      const hold = {
        release: gate.hold(),
        timer: setTimeout(() => {
          this.d.log.warn({ chunkOrder: hist.chunkOrder }, 'history chunk not stored in time; sending its receipt anyway');
          this.#historyHolds = this.#historyHolds.filter((h) => h !== hold);
          hold.release();
        }, HISTORY_HOLD_MAX_MS),
      };
      this.#historyHolds.push(hold);
    }
  }

  /**
   * Forgets the holds of a socket that is gone: its held frames go nowhere, unless `release` lets them go first (a
   * logout's frames must leave; the history no longer matters then).
   */
  dropHistoryHolds(release = false): void {
    for (const h of this.#historyHolds.splice(0)) {
      if (release) h.release();
      clearTimeout(h.timer);
    }
  }

  /** A history sync chunk: contacts, chats and messages in one transaction, then its held frames go (not when it failed). */
  onHistory(h: BaileysEventMap['messaging-history.set']): void {
    const hold = this.#historyHolds.shift();
    if (hold) clearTimeout(hold.timer);
    // Failed: the error goes to the session's event handler, which drops the held frames (the chunk's receipts) and
    // reconnects for the redelivery (session-lifecycle.ts `eventsFailed`); the hold is not released.
    this.#storeHistory(h);
    hold?.release(); // committed: the chunk's receipts may go now
    if (h.syncType === proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP || h.isLatest) this.d.historyDone();
  }

  #storeHistory(h: BaileysEventMap['messaging-history.set']): void {
    const { store } = this.d;
    store.tx(() => {
      for (const m of h.lidPnMappings ?? []) this.d.contacts.pair(m.lid, m.pn);
      const ctx = this.d.contacts.modelContext();
      for (const c of h.contacts) {
        if (!c.id) continue;
        const jid = toPnJid(c.id, c.phoneNumber, ctx);
        this.d.contacts.upsert({
          jid,
          lid: c.lid ? jidNormalizedUser(c.lid) : null,
          name: c.name ?? null,
          pushName: c.notify ?? null,
          phoneNumber: phoneOf(jid),
          isGroup: jid.endsWith('@g.us'),
        });
      }
      for (const c of h.chats) {
        if (!c.id) continue;
        const id = c.id.endsWith('@g.us') ? c.id : toPnJid(c.id, c.pnJid, ctx);
        store.chats.upsertMeta(this.connectionId, {
          id,
          lid: c.lidJid ? jidNormalizedUser(c.lidJid) : c.id.endsWith('@lid') ? c.id : null,
          name: c.name ?? c.displayName ?? null,
          isGroup: id.endsWith('@g.us'),
          unread: c.unreadCount ?? 0,
          activityTs: c.conversationTimestamp == null ? null : Number(c.conversationTimestamp) || null,
        });
      }
      let stored = 0;
      for (const msg of h.messages) {
        const m = toStoredMessage(msg, ctx);
        if (!m || m.kind === 'undecryptable') continue;
        if (store.messages.upsert(this.connectionId, m)) stored++;
        store.chats.touch(this.connectionId, { ...chatTouchOf(m), unreadDelta: 0 });
      }
      storeHistoryPollVotes(store, this.connectionId, h.messages, ctx); // votes ride on their polls (history-polls.ts)
      this.d.log.info({ chats: h.chats.length, contacts: h.contacts.length, messages: stored, syncType: h.syncType }, 'history sync stored');
    });
  }


  /**
   * `messages.upsert`: new messages (and the reactions, edits, revokes and poll votes they carry) in one transaction;
   * incoming media is queued for download after the commit.
   */
  onMessages(messages: WAMessage[], type: 'notify' | 'append'): void {
    const { store } = this.d;
    const ctx = this.d.contacts.modelContext();
    const downloads: string[] = [];
    store.ingest(() => {
      for (const msg of messages) {
        // Every LID↔phone pair the key carries feeds the mapping first, so this message lands in the PN chat.
        for (const { lid, pn } of lidPairsOf(msg.key)) this.d.contacts.upsert({ jid: pn, lid, phoneNumber: phoneOf(pn) });
        const kind = classify(msg);
        switch (kind.kind) {
          case 'content':
          case 'undecryptable': {
            const m = toStoredMessage(msg, ctx);
            if (!m) break;
            const { isNew, replaced } = this.#storeMessage(m);
            // Incoming media is fetched right away, before the CDN link expires; own sends are stored by the engine.
            // Status media only on request, unless configured (it is often large and rarely wanted).
            const eager = m.chatId !== STATUS_JID || !!this.d.downloadStatusMedia;
            if ((isNew || replaced) && m.media && !m.fromMe && eager) downloads.push(m.id);
            break;
          }
          case 'pollVote':
            this.#applyPollVote(msg, kind.pollKey, kind.vote, kind.timestampMs, ctx);
            break;
          case 'reaction': {
            const chatId = chatIdOf(msg.key, ctx);
            const from = this.#senderOf(msg, chatId, ctx);
            const ms = Number(msg.message?.reactionMessage?.senderTimestampMs ?? 0);
            this.applyReaction(chatId, kind.targetKey.id ?? '', from, kind.emoji, ms ? Math.floor(ms / 1000) : timestampOf(msg));
            break;
          }
          case 'edit': {
            const chatId = chatIdOf(msg.key, ctx);
            this.applyEdit(chatId, kind.targetKey.id ?? '', textOf(kind.newContent), timestampOf(msg), {
              fromMe: !!msg.key.fromMe,
              senderJid: this.#senderOf(msg, chatId, ctx),
            });
            break;
          }
          case 'revoke':
            this.applyRevoke(chatIdOf(msg.key, ctx), kind.targetKey.id ?? '', { fromMe: !!msg.key.fromMe, senderJid: this.#senderOf(msg, chatIdOf(msg.key, ctx), ctx) });
            break;
          default:
            this.d.log.debug({ kind: kind.kind, type }, 'non-content message');
        }
      }
    });
    for (const id of downloads) this.d.downloads.queue(id);
  }

  /**
   * Decrypts a poll vote with the poll's stored `messageSecret`, records it as the voter's latest vote, and logs
   * `poll.vote` with the selected option names. A vote is never a chat message: no preview, no unread change.
   */
  #applyPollVote(msg: WAMessage, pollKey: proto.IMessageKey, vote: proto.Message.IPollEncValue, timestampMs: number, ctx: ModelContext): void {
    const { store } = this.d;
    const chatId = chatIdOf(msg.key, ctx);
    const voter = this.#senderOf(msg, chatId, ctx);
    const poll = this.#findPoll(chatId, pollKey.id ?? '');
    if (!poll) {
      this.d.log.debug({ chatId, pollKeyId: pollKey.id }, 'vote on an unknown poll; ignored');
      return;
    }
    const selected = decryptVote({ msg, pollKey, vote, poll: poll.record, secret: poll.secret, raw: poll.raw, ownJid: ctx.ownJid, ownLid: ctx.ownLid });
    if (!selected) {
      this.d.log.warn({ chatId, pollId: poll.id }, 'poll vote could not be decrypted; ignored');
      return;
    }
    const timestamp = timestampMs ? Math.floor(timestampMs / 1000) : timestampOf(msg);
    const updated = store.messages.vote(this.connectionId, poll.id, voter, selected, timestamp);
    if (!updated) return;
    this.d.events.append(this.userId, this.connectionId, 'poll.vote', { id: poll.id, chatId, voter, selectedOptions: selected, timestamp });
  }

  /** A stored poll of a chat by key id (whichever side created it), with its record and secret. */
  #findPoll(chatId: string, keyId: string) {
    const target = this.d.store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
    const poll = target && this.d.store.messages.poll(this.connectionId, target.id);
    return poll && target ? { ...poll, id: target.id, record: target } : undefined;
  }

  /** Sender JID of a message (own JID for fromMe, the participant in groups, the chat otherwise). */
  #senderOf(msg: WAMessage, chatId: string, ctx: ModelContext): string {
    return senderOf(msg, chatId, ctx).senderJid;
  }

  /**
   * Stores a reaction on the message with key id `keyId` in `chatId` (`emoji` "" removes it) and logs
   * `message.reaction` when something changed. Returns the reacted-to message, undefined when it is unknown.
   */
  applyReaction(chatId: string, keyId: string, senderJid: string, emoji: string, timestamp: number): Message | undefined {
    const { store } = this.d;
    return store.tx(() => {
      const target = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
      if (!target) {
        this.d.log.debug({ chatId, keyId }, 'reaction to an unknown message');
        return undefined;
      }
      // A message deleted for everyone keeps no reactions (messages.revoke cleared them); late ones are dropped.
      if (target.kind === 'revoked') return target;
      if (store.messages.react(this.connectionId, target.id, senderJid, emoji, timestamp)) {
        const fromMe = senderJid === this.d.me()?.jid;
        this.d.events.append(this.userId, this.connectionId, 'message.reaction', {
          id: target.id,
          chatId,
          from: senderJid,
          fromMe,
          emoji,
          removed: emoji === '',
          timestamp,
        });
      }
      return store.messages.get(this.connectionId, target.id);
    });
  }

  /**
   * Applies an edit of the message with key id `keyId` by its own sender and logs `message.edited` when the text
   * changed. Edits by anyone else than the original sender are ignored. Returns the updated message.
   */
  applyEdit(chatId: string, keyId: string, text: string, editedAt: number, by: { fromMe: boolean; senderJid: string }): Message | undefined {
    const { store } = this.d;
    return store.tx(() => {
      const target = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
      if (!target || target.fromMe !== by.fromMe || (!by.fromMe && target.senderJid !== by.senderJid)) {
        this.d.log.debug({ chatId, keyId }, 'edit of an unknown message or by someone else; ignored');
        return target;
      }
      if (target.text !== text) {
        store.messages.edit(this.connectionId, target.id, text, editedAt);
        this.d.events.append(this.userId, this.connectionId, 'message.edited', {
          id: target.id,
          chatId,
          from: target.senderJid,
          fromMe: target.fromMe,
          body: text,
          previousBody: target.text,
          editedAt,
        });
      }
      return store.messages.get(this.connectionId, target.id);
    });
  }

  /**
   * Marks the message `keyId` of `chatId` deleted for everyone, once (a `message.revoked` event, its media file
   * removed). In a 1:1 chat only its sender can revoke it; in a group also an admin (the server checks the rights).
   * Returns the revoked Message, or undefined when there is no such message or the revoke is not allowed.
   */
  applyRevoke(chatId: string, keyId: string, by: { fromMe: boolean; senderJid: string }): Message | undefined {
    const { store } = this.d;
    const target = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
    if (!target) return undefined;
    if (target.kind === 'revoked') return target;
    const bySender = target.fromMe === by.fromMe && (by.fromMe || target.senderJid === by.senderJid);
    if (!bySender && !chatId.endsWith('@g.us')) return undefined;
    store.messages.revoke(this.connectionId, target.id);
    this.d.events.append(this.userId, this.connectionId, 'message.revoked', { id: target.id, chatId, from: target.senderJid, fromMe: target.fromMe });
    const filename = target.media && mediaFileNameOf(target.media);
    if (filename) void this.d.media.remove(this.connectionId, filename).catch(() => undefined);
    return store.messages.get(this.connectionId, target.id);
  }


  /** `presence.update`: logs `presence.update` per participant (nothing is stored). */
  onPresence(p: BaileysEventMap['presence.update']): void {
    const ctx = this.d.contacts.modelContext();
    const chatId = p.id.endsWith('@g.us') ? p.id : toPnJid(p.id, null, ctx);
    for (const [participant, presence] of Object.entries(p.presences)) {
      this.d.events.append(this.userId, this.connectionId, 'presence.update', {
        chatId,
        participant: toPnJid(participant, null, ctx),
        presence: presence.lastKnownPresence,
        ...(presence.lastSeen != null && { lastSeen: presence.lastSeen }),
      });
    }
  }

  /**
   * Stores a message, touches its chat and logs `message` / `message.sent` when it is new, and `message.ack`
   * when an own message arrives with a higher status than stored: Baileys' event buffer folds a receipt that
   * comes within the buffer window into the `append` upsert of the sent message instead of a `messages.update`.
   * Call inside `tx`.
   */
  #storeMessage(m: StoredMessage): { message: Message; isNew: boolean; replaced: boolean } {
    const { store } = this.d;
    const before = store.messages.stateOf(this.connectionId, m.id); // undefined: not stored yet
    const beforeAck = before ? before.ack : undefined;
    const isNew = before === undefined;
    // An undecryptable placeholder never overwrites a message; the real message replaces the placeholder in place.
    if (before && m.kind === 'undecryptable') {
      return { message: store.messages.get(this.connectionId, m.id)!, isNew: false, replaced: false };
    }
    const replaced = before?.kind === 'undecryptable';
    store.messages.upsert(this.connectionId, m, { existed: !isNew });
    if (m.kind === 'undecryptable') {
      this.d.events.append(this.userId, this.connectionId, 'message.waiting', eventPayloadOf(m, this.d.me()?.jid));
    } else if (isNew || replaced) {
      // Status posts are not chat messages of the status@broadcast "chat": no unread, hidden from GET /chats.
      const unreadDelta = m.fromMe || m.chatId === STATUS_JID ? 0 : 1;
      store.chats.touch(this.connectionId, { ...chatTouchOf(m), unreadDelta });
      if (!m.fromMe && m.senderPushName) {
        this.d.contacts.upsert({ jid: m.senderJid, pushName: m.senderPushName, phoneNumber: phoneOf(m.senderJid) });
      }
      this.d.events.append(this.userId, this.connectionId, m.fromMe ? 'message.sent' : 'message', eventPayloadOf(m, this.d.me()?.jid));
    }
    const after = isNew ? newMessageRecord(m) : store.messages.get(this.connectionId, m.id)!;
    if (m.fromMe && after.ack !== null && after.ack !== (beforeAck ?? 1)) {
      this.d.events.append(this.userId, this.connectionId, 'message.ack', { id: m.id, chatId: m.chatId, ack: after.ack });
    }
    return { message: after, isNew, replaced };
  }

  /** `messages.update`: receipts of own messages (`message.ack`), and reads of incoming ones on another device. */
  onMessageUpdates(updates: BaileysEventMap['messages.update']): void {
    const { store } = this.d;
    const ctx = this.d.contacts.modelContext();
    store.ingest(() => {
      for (const { key, update } of updates) {
        if (typeof update.status !== 'number' || !key.id) continue;
        if (!key.fromMe) {
          // Another device of this account read an incoming message: the chat is read up to that message.
          if (update.status >= proto.WebMessageInfo.Status.READ) this.#readUpTo(chatIdOf(key, ctx), key.id);
          continue;
        }
        const chatId = chatIdOf(key, ctx);
        const id = messageIdOf(true, chatId, key.id);
        if (store.messages.setAck(this.connectionId, id, update.status)) {
          this.d.events.append(this.userId, this.connectionId, 'message.ack', { id, chatId, ack: update.status });
        }
      }
    });
  }

  /** Sets a chat's unread counter to the incoming messages newer than the one with key id `keyId`. */
  #readUpTo(chatId: string, keyId: string): void {
    const { store } = this.d;
    const read = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
    if (!read) return;
    const unread = store.messages.countIncomingAfter(this.connectionId, chatId, read.timestamp);
    if ((store.chats.unread(this.connectionId, chatId) ?? 0) > unread) store.chats.setUnread(this.connectionId, chatId, unread);
  }

  /** Stores a message this service just sent (the engine calls it with Baileys' returned WAMessage). */
  recordSent(msg: WAMessage): Message {
    const m = toStoredMessage(msg, this.d.contacts.modelContext());
    if (!m) throw new Error('sent message has no content');
    return this.d.store.tx(() => this.#storeMessage(m).message);
  }
}

/** The chat preview of a stored message (chats.ts `touch`). */
function chatTouchOf(m: StoredMessage) {
  return { chatId: m.chatId, isGroup: m.chatId.endsWith('@g.us'), messageId: m.id, kind: m.kind, timestamp: m.timestamp, body: m.text, fromMe: m.fromMe };
}

