/**
 * One connection's Baileys session: a thin coordinator of the parts that each own one concern.
 *
 * | part | module | owns |
 * |---|---|---|
 * | lifecycle | session-lifecycle.ts | the socket, connect/reconnect/backoff, the status state machine, the online marker and its timer, storage-failure handling |
 * | ingest | session-ingest.ts | Baileys events → message model → store (messages, receipts, reactions, edits, revokes, polls, presence, contacts, history sync) |
 * | media | session-media.ts | the download queue of incoming media, on-request downloads |
 * | acks | session-acks.ts | waits for the server's `<ack class="message">` of sent messages |
 * | contacts | session-contacts.ts | contact writes (deduplicated), the LID ↔ PN mapping, the message model's context |
 * | groups | session-groups.ts | the group metadata cache, group events, the query for a group first seen through a message |
 *
 * The session wires them together (the lifecycle's hooks, the event dispatch) and is the only way the engine acts on
 * a connection: it calls methods (`send`, `read`, `presence`, group and block-list operations, …), never the socket.
 * Durability is the lifecycle's (see there): commit before receipt, and a failed commit closes the socket.
 */
import {
  generateMessageIDV2,
  proto,
  type AnyMessageContent,
  type BaileysEventMap,
  type GroupMetadata,
  type MiscMessageGenerationOptions,
  type ParticipantAction,
  type USyncQuery,
  type WAMessage,
  type WAMessageKey,
  type WAPresence,
  type WASocket,
} from '@whiskeysockets/baileys';
import type { Dispatcher } from 'undici';
import type { ConnectionRow, ConnectionStatus } from '../db/connections.ts';
import type { Message } from '../db/messages.ts';
import { CallBook } from './calls.ts';
import type { GroupCache } from './groups.ts';
import type { MediaFile, MediaStore } from './media-store.ts';
import type { ModelContext } from './message-model.ts';
import { ServerAcks, type ServerAckWait } from './session-acks.ts';
import { SessionContacts, type OwnIdentity } from './session-contacts.ts';
import { SessionGroups } from './session-groups.ts';
import { SessionIngest } from './session-ingest.ts';
import { SessionLifecycle, type LifecycleOptions } from './session-lifecycle.ts';
import { SessionMedia } from './session-media.ts';

export { CONNECT_TIMEOUT_MS, ONLINE_FALLBACK_MS, STORAGE_UNAVAILABLE } from './session-lifecycle.ts';
export type { ServerAckOutcome } from './session-acks.ts';

export interface SessionDeps extends LifecycleOptions {
  /** Local media files (incoming media is downloaded eagerly, sent media kept). */
  media: MediaStore;
  /** Dispatcher for media downloads; set in sandbox mode to trust the sandbox media host's CA. */
  mediaDispatcher?: Dispatcher;
  /** Download status-post media as it arrives (`serve --download-status-media`); otherwise only on request. */
  downloadStatusMedia?: boolean;
  /** Baileys `contacts.update` batches (profiles.ts drops a cached picture when a contact changes it). */
  onContactsUpdate?: (session: Session, updates: BaileysEventMap['contacts.update']) => void;
}

/**
 * Whether `m` is a real message, decrypted or not (a CIPHERTEXT stub) — what rc14's `handleMessage` upserts after a
 * decrypt — rather than a stub Baileys makes of a notification (group created, left, renamed…, calls), which it
 * upserts outside the message mutex.
 */
function isRealMessage(m: WAMessage): boolean {
  return !m.messageStubType || m.messageStubType === proto.WebMessageInfo.StubType.CIPHERTEXT;
}

/**
 * The group chats that `messages` prove the account is in: those of real messages (`isRealMessage`), not of the
 * notification stubs, which the group handlers deal with.
 */
function groupChatsOf(messages: WAMessage[]): string[] {
  const out: string[] = [];
  for (const m of messages) {
    const jid = m.key.remoteJid;
    if (!jid?.endsWith('@g.us')) continue;
    if (isRealMessage(m)) out.push(jid);
  }
  return out;
}

export class Session {
  readonly connectionId: string;
  readonly userId: string;
  /** Incoming calls (call.received / call.ended, rejection). */
  readonly calls: CallBook;
  readonly #lifecycle: SessionLifecycle;
  /** Contact writes and the LID ↔ PN mapping. */
  readonly #contacts: SessionContacts;
  /** The media download queue. */
  readonly #media: SessionMedia;
  /** Waits for the server's acks of sent messages. */
  readonly #acks: ServerAcks;
  /** The group metadata cache and group events. */
  readonly #groups: SessionGroups;
  /** Baileys events → message model → store. */
  readonly #ingest: SessionIngest;
  /** profiles.ts: picture changes make cached profiles stale. */
  readonly #onContactsUpdate: SessionDeps['onContactsUpdate'];

  constructor(connection: ConnectionRow, deps: SessionDeps) {
    const { store } = deps;
    const connectionId = connection.id;
    const userId = connection.userId;
    this.connectionId = connectionId;
    this.userId = userId;
    const log = deps.logger.child({ connectionId });
    this.#onContactsUpdate = deps.onContactsUpdate;
    this.#lifecycle = new SessionLifecycle(connection, deps, log, {
      attached: (sock) => {
        this.#ingest.dropHistoryHolds();
        sock.ws.on('CB:ack,class:message', (node) => this.#acks.onAckNode(node));
      },
      events: (sock, events) => {
        try {
          this.#onEvents(sock, events);
        } catch (err) {
          this.#contacts.forget(); // what it remembers may have been rolled back
          // A message of these events may be decrypted and not stored, its receipt waiting in the frame gate.
          this.#lifecycle.eventsFailed(sock, err);
        }
      },
      opened: (sock) => this.#groups.refresh(sock),
      detached: (release) => {
        this.#ingest.dropHistoryHolds(release);
        this.#acks.settleAll('closed');
      },
      unlinked: () => {
        this.#groups.cache.clear(); // the next account linked here may be in other groups
        this.#groups.forgetSeen();
      },
      cachedGroupMetadata: (jid) => this.#groups.cache.get(jid),
    });
    const me = () => this.#lifecycle.me;
    const socket = () => this.#lifecycle.socket;
    this.#contacts = new SessionContacts(store, connectionId, me);
    this.#media = new SessionMedia({ store, media: deps.media, connectionId, log, dispatcher: deps.mediaDispatcher, socket });
    this.#acks = new ServerAcks({ store, events: deps.events, connectionId, userId, log });
    this.#groups = new SessionGroups({
      store,
      events: deps.events,
      connectionId,
      userId,
      log,
      contacts: this.#contacts,
      socket,
      isCurrent: (sock) => this.#lifecycle.current === sock,
    });
    this.#ingest = new SessionIngest({
      store,
      events: deps.events,
      connectionId,
      userId,
      log,
      contacts: this.#contacts,
      media: deps.media,
      downloads: this.#media,
      downloadStatusMedia: !!deps.downloadStatusMedia,
      me,
      gate: () => this.#lifecycle.gate,
      historyDone: () => this.#lifecycle.historyDone(),
    });
    this.calls = new CallBook({ store, events: deps.events, logger: deps.logger, connectionId, userId, toPn: (jid) => this.#contacts.toPn(jid) });
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------

  get status(): ConnectionStatus {
    return this.#lifecycle.status;
  }

  /** The reason of the current status as this process knows it (it may not be stored while the disk is full). */
  get statusReason(): string | null {
    return this.#lifecycle.statusReason;
  }

  /** Whether the session is waiting for storage to work again after a failed commit. */
  get waitingForStorage(): boolean {
    return this.#lifecycle.waitingForStorage;
  }

  /** Latest QR string while waiting for a scan. */
  get qr(): string | undefined {
    return this.#lifecycle.qr;
  }

  /** Own identity from the live creds (sock.user is a stale snapshot in rc14, brief A9). */
  get me(): OwnIdentity | undefined {
    return this.#lifecycle.me;
  }

  /** Whether the session shows QR codes and waits to be linked (status `scan_qr`). */
  get awaitingLink(): boolean {
    return this.#lifecycle.awaitingLink;
  }

  /** Asks for a phone code to link with instead of the QR (pairing.ts); `digits`: E.164 without `+`. @returns `ABCD-EFGH`. */
  requestPairingCode(digits: string): Promise<string> {
    return this.#lifecycle.requestPairingCode(digits);
  }

  /** Whether the session has a live socket (`connected` or `online`): the actions below can reach WhatsApp. */
  get isOpen(): boolean {
    return this.#lifecycle.socket !== undefined;
  }

  /**
   * A mark of the frames written so far on the current socket: `sent()` tells later whether they all went on the
   * wire (false when a failed commit discarded them). Undefined without a socket.
   */
  frameMark(): { sent(): boolean } | undefined {
    return this.#lifecycle.frameMark();
  }

  /** Resolves once the session is `online` (used by tests and callers that must wait). */
  whenOnline(): Promise<void> {
    return this.#lifecycle.whenOnline();
  }

  /** Announces `starting` and connects (session-lifecycle.ts). */
  start(): void {
    this.#lifecycle.start();
  }

  /** Closes the socket; with `logout`, unlinks the device and wipes the auth state first. */
  stop(opts: { logout?: boolean; status?: ConnectionStatus; reason?: string } = {}): Promise<void> {
    return this.#lifecycle.stop(opts);
  }

  /** Baileys events of the current socket, in the order each part expects them. */
  #onEvents(sock: WASocket, events: Partial<BaileysEventMap>): void {
    const lifecycle = this.#lifecycle;
    const ingest = this.#ingest;
    const groups = this.#groups;
    if (events['messages.upsert']) ingest.holdForHistory(events['messages.upsert'].messages);
    if (events['creds.update']) lifecycle.onCreds(events['creds.update']);
    if (events['connection.update']) lifecycle.onConnection(sock, events['connection.update']);
    if (events['lid-mapping.update']) ingest.onLidMapping(events['lid-mapping.update']);
    if (events['messaging-history.set']) ingest.onHistory(events['messaging-history.set']);
    if (events['messaging-history.status']?.status === 'complete') lifecycle.historyDone();
    if (events['contacts.upsert']) ingest.onContacts(events['contacts.upsert']);
    if (events['contacts.update']) ingest.onContacts(events['contacts.update']);
    if (events['contacts.update']) this.#onContactsUpdate?.(this, events['contacts.update']);
    if (events['messages.upsert']) {
      const { messages, type } = events['messages.upsert'];
      ingest.onMessages(messages, type);
      // handed to the store: the key writes of their decrypt may commit now, with them (session-lifecycle.ts)
      if (messages.some(isRealMessage)) lifecycle.releaseDecryptHold();
    }
    if (events['messages.update']) ingest.onMessageUpdates(events['messages.update']);
    if (events['presence.update']) ingest.onPresence(events['presence.update']);
    if (events['groups.upsert']) groups.onUpsert(events['groups.upsert']);
    if (events['groups.update']) groups.onUpdate(events['groups.update']);
    if (events['group-participants.update']) groups.onParticipants(sock, events['group-participants.update']);
    // a group known only from its messages (its creation notification missed) is asked for once, in the background
    if (events['messages.upsert']) groups.onSeen(groupChatsOf(events['messages.upsert'].messages));
    if (events.call) this.calls.onCalls(sock, events.call);
  }

  // ---- contacts ----------------------------------------------------------------------------------------

  /** Context for the message model: own identity and LID → PN lookups (session-contacts.ts). */
  modelContext(): ModelContext {
    return this.#contacts.modelContext();
  }

  /**
   * Metadata of the groups the account is in, handed to Baileys as `cachedGroupMetadata` (a group send then needs no
   * metadata query) and kept current from `w:gp2` notifications (groups.ts); stored, so it survives a restart.
   */
  get groups(): GroupCache {
    return this.#groups.cache;
  }

  // ---- messages ----------------------------------------------------------------------------------------

  /** Stores a message this service just sent (the engine calls it with Baileys' returned WAMessage). */
  recordSent(msg: WAMessage): Message {
    return this.#ingest.recordSent(msg);
  }

  /** Stores a reaction and logs `message.reaction` (session-ingest.ts `applyReaction`); undefined: unknown message. */
  applyReaction(chatId: string, keyId: string, senderJid: string, emoji: string, timestamp: number): Message | undefined {
    return this.#ingest.applyReaction(chatId, keyId, senderJid, emoji, timestamp);
  }

  /** Applies an edit by the message's own sender and logs `message.edited` (session-ingest.ts `applyEdit`). */
  applyEdit(chatId: string, keyId: string, text: string, editedAt: number, by: { fromMe: boolean; senderJid: string }): Message | undefined {
    return this.#ingest.applyEdit(chatId, keyId, text, editedAt, by);
  }

  /** Marks a message deleted for everyone and logs `message.revoked` (session-ingest.ts `applyRevoke`). */
  applyRevoke(chatId: string, keyId: string, by: { fromMe: boolean; senderJid: string }): Message | undefined {
    return this.#ingest.applyRevoke(chatId, keyId, by);
  }

  // ---- groups ------------------------------------------------------------------------------------------

  /**
   * Metadata of a group the account is in: cached, or asked from the server (and cached). `refresh` asks anyway.
   * @throws the Baileys error of a failed query (groups.ts `groupError` maps it).
   */
  groupMetadata(jid: string, opts: { refresh?: boolean } = {}): Promise<GroupMetadata> {
    return this.#groups.metadata(jid, opts);
  }

  /** Caches full metadata of a group the account is in, names its chat by the subject and learns LID ↔ PN pairs. */
  rememberGroup(meta: GroupMetadata): void {
    this.#groups.remember(meta);
  }

  // ---- media -------------------------------------------------------------------------------------------

  /** The local file of a stored message's media, downloaded now when needed (session-media.ts `SessionMedia.ensure`). */
  ensureMedia(messageId: string): Promise<MediaFile> {
    return this.#media.ensure(messageId);
  }

  /** Starts waiting for the server's ack of a message about to be sent (session-acks.ts `ServerAcks.expect`). */
  expectServerAck(keyId: string, timeoutMs: number): ServerAckWait {
    return this.#acks.expect(keyId, timeoutMs);
  }

  // ---- actions: the engine's only way to the socket ------------------------------------------------------
  // Each runs on the live socket and rejects with Error('connection is not open') without one; Baileys' own errors
  // (a Boom with the IQ error code in `data` for an `<error>` reply, a timeout, a closed socket) pass through.

  /** The live socket, or an Error when the session is not open. */
  #live(): WASocket {
    const sock = this.#lifecycle.socket;
    if (!sock) throw new Error('connection is not open');
    return sock;
  }

  /** A new message key id, the way WhatsApp Web makes them (Baileys `generateMessageIDV2` with the own user id). */
  newMessageId(): string {
    return generateMessageIDV2(this.#lifecycle.socket?.user?.id);
  }

  /**
   * Sends a message (any Baileys content: text, media, reaction `{ react }`, revoke `{ delete }`, edit `{ edit }`,
   * forward `{ forward }`, …); resolves with the WAMessage Baileys built, once its frames are queued (they leave
   * after the next commit, commit-before-receipt.ts). Pass `options.messageId` to wait for its server ack first.
   */
  async send(jid: string, content: AnyMessageContent, options: MiscMessageGenerationOptions = {}): Promise<WAMessage | undefined> {
    return this.#live().sendMessage(jid, content, options);
  }

  /** Sends read receipts for incoming messages (Baileys `readMessages`). */
  async read(keys: WAMessageKey[]): Promise<void> {
    return this.#live().readMessages(keys);
  }

  /** Sends a presence: `composing`/`paused` (typing) to a chat, or `available`/`unavailable` for the account. */
  async presence(state: WAPresence, jid?: string): Promise<void> {
    return this.#live().sendPresenceUpdate(state, jid);
  }

  /** Whether a number is on WhatsApp (a usync contact query), with its JID. */
  async onWhatsApp(jid: string): ReturnType<WASocket['onWhatsApp']> {
    return this.#live().onWhatsApp(jid);
  }

  /** Runs a usync query (number-check.ts). */
  async usyncQuery(query: USyncQuery): ReturnType<WASocket['executeUSyncQuery']> {
    return this.#live().executeUSyncQuery(query);
  }

  /** Rejects a ringing call (calls.ts `CallBook.reject`). @throws ServiceError 404 `Call not found`, 502. */
  async rejectCall(callId: string): Promise<void> {
    return this.calls.reject(this.#live(), callId);
  }

  /** Blocks or unblocks a user. */
  async setBlocked(jid: string, blocked: boolean): Promise<void> {
    return this.#live().updateBlockStatus(jid, blocked ? 'block' : 'unblock');
  }

  /** The account's block list as the server gives it (PN or LID JIDs). */
  async blocklist(): Promise<Array<string | undefined>> {
    return this.#live().fetchBlocklist();
  }

  /** About texts (usync `status`): one `{ id, status: { status, setAt } }` per JID. */
  async fetchStatus(...jids: string[]): ReturnType<WASocket['fetchStatus']> {
    return this.#live().fetchStatus(...jids);
  }

  /** The URL of a user's full-size profile picture; a Boom with `data` 404 (none) or 401 (hidden) otherwise. */
  async profilePictureUrl(jid: string): Promise<string | undefined> {
    return this.#live().profilePictureUrl(jid, 'image');
  }

  /** Changes the account's push name (an app-state patch; needs the key the phone shares after linking). */
  async setPushName(name: string): Promise<void> {
    return this.#live().updateProfileName(name);
  }

  /** Changes the account's about text. */
  async setAbout(text: string): Promise<void> {
    return this.#live().updateProfileStatus(text);
  }

  /** Sets the account's profile picture from a JPEG of `size`×`size` pixels. */
  async setProfilePicture(jpeg: Buffer, size: number): Promise<void> {
    const sock = this.#live();
    return sock.updateProfilePicture(sock.user!.id, jpeg, { width: size, height: size });
  }

  /** Every group the account is in, asked from the server (the answer also refills the cache via `groups.update`). */
  async participatingGroups(): Promise<GroupMetadata[]> {
    return Object.values(await this.#live().groupFetchAllParticipating());
  }

  /** Creates a group with `participants` (JIDs) and caches it. */
  async createGroup(subject: string, participants: string[]): Promise<GroupMetadata> {
    const meta = await this.#live().groupCreate(subject, participants);
    this.rememberGroup(meta);
    return meta;
  }

  async setGroupSubject(jid: string, subject: string): Promise<void> {
    return this.#live().groupUpdateSubject(jid, subject);
  }

  /** Sets a group's description; undefined clears it. */
  async setGroupDescription(jid: string, description: string | undefined): Promise<void> {
    return this.#live().groupUpdateDescription(jid, description);
  }

  /** Adds, removes, promotes or demotes members; one `{ status, jid }` per participant (status "200" = done). */
  async updateGroupParticipants(jid: string, participants: string[], action: ParticipantAction): ReturnType<WASocket['groupParticipantsUpdate']> {
    return this.#live().groupParticipantsUpdate(jid, participants, action);
  }

  async leaveGroup(jid: string): Promise<void> {
    return this.#live().groupLeave(jid);
  }

  /** A group's invite code; undefined when the server sent none. */
  async groupInviteCode(jid: string): Promise<string | undefined> {
    return this.#live().groupInviteCode(jid);
  }
}
