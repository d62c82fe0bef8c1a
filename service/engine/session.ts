/**
 * One connection's Baileys session: socket lifecycle, the status state machine, reconnect policy by disconnect
 * reason, and ingestion of Baileys events into SQLite + the event log.
 *
 * Status (DESIGN.md §4): starting → scan_qr → connected (linked; initial sync running) → online (ready);
 * reconnecting (transient loss, backoff), logged_out (401/411: auth wiped, data kept), failed (403, 440, QR never
 * scanned). Every change is one `session.status` event `{ status, previous, reason }`.
 *
 * Reconnect policy (brief A4): 515 restart → new socket at once; 401/411 → logged_out; 403 → failed;
 * 440 (replaced by another session) → failed, no loop; 408/428/500/503 and network errors → backoff
 * 1 s·2^n (max 60 s) ×U(0.8,1.2); while pairing, an exhausted QR ref list (408) opens a new socket with fresh
 * QRs, up to MAX_QR_CYCLES times.
 *
 * Durability of incoming messages: rc14 sends the delivery receipt before it emits `messages.upsert`
 * (`lib/Socket/messages-recv.js handleMessage`: `sendReceipt` then `upsertMessage`), and there is no hook in between.
 * We turn off Baileys' event buffer (`disableEventBuffer`), commit synchronously in the event handler, and hold
 * every outgoing frame for one event-loop turn (`commit-before-receipt.ts`), so the receipt leaves only after the
 * message is committed. Documented in the README.
 */
import { baileysLogger } from './baileys-logger.ts';
import { CallBook } from './calls.ts';
import type { Boom } from '@hapi/boom';
import makeWASocket, {
  Browsers,
  DisconnectReason,
  getHistoryMsg,
  jidDecode,
  jidNormalizedUser,
  PROCESSABLE_HISTORY_TYPES,
  proto,
  type BaileysEventMap,
  type BinaryNode,
  type GroupMetadata,
  type WAMessage,
  type WASocket,
} from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { ConnectionRow, ConnectionStatus } from '../db/connections.ts';
import { messageIdOf, newMessageRecord, type Message, type StoredMessage } from '../db/messages.ts';
import type { Store } from '../db/store.ts';
import { sendFramesAfterCommit, type FrameGate } from './commit-before-receipt.ts';
import { loadAuthState, type SqliteAuthState } from './auth-state.ts';
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
import { eventPayloadOf } from './event-payloads.ts';
import { GroupCache, isMember } from './groups.ts';
import { downloadMessageMedia } from './media-download.ts';
import type { MediaFile, MediaStore } from './media-store.ts';
import type { SandboxTrust } from './sandbox-trust.ts';

/** How a sent message's server acknowledgement ended (see `Session.expectServerAck`). */
export type ServerAckOutcome = 'accepted' | 'closed' | 'timeout' | { error: string };

const MAX_QR_CYCLES = 5;
/** Most JIDs whose last contact write a session remembers (see Session.#lastContactWrite). */
const CONTACT_CACHE_MAX = 10_000;
const MAX_BACKOFF_MS = 60_000;
/**
 * How long a new socket may take to reach the QR or the logged-in state (Baileys' default connectTimeoutMs).
 * The session enforces it itself and gives Baileys connectTimeoutMs 0: rc14 otherwise wraps every frame it sends
 * in a 20 s timeout that captures two stack traces and builds a Boom per frame (lib/Utils/generics.js
 * promiseTimeout), a measurable share of the per-message CPU, and our frame hook (commit-before-receipt.ts)
 * acknowledges every write at once, so that timeout could never fire anyway.
 */
export const CONNECT_TIMEOUT_MS = 20_000;
/** How long a freshly linked session waits for its initial history sync before it reports `online` anyway. */
const HISTORY_WAIT_MS = 15_000;
/**
 * Longest time outgoing frames wait for a history chunk to be committed (its receipts are among them). A chunk takes
 * well under a second; past this (a chunk Baileys failed to process emits nothing) they are released anyway, before
 * Baileys' keep-alive (30 s + 5 s) would call the connection lost.
 */
const HISTORY_HOLD_MAX_MS = 20_000;

export interface SessionDeps {
  store: Store;
  logger: Logger;
  waUrl?: string;
  /** Level for Baileys' own logger (it is chatty; default `warn`). */
  baileysLogLevel: string;
  /** Local media files (incoming media is downloaded eagerly, sent media kept). */
  media: MediaStore;
  /** Dispatcher for media downloads; set in sandbox mode to trust the sandbox media host's CA. */
  mediaDispatcher?: Dispatcher;
  /** Sandbox mode: agents trusting the sandbox CA for Baileys' media uploads/downloads (sandbox-trust.ts). */
  sandboxTrust?: SandboxTrust;
  /** How long a new socket may take to reach the QR or the logged-in state, in ms (CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** Whether the data dir has room again (free space at least `--min-free-mb`); checked before reconnecting after a storage failure. */
  storageHasRoom?: () => boolean;
  /**
   * How long a logged-in socket waits for the server's offline-delivered marker (`<ib><offline/>`) before it goes
   * `online` anyway, in ms (ONLINE_FALLBACK_MS, 20 000).
   */
  onlineFallbackMs?: number;
  /** Download status-post media as it arrives (`serve --download-status-media`); otherwise only on request. */
  downloadStatusMedia?: boolean;
  /** Baileys `contacts.update` batches (profiles.ts drops a cached picture when a contact changes it). */
  onContactsUpdate?: (session: Session, updates: BaileysEventMap['contacts.update']) => void;
}

/** The status reason while the store cannot commit (the disk is full or failing). */
export const STORAGE_UNAVAILABLE = 'storage unavailable';
/** Waits between storage checks after a failed commit, in ms (the last repeats). */
const STORAGE_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

/** Default of SessionDeps.onlineFallbackMs (issue #13 item 7). */
export const ONLINE_FALLBACK_MS = 20_000;

/** At most this many media downloads run at once per session (eager downloads of incoming media). */
const MEDIA_CONCURRENCY = 2;

type Events = Partial<BaileysEventMap>;

export class Session {
  readonly connectionId: string;
  readonly userId: string;
  /** Incoming calls (call.received / call.ended, rejection). */
  readonly calls: CallBook;
  #sock: WASocket | undefined;
  #auth: SqliteAuthState | undefined;
  #status: ConnectionStatus;
  #statusReason: string | null = null;
  #qr: string | undefined;
  /** Set while storage is unavailable: the retry timer and how many checks failed. */
  #storageRetry: { timer: NodeJS.Timeout | undefined; attempt: number } | undefined;
  #unsubscribeCommitFailure: (() => void) | undefined;
  #stopped = false;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #historyTimer: NodeJS.Timeout | undefined;
  #connectTimer: NodeJS.Timeout | undefined;
  /** Goes online without the offline-delivered marker (see SessionDeps.onlineFallbackMs). */
  #onlineFallbackTimer: NodeJS.Timeout | undefined;
  #attempt = 0;
  #qrCycles = 0;
  /** Whether the current socket has shown a QR (so its close ends a pairing attempt, not a failed connect). */
  #qrShown = false;
  #pendingDone = false;
  /** The current socket reported `open` (a linked session is online only then, never on a previous socket's status). */
  #socketOpen = false;
  #awaitingHistory = false;
  #opened: Promise<void>;
  #resolveOpened!: () => void;
  readonly #log: Logger;
  /** Running media downloads by file name (a second request for the same file waits for the first). */
  readonly #downloads = new Map<string, Promise<MediaFile>>();
  /** Eager downloads waiting for a slot. */
  readonly #mediaQueue: string[] = [];
  #mediaActive = 0;
  /** The current socket's frame gate (commit-before-receipt.ts). */
  #gate: FrameGate | undefined;
  /** Frame holds for the history chunks being processed, oldest first (Baileys processes them in order). */
  #historyHolds: Array<{ release: () => void; timer: NodeJS.Timeout }> = [];
  /**
   * The last contact upsert this session wrote for each JID, as JSON: rc14 emits `contacts.update` with the pushName
   * of nearly every incoming message, and re-applying the last upsert of a JID changes nothing (it only merges
   * non-null fields). Every contact write of the session goes through #upsertContact; cleared when it grows past
   * CONTACT_CACHE_MAX and when a transaction may have rolled a write back.
   */
  readonly #lastContactWrite = new Map<string, string>();
  /** Waiters for the server's `<ack class="message">` of a message this service sent, by message key id. */
  readonly #serverAcks = new Map<string, (outcome: ServerAckOutcome) => void>();
  /**
   * Metadata of the groups the account is in, handed to Baileys as `cachedGroupMetadata` (a group send then needs no
   * metadata query) and kept current from `w:gp2` notifications (groups.ts); refilled at every connect.
   */
  readonly groups = new GroupCache();

  constructor(
    connection: ConnectionRow,
    readonly deps: SessionDeps,
  ) {
    this.connectionId = connection.id;
    this.userId = connection.userId;
    this.calls = new CallBook({
      store: deps.store,
      logger: deps.logger,
      connectionId: connection.id,
      userId: connection.userId,
      toPn: (jid) => {
        const bare = jidNormalizedUser(jid);
        return bare.endsWith('@lid') ? (this.modelContext().pnForLid(bare) ?? bare) : bare;
      },
    });
    this.#status = connection.status;
    this.#log = deps.logger.child({ connectionId: connection.id });
    this.#opened = this.#newOpened();
  }

  get status(): ConnectionStatus {
    return this.#status;
  }

  /**
   * A mark of the frames written so far on the current socket: `sent()` tells later whether they all went on the
   * wire (false when a failed commit discarded them). Undefined without a socket.
   */
  frameMark(): { sent(): boolean } | undefined {
    const gate = this.#gate;
    if (!gate) return undefined;
    const mark = gate.enqueued();
    return { sent: () => gate.wasSent(mark) };
  }

  /** Whether the session is waiting for storage to work again after a failed commit. */
  get waitingForStorage(): boolean {
    return this.#storageRetry !== undefined;
  }

  /** The reason of the current status as this process knows it (it may not be stored while the disk is full). */
  get statusReason(): string | null {
    return this.#statusReason;
  }

  /** Latest QR string while waiting for a scan. */
  get qr(): string | undefined {
    return this.#status === 'scan_qr' ? this.#qr : undefined;
  }

  /** The live socket of an open session; undefined otherwise. */
  get socket(): WASocket | undefined {
    return this.#status === 'online' || this.#status === 'connected' ? this.#sock : undefined;
  }

  /** Own identity from the live creds (sock.user is a stale snapshot in rc14, brief A9). */
  get me(): { jid: string; lid: string | null; name: string } | undefined {
    const me = this.#auth?.creds.me;
    if (!me?.id) return undefined;
    return { jid: jidNormalizedUser(me.id), lid: me.lid ? jidNormalizedUser(me.lid) : null, name: me.name ?? '' };
  }

  /** Resolves once the session is `online` (used by tests and callers that must wait). */
  whenOnline(): Promise<void> {
    return this.#opened;
  }

  start(): void {
    this.#stopped = false;
    this.#unsubscribeCommitFailure ??= this.deps.store.onCommitFailure((err) => this.#onCommitFailure(err));
    const linked = !!loadAuthState(this.deps.store.authState, this.connectionId).creds.me;
    // A new connection is already `starting` in the database: announce it anyway, with no previous status.
    this.#setStatus('starting', linked ? 'resuming linked session' : 'new session', { announce: true });
    this.#connect();
  }

  /** Closes the socket; with `logout`, unlinks the device and wipes the auth state first. */
  async stop(opts: { logout?: boolean; status?: ConnectionStatus; reason?: string } = {}): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    clearTimeout(this.#historyTimer);
    clearTimeout(this.#connectTimer);
    clearTimeout(this.#storageRetry?.timer);
    this.#storageRetry = undefined;
    this.#unsubscribeCommitFailure?.();
    this.#unsubscribeCommitFailure = undefined;
    clearTimeout(this.#onlineFallbackTimer);
    const sock = this.#sock;
    this.#sock = undefined;
    // Held receipts of uncommitted history chunks must not leave (the sandbox/server sends those chunks again);
    // a logout's frames must, and the history no longer matters then.
    if (opts.logout) for (const h of this.#historyHolds) h.release();
    this.#dropHistoryHolds();
    this.#settleServerAcks('closed');
    if (sock) {
      if (opts.logout && this.#auth?.creds.me) {
        await Promise.race([sock.logout().catch(() => undefined), delay(3000)]);
      }
      sock.end(undefined);
    }
    if (opts.logout) this.#clearAuthState();
    if (opts.status) this.#setStatus(opts.status, opts.reason ?? null);
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------

  #newOpened(): Promise<void> {
    return new Promise((resolve) => (this.#resolveOpened = resolve));
  }

  /** Forgets the auth state, after writing what the last socket left for the open batch (it must not come back). */
  #clearAuthState(): void {
    this.deps.store.commitPending();
    this.deps.store.authState.clear(this.connectionId);
  }

  #connect(): void {
    const { store, logger, waUrl, baileysLogLevel } = this.deps;
    // Key writes the previous socket left for the open batch must be in the table before the new state loads.
    store.commitPending();
    // Signal key writes join the group commit, coalesced: written once, right before the batch that holds the
    // messages they decrypted commits; frames (the receipts) leave only after that commit.
    const auth = loadAuthState(store.authState, this.connectionId, { deferWrites: (flush) => store.beforeCommit(flush) });
    this.#auth = auth;
    this.#pendingDone = false;
    this.#socketOpen = false;
    this.#qrShown = false;
    this.#awaitingHistory = !!auth.creds.me && !auth.creds.accountSyncCounter;
    // Baileys' 515 restart report is lowered from error to info (baileys-logger.ts).
    const baileysLog = baileysLogger(logger.child({ connectionId: this.connectionId, component: 'baileys' }, { level: baileysLogLevel }));
    const sock = makeWASocket({
      auth: { creds: auth.creds, keys: auth.keys }, // auth.keys caches decoded keys itself (auth-state.ts)
      logger: baileysLog,
      ...(waUrl ? { waWebSocketUrl: waUrl } : {}),
      ...(this.deps.sandboxTrust && {
        fetchAgent: this.deps.sandboxTrust.fetchAgent,
        options: { dispatcher: this.deps.sandboxTrust.dispatcher } as unknown as RequestInit,
      }),
      browser: Browsers.macOS('Chrome'),
      connectTimeoutMs: 0, // enforced by #connectTimer instead (see CONNECT_TIMEOUT_MS)
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldSyncHistoryMessage: () => true,
      generateHighQualityLinkPreview: false,
      cachedGroupMetadata: async (jid) => this.groups.get(jid),
      getMessage: async (key) => {
        const raw = key.id ? store.messages.findRawByKeyId(this.connectionId, key.id) : undefined;
        return raw ? (proto.WebMessageInfo.decode(raw).message ?? undefined) : undefined;
      },
    });
    this.#sock = sock;
    clearTimeout(this.#connectTimer);
    const connectTimeoutMs = this.deps.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.#connectTimer = setTimeout(() => {
      if (this.#sock !== sock) return;
      this.#log.warn({ ms: connectTimeoutMs }, 'connection attempt timed out');
      // The shape Baileys' own timeout had (a Boom with statusCode 408), which #onClose reads.
      const timedOut = Object.assign(new Error('Timed Out'), { output: { statusCode: DisconnectReason.timedOut } });
      void sock.end(timedOut);
    }, connectTimeoutMs);
    disableEventBuffer(sock);
    this.#dropHistoryHolds();
    this.#gate = sendFramesAfterCommit(sock, (send) => this.deps.store.whenDurable(send));
    sock.ws.on('CB:ack,class:message', (node: BinaryNode) => {
      const keyId = node.attrs.id;
      const waiter = keyId ? this.#serverAcks.get(keyId) : undefined;
      if (!keyId || !waiter) return;
      // Recorded here, before rc14 handles a receipt that may follow in the same chunk, so acks stay in order.
      if (!node.attrs.error) this.#recordServerAck(keyId);
      waiter(node.attrs.error ? { error: node.attrs.error } : 'accepted');
    });
    sock.ev.process(async (events) => {
      if (this.#sock !== sock) return; // a stale socket's late events
      try {
        this.#onEvents(sock, events);
      } catch (err) {
        this.#lastContactWrite.clear(); // what it remembers may have been rolled back
        this.#log.error({ err }, 'failed to process session events');
      }
    });
  }

  #scheduleReconnect(reason: string, immediate = false): void {
    if (this.#stopped) return;
    const base = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.#attempt);
    const wait = immediate ? 0 : Math.round(base * (0.8 + Math.random() * 0.4));
    this.#attempt++;
    this.#log.info({ reason, wait }, 'reconnecting');
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = setTimeout(() => {
      if (!this.#stopped) this.#connect();
    }, wait);
  }

  /**
   * Moves to `status` and records it (row + `session.status` event). Returns false when it could not be stored
   * (the disk is full): the status still changes in memory, and the API shows it from there.
   */
  #setStatus(status: ConnectionStatus, reason: string | null, opts: { announce?: boolean } = {}): boolean {
    const current = this.#status;
    // Same status: recorded again only when announced, or when storage becomes (un)available (the reason matters then).
    const storageReasonChanges = this.#statusReason !== reason && (reason === STORAGE_UNAVAILABLE || this.#statusReason === STORAGE_UNAVAILABLE);
    if (current === status && !opts.announce && !storageReasonChanges) return true;
    const previous = current === status ? null : current;
    this.#status = status;
    this.#statusReason = reason;
    const { store } = this.deps;
    let stored = true;
    try {
      store.tx(() => {
        store.connections.setStatus(this.connectionId, status, reason);
        store.appendEvent(this.userId, this.connectionId, 'session.status', { status, previous, reason });
      });
    } catch (err) {
      stored = false;
      this.#log.warn({ err, status, reason }, 'the status could not be stored');
    }
    this.#log.info({ status, previous, reason }, 'status');
    if (status === 'online') this.#resolveOpened();
    else if (previous === 'online') this.#opened = this.#newOpened();
    return stored;
  }

  // ---- storage failures --------------------------------------------------------------------------------

  /**
   * A commit failed (db/store.ts `onCommitFailure`): the frames waiting for it — receipts of messages that were not
   * stored, a sent message whose record failed — are dropped and the socket closed without acknowledging, so the
   * server keeps those messages and redelivers them after the reconnect. The session then checks the disk with
   * backoff and reconnects once a write succeeds (and the data dir has room again).
   */
  #onCommitFailure(err: Error): void {
    if (this.#stopped) return;
    const dropped = this.#gate?.discard() ?? 0;
    const sock = this.#sock;
    if (!sock && this.#storageRetry) return; // already handled (and re-entered by the status write below failing too)
    const firstOfEpisode = !this.#storageRetry;
    this.#storageRetry ??= { timer: undefined, attempt: 0 };
    if (firstOfEpisode) {
      this.#log.error(
        { err, droppedFrames: dropped },
        'storage unavailable: a commit failed; the connection is closed without acknowledging what was not stored and comes back once storage works',
      );
    }
    this.#sock = undefined;
    clearTimeout(this.#historyTimer);
    clearTimeout(this.#connectTimer);
    clearTimeout(this.#reconnectTimer);
    this.#dropHistoryHolds();
    this.#settleServerAcks('closed');
    if (sock) {
      try {
        void Promise.resolve(sock.end(undefined)).catch(() => undefined);
      } catch {
        // already closing
      }
    }
    this.#setStatus('reconnecting', STORAGE_UNAVAILABLE);
    if (firstOfEpisode) this.#scheduleStorageCheck();
  }

  #scheduleStorageCheck(): void {
    const retry = this.#storageRetry;
    if (!retry || this.#stopped) return;
    const wait = STORAGE_RETRY_MS[Math.min(retry.attempt, STORAGE_RETRY_MS.length - 1)]!;
    retry.attempt++;
    clearTimeout(retry.timer);
    retry.timer = setTimeout(() => {
      if (this.#stopped || this.#storageRetry !== retry) return;
      const room = this.deps.storageHasRoom?.() ?? true;
      // The probe is a real write: the status row and its event (announced, so it is written even if unchanged).
      if (!room || !this.#setStatus('reconnecting', 'storage available again', { announce: true })) {
        this.#status = 'reconnecting';
        this.#statusReason = STORAGE_UNAVAILABLE;
        this.#scheduleStorageCheck();
        return;
      }
      this.#storageRetry = undefined;
      this.#log.info('storage works again; reconnecting');
      this.#attempt = 0;
      this.#connect();
    }, wait);
  }

  #maybeOnline(): void {
    if (this.#socketOpen && this.#pendingDone && !this.#awaitingHistory && this.#status === 'connected') {
      clearTimeout(this.#historyTimer);
      this.#setStatus('online', null);
    }
  }

  // ---- Baileys events ----------------------------------------------------------------------------------

  #onEvents(sock: WASocket, events: Events): void {
    if (events['messages.upsert']) this.#holdForHistory(events['messages.upsert'].messages);
    if (events['creds.update']) this.#onCreds(events['creds.update']);
    if (events['connection.update']) this.#onConnection(sock, events['connection.update']);
    if (events['lid-mapping.update']) this.#onLidMapping(events['lid-mapping.update']);
    if (events['messaging-history.set']) this.#onHistory(events['messaging-history.set']);
    if (events['messaging-history.status']?.status === 'complete') this.#historyDone();
    if (events['contacts.upsert']) this.#onContacts(events['contacts.upsert']);
    if (events['contacts.update']) this.#onContacts(events['contacts.update']);
    if (events['contacts.update']) this.deps.onContactsUpdate?.(this, events['contacts.update']);
    if (events['messages.upsert']) this.#onMessages(events['messages.upsert'].messages, events['messages.upsert'].type);
    if (events['messages.update']) this.#onMessageUpdates(events['messages.update']);
    if (events['presence.update']) this.#onPresence(events['presence.update']);
    if (events['groups.upsert']) this.#onGroupsUpsert(events['groups.upsert']);
    if (events['groups.update']) this.#onGroupsUpdate(events['groups.update']);
    if (events['group-participants.update']) this.#onGroupParticipants(sock, events['group-participants.update']);
    if (events.call) this.calls.onCalls(sock, events.call);
  }

  #onCreds(update: BaileysEventMap['creds.update']): void {
    this.#auth?.saveCreds();
    if (update.me?.name !== undefined) {
      const me = this.me;
      if (me) this.deps.store.connections.setAccount(this.connectionId, { ...this.#accountOf(me), pushName: me.name || null });
    }
  }

  #accountOf(me: { jid: string; lid: string | null }) {
    const user = jidDecode(me.jid)?.user ?? '';
    return { phoneNumber: user ? `+${user}` : null, jid: me.jid, lid: me.lid };
  }

  #onConnection(sock: WASocket, u: BaileysEventMap['connection.update']): void {
    if (u.qr || u.connection === 'open' || u.connection === 'close') clearTimeout(this.#connectTimer);
    if (u.qr) {
      this.#qr = u.qr;
      this.#qrShown = true;
      this.#setStatus('scan_qr', null);
    }
    if (u.isNewLogin) {
      this.#qrCycles = 0;
      this.#awaitingHistory = true;
      this.#setStatus('connected', 'paired');
    }
    if (u.connection === 'open') {
      this.#socketOpen = true;
      this.#attempt = 0;
      this.#qrCycles = 0;
      const me = this.me;
      if (me) this.deps.store.connections.setAccount(this.connectionId, { ...this.#accountOf(me), pushName: me.name || null });
      this.#setStatus('connected', null);
      this.#refreshGroups(sock);
      if (this.#awaitingHistory) {
        this.#historyTimer = setTimeout(() => this.#historyDone(), HISTORY_WAIT_MS);
      }
      clearTimeout(this.#onlineFallbackTimer);
      if (!this.#pendingDone) {
        this.#onlineFallbackTimer = setTimeout(() => {
          if (this.#sock !== sock || this.#pendingDone) return;
          this.#log.warn({ waitedMs: this.deps.onlineFallbackMs ?? ONLINE_FALLBACK_MS }, 'no offline-delivered marker from the server; going online without it');
          this.#pendingDone = true;
          this.#maybeOnline();
        }, this.deps.onlineFallbackMs ?? ONLINE_FALLBACK_MS);
      }
      this.#maybeOnline();
    }
    if (u.receivedPendingNotifications) {
      clearTimeout(this.#onlineFallbackTimer);
      this.#pendingDone = true;
      this.#maybeOnline();
    }
    if (u.connection === 'close') this.#onClose(sock, u.lastDisconnect?.error);
  }

  #onClose(sock: WASocket, error: Error | undefined): void {
    if (this.#sock !== sock || this.#stopped) return;
    clearTimeout(this.#historyTimer);
    clearTimeout(this.#onlineFallbackTimer);
    const code = (error as Boom | undefined)?.output?.statusCode;
    const message = error?.message ?? 'connection closed';
    const linked = !!this.#auth?.creds.me;
    this.#log.info({ code, message, linked }, 'socket closed');
    this.#sock = undefined;
    this.#dropHistoryHolds();
    this.#settleServerAcks('closed');
    switch (code) {
      case DisconnectReason.restartRequired: // 515: expected right after pairing
        this.#scheduleReconnect('restart required', true);
        return;
      case DisconnectReason.loggedOut: // 401
      case DisconnectReason.multideviceMismatch: // 411
        this.#clearAuthState();
        this.#stopped = true;
        this.#setStatus('logged_out', code === 401 ? 'logged out from the phone' : 'multi-device mismatch');
        return;
      case DisconnectReason.forbidden: // 403
        this.#stopped = true;
        this.#setStatus('failed', 'forbidden by the server');
        return;
      case DisconnectReason.connectionReplaced: // 440
        this.#stopped = true;
        this.#setStatus('failed', 'connection replaced by another session');
        return;
    }
    if (!linked && this.#qrShown) {
      // Pairing: the QR ref list ran out (408 "QR refs attempts ended"); open a new socket with fresh QRs.
      if (++this.#qrCycles > MAX_QR_CYCLES) {
        this.#stopped = true;
        this.#setStatus('failed', 'QR code was not scanned in time');
        return;
      }
      this.#setStatus('starting', message);
      this.#scheduleReconnect(message, true);
      return;
    }
    this.#setStatus('reconnecting', `${message}${code ? ` (${code})` : ''}`);
    this.#scheduleReconnect(message);
  }

  #historyDone(): void {
    if (!this.#awaitingHistory) return;
    this.#awaitingHistory = false;
    this.#maybeOnline();
  }

  // ---- ingestion -------------------------------------------------------------------------------------

  /** Context for the message model: own identity and LID → PN lookups from Baileys' mapping store and contacts. */
  modelContext(): ModelContext {
    const me = this.me;
    const { store } = this.deps;
    return {
      connectionPath: `/api/connections/${this.connectionId}`,
      ownJid: me?.jid ?? null,
      ownLid: me?.lid ?? null,
      pnForLid: (lid) => {
        const user = jidDecode(lid)?.user;
        if (!user) return undefined;
        const pnUser = store.authState.getKeys(this.connectionId, 'lid-mapping', [`${user}_reverse`]).get(`${user}_reverse`);
        if (pnUser) return `${JSON.parse(pnUser) as string}@s.whatsapp.net`;
        return store.contacts.jidForLid(this.connectionId, lid);
      },
    };
  }

  #onLidMapping(m: BaileysEventMap['lid-mapping.update']): void {
    const pn = jidNormalizedUser(m.pn);
    this.#upsertContact({ jid: pn, lid: jidNormalizedUser(m.lid), phoneNumber: phoneOf(pn) });
  }

  #onContacts(list: BaileysEventMap['contacts.update']): void {
    const ctx = this.modelContext();
    const { store } = this.deps;
    store.ingest(() => {
      for (const c of list) {
        if (!c.id) continue;
        const jid = toPnJid(c.id, c.phoneNumber, ctx);
        this.#upsertContact({
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
   * so a crash in between lost it: hold every outgoing frame until #onHistory has committed the chunk.
   * Mirrors Baileys' own test for a chunk it will process (chats.js `shouldProcessHistoryMsg`, process-message.js).
   */
  #holdForHistory(messages: WAMessage[]): void {
    for (const msg of messages) {
      const hist = msg.message && msg.key.fromMe ? getHistoryMsg(msg.message) : undefined;
      if (!hist || !PROCESSABLE_HISTORY_TYPES.includes(hist.syncType as unknown as proto.HistorySync.HistorySyncType) || !this.#gate) continue;
      const hold = {
        release: this.#gate.hold(),
        timer: setTimeout(() => {
          this.#log.warn({ chunkOrder: hist.chunkOrder }, 'history chunk not stored in time; sending its receipt anyway');
          this.#historyHolds = this.#historyHolds.filter((h) => h !== hold);
          hold.release();
        }, HISTORY_HOLD_MAX_MS),
      };
      this.#historyHolds.push(hold);
    }
  }

  /** Forgets the holds of a socket that is gone (its held frames go nowhere). */
  #dropHistoryHolds(): void {
    for (const h of this.#historyHolds.splice(0)) clearTimeout(h.timer);
  }

  #onHistory(h: BaileysEventMap['messaging-history.set']): void {
    try {
      this.#storeHistory(h);
    } finally {
      // committed (or failed, logged by #onEvents' caller): the chunk's receipts may go now
      const hold = this.#historyHolds.shift();
      if (hold) {
        clearTimeout(hold.timer);
        hold.release();
      }
    }
    if (h.syncType === proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP || h.isLatest) this.#historyDone();
  }

  #storeHistory(h: BaileysEventMap['messaging-history.set']): void {
    const { store } = this.deps;
    store.tx(() => {
      for (const m of h.lidPnMappings ?? []) {
        const pn = jidNormalizedUser(m.pn);
        this.#upsertContact({ jid: pn, lid: jidNormalizedUser(m.lid), phoneNumber: phoneOf(pn) });
      }
      const ctx = this.modelContext();
      for (const c of h.contacts) {
        if (!c.id) continue;
        const jid = toPnJid(c.id, c.phoneNumber, ctx);
        this.#upsertContact({
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
      this.#log.info({ chats: h.chats.length, contacts: h.contacts.length, messages: stored, syncType: h.syncType }, 'history sync stored');
    });
  }

  #onMessages(messages: WAMessage[], type: 'notify' | 'append'): void {
    const { store } = this.deps;
    const ctx = this.modelContext();
    const downloads: string[] = [];
    store.ingest(() => {
      for (const msg of messages) {
        // Every LID↔phone pair the key carries feeds the mapping first, so this message lands in the PN chat.
        for (const { lid, pn } of lidPairsOf(msg.key)) this.#upsertContact({ jid: pn, lid, phoneNumber: phoneOf(pn) });
        const kind = classify(msg);
        switch (kind.kind) {
          case 'content':
          case 'undecryptable': {
            const m = toStoredMessage(msg, ctx);
            if (!m) break;
            const { isNew, replaced } = this.#storeMessage(m);
            // Incoming media is fetched right away, before the CDN link expires; own sends are stored by the engine.
            // Status media only on request, unless configured (it is often large and rarely wanted).
            const eager = m.chatId !== STATUS_JID || !!this.deps.downloadStatusMedia;
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
            this.#log.debug({ kind: kind.kind, type }, 'non-content message');
        }
      }
    });
    for (const id of downloads) this.#queueDownload(id);
  }

  /**
   * Decrypts a poll vote with the poll's stored `messageSecret`, records it as the voter's latest vote, and logs
   * `poll.vote` with the selected option names. A vote is never a chat message: no preview, no unread change.
   */
  #applyPollVote(msg: WAMessage, pollKey: proto.IMessageKey, vote: proto.Message.IPollEncValue, timestampMs: number, ctx: ModelContext): void {
    const { store } = this.deps;
    const chatId = chatIdOf(msg.key, ctx);
    const voter = this.#senderOf(msg, chatId, ctx);
    const poll = this.#findPoll(chatId, pollKey.id ?? '');
    if (!poll) {
      this.#log.debug({ chatId, pollKeyId: pollKey.id }, 'vote on an unknown poll; ignored');
      return;
    }
    const selected = decryptVote({ msg, pollKey, vote, poll: poll.record, secret: poll.secret, raw: poll.raw, ownJid: ctx.ownJid, ownLid: ctx.ownLid });
    if (!selected) {
      this.#log.warn({ chatId, pollId: poll.id }, 'poll vote could not be decrypted; ignored');
      return;
    }
    const timestamp = timestampMs ? Math.floor(timestampMs / 1000) : timestampOf(msg);
    const updated = store.messages.vote(this.connectionId, poll.id, voter, selected, timestamp);
    if (!updated) return;
    store.appendEvent(this.userId, this.connectionId, 'poll.vote', { id: poll.id, chatId, voter, selectedOptions: selected, timestamp });
  }

  /** A stored poll of a chat by key id (whichever side created it), with its record and secret. */
  #findPoll(chatId: string, keyId: string) {
    const target = this.deps.store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
    const poll = target && this.deps.store.messages.poll(this.connectionId, target.id);
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
    const { store } = this.deps;
    return store.tx(() => {
      const target = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
      if (!target) {
        this.#log.debug({ chatId, keyId }, 'reaction to an unknown message');
        return undefined;
      }
      // A message deleted for everyone keeps no reactions (messages.revoke cleared them); late ones are dropped.
      if (target.kind === 'revoked') return target;
      if (store.messages.react(this.connectionId, target.id, senderJid, emoji, timestamp)) {
        const fromMe = senderJid === this.me?.jid;
        store.appendEvent(this.userId, this.connectionId, 'message.reaction', {
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
    const { store } = this.deps;
    return store.tx(() => {
      const target = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
      if (!target || target.fromMe !== by.fromMe || (!by.fromMe && target.senderJid !== by.senderJid)) {
        this.#log.debug({ chatId, keyId }, 'edit of an unknown message or by someone else; ignored');
        return target;
      }
      if (target.text !== text) {
        store.messages.edit(this.connectionId, target.id, text, editedAt);
        store.appendEvent(this.userId, this.connectionId, 'message.edited', {
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
    const { store } = this.deps;
    const target = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
    if (!target) return undefined;
    if (target.kind === 'revoked') return target;
    const bySender = target.fromMe === by.fromMe && (by.fromMe || target.senderJid === by.senderJid);
    if (!bySender && !chatId.endsWith('@g.us')) return undefined;
    store.messages.revoke(this.connectionId, target.id);
    store.appendEvent(this.userId, this.connectionId, 'message.revoked', { id: target.id, chatId, from: target.senderJid, fromMe: target.fromMe });
    const filename = target.media && mediaFileNameOf(target.media);
    if (filename) void this.deps.media.remove(this.connectionId, filename).catch(() => undefined);
    return store.messages.get(this.connectionId, target.id);
  }

  // ---- groups ------------------------------------------------------------------------------------------

  /** Refills the group cache from the server (the answer arrives as a full-metadata `groups.update`). */
  #refreshGroups(sock: WASocket): void {
    this.groups.clear();
    sock.groupFetchAllParticipating().catch((err: unknown) => this.#log.warn({ err }, 'could not fetch the groups'));
  }

  /**
   * Metadata of a group the account is in: cached, or asked from the server (and cached). `refresh` asks anyway.
   * @throws the Baileys error of a failed query (groups.ts `groupError` maps it).
   */
  async groupMetadata(jid: string, opts: { refresh?: boolean } = {}): Promise<GroupMetadata> {
    const cached = opts.refresh ? undefined : this.groups.get(jid);
    if (cached) return cached;
    const sock = this.socket;
    if (!sock) throw new Error('connection is not open');
    const meta = await sock.groupMetadata(jid);
    this.rememberGroup(meta);
    return meta;
  }

  /** Caches full metadata of a group the account is in, names its chat by the subject and learns LID ↔ PN pairs. */
  rememberGroup(meta: GroupMetadata): void {
    const ctx = this.modelContext();
    if (!isMember(meta, ctx)) {
      this.groups.delete(meta.id);
      return;
    }
    this.groups.set(meta);
    const { store } = this.deps;
    store.tx(() => {
      store.chats.upsertMeta(this.connectionId, { id: meta.id, name: meta.subject || null, isGroup: true });
      for (const p of meta.participants) {
        const lid = p.id.endsWith('@lid') ? jidNormalizedUser(p.id) : p.lid ? jidNormalizedUser(p.lid) : null;
        const pn = p.id.endsWith('@s.whatsapp.net') ? jidNormalizedUser(p.id) : p.phoneNumber ? jidNormalizedUser(p.phoneNumber) : null;
        if (lid && pn) this.#upsertContact({ jid: pn, lid, phoneNumber: phoneOf(pn) });
      }
    });
  }

  #onGroupsUpsert(list: BaileysEventMap['groups.upsert']): void {
    for (const meta of list) this.rememberGroup(meta);
  }

  /**
   * `groups.update` carries either full metadata (rc14 emits the participating-groups answer this way) or the delta
   * of one `w:gp2` notification (subject, description, settings, with `author`): the first refills the cache, the
   * second updates it, renames the chat and logs `group.update` for a subject or description change.
   */
  #onGroupsUpdate(list: BaileysEventMap['groups.update']): void {
    const { store } = this.deps;
    const ctx = this.modelContext();
    for (const delta of list) {
      if (!delta.id) continue;
      if (Array.isArray(delta.participants)) {
        this.rememberGroup(delta as GroupMetadata);
        continue;
      }
      this.groups.update({ ...delta, id: delta.id });
      const changed = delta.subject !== undefined || 'desc' in delta;
      if (!changed) continue;
      const by = delta.author ? toPnJid(delta.author, delta.authorPn, ctx) : null;
      store.tx(() => {
        if (delta.subject) store.chats.upsertMeta(this.connectionId, { id: delta.id!, name: delta.subject, isGroup: true });
        store.appendEvent(this.userId, this.connectionId, 'group.update', {
          groupId: delta.id,
          ...(delta.subject !== undefined && { subject: delta.subject }),
          ...('desc' in delta && { description: delta.desc ?? null }),
          by,
        });
      });
    }
  }

  /** A member change (`w:gp2` add/remove/promote/demote): updates the cache and logs `group.participants`. */
  #onGroupParticipants(sock: WASocket, u: BaileysEventMap['group-participants.update']): void {
    const ctx = this.modelContext();
    const participants = u.participants.map((p) => (typeof p === 'string' ? { id: p } : p));
    const jids = participants.map((p) => toPnJid(p.id, p.phoneNumber, ctx));
    const own = [ctx.ownJid, ctx.ownLid].filter(Boolean);
    const includesMe = jids.some((j) => own.includes(j)) || participants.some((p) => own.includes(jidNormalizedUser(p.id)));
    if (u.action === 'remove' && includesMe) this.groups.delete(u.id);
    else if (!this.groups.applyParticipants(u.id, u.action, participants) && u.action === 'add' && includesMe) {
      sock.groupMetadata(u.id).then(
        (meta) => this.#sock === sock && this.rememberGroup(meta),
        (err: unknown) => this.#log.warn({ err, groupId: u.id }, 'could not fetch a group the account was added to'),
      );
    }
    if (u.action === 'modify') return;
    this.deps.store.appendEvent(this.userId, this.connectionId, 'group.participants', {
      groupId: u.id,
      action: u.action,
      participants: jids,
      by: u.author ? toPnJid(u.author, u.authorPn, ctx) : null,
    });
  }

  #onPresence(p: BaileysEventMap['presence.update']): void {
    const ctx = this.modelContext();
    const chatId = p.id.endsWith('@g.us') ? p.id : toPnJid(p.id, null, ctx);
    for (const [participant, presence] of Object.entries(p.presences)) {
      this.deps.store.appendEvent(this.userId, this.connectionId, 'presence.update', {
        chatId,
        participant: toPnJid(participant, null, ctx),
        presence: presence.lastKnownPresence,
        ...(presence.lastSeen != null && { lastSeen: presence.lastSeen }),
      });
    }
  }

  // ---- media -------------------------------------------------------------------------------------------

  #queueDownload(messageId: string): void {
    this.#mediaQueue.push(messageId);
    this.#pumpDownloads();
  }

  #pumpDownloads(): void {
    while (this.#mediaActive < MEDIA_CONCURRENCY && this.#mediaQueue.length > 0) {
      const id = this.#mediaQueue.shift()!;
      this.#mediaActive++;
      this.ensureMedia(id)
        .catch((err: unknown) => this.#log.warn({ err, messageId: id }, 'media download failed; it is retried when the media is requested'))
        .finally(() => {
          this.#mediaActive--;
          this.#pumpDownloads();
        });
    }
  }

  /**
   * The local file of a stored message's media: from disk, or downloaded now (one re-upload request when the CDN
   * lost it). Concurrent calls for the same file share one download.
   * @throws when the message has no media or the download failed.
   */
  ensureMedia(messageId: string): Promise<MediaFile> {
    const { store, media } = this.deps;
    const message = store.messages.get(this.connectionId, messageId);
    const filename = message?.media ? mediaFileNameOf(message.media) : undefined;
    if (!message?.media || !filename) return Promise.reject(new Error('message has no media'));
    const onDisk = media.stat(this.connectionId, filename);
    if (onDisk) return Promise.resolve(onDisk);
    const running = this.#downloads.get(filename);
    if (running) return running;
    const raw = store.messages.getRaw(this.connectionId, messageId);
    if (!raw) return Promise.reject(new Error('message has no stored media keys'));
    const msg = proto.WebMessageInfo.decode(raw) as WAMessage;
    const job = downloadMessageMedia(
      msg,
      filename,
      {
        sock: this.socket,
        media,
        connectionId: this.connectionId,
        dispatcher: this.mediaDispatcher,
        logger: this.#log,
        onReuploaded: (updated) =>
          store.messages.setRaw(this.connectionId, messageId, proto.WebMessageInfo.encode(updated as proto.IWebMessageInfo).finish()),
      },
      message.media.size,
    ).finally(() => this.#downloads.delete(filename));
    this.#downloads.set(filename, job);
    return job;
  }

  /** Dispatcher for media downloads (the sandbox's CA trust in sandbox mode); undefined = undici's global one. */
  get mediaDispatcher(): Dispatcher | undefined {
    return this.deps.mediaDispatcher;
  }

  /**
   * Stores a message, touches its chat and logs `message` / `message.sent` when it is new, and `message.ack`
   * when an own message arrives with a higher status than stored: Baileys' event buffer folds a receipt that
   * comes within the buffer window into the `append` upsert of the sent message instead of a `messages.update`.
   * Call inside `tx`.
   */
  #storeMessage(m: StoredMessage): { message: Message; isNew: boolean; replaced: boolean } {
    const { store } = this.deps;
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
      store.appendEvent(this.userId, this.connectionId, 'message.waiting', eventPayloadOf(m, this.me?.jid));
    } else if (isNew || replaced) {
      // Status posts are not chat messages of the status@broadcast "chat": no unread, hidden from GET /chats.
      const unreadDelta = m.fromMe || m.chatId === STATUS_JID ? 0 : 1;
      store.chats.touch(this.connectionId, { ...chatTouchOf(m), unreadDelta });
      if (!m.fromMe && m.senderPushName) {
        this.#upsertContact({ jid: m.senderJid, pushName: m.senderPushName, phoneNumber: phoneOf(m.senderJid) });
      }
      store.appendEvent(this.userId, this.connectionId, m.fromMe ? 'message.sent' : 'message', eventPayloadOf(m, this.me?.jid));
    }
    const after = isNew ? newMessageRecord(m) : store.messages.get(this.connectionId, m.id)!;
    if (m.fromMe && after.ack !== null && after.ack !== (beforeAck ?? 1)) {
      store.appendEvent(this.userId, this.connectionId, 'message.ack', { id: m.id, chatId: m.chatId, ack: after.ack });
    }
    return { message: after, isNew, replaced };
  }

  #onMessageUpdates(updates: BaileysEventMap['messages.update']): void {
    const { store } = this.deps;
    const ctx = this.modelContext();
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
          store.appendEvent(this.userId, this.connectionId, 'message.ack', { id, chatId, ack: update.status });
        }
      }
    });
  }

  /** Sets a chat's unread counter to the incoming messages newer than the one with key id `keyId`. */
  #readUpTo(chatId: string, keyId: string): void {
    const { store } = this.deps;
    const read = store.messages.findByChatAndKey(this.connectionId, chatId, keyId);
    if (!read) return;
    const unread = store.messages.countIncomingAfter(this.connectionId, chatId, read.timestamp);
    if ((store.chats.unread(this.connectionId, chatId) ?? 0) > unread) store.chats.setUnread(this.connectionId, chatId, unread);
  }

  /**
   * Starts waiting for the server's `<ack class="message" id=keyId>`; call it before the message is sent. The server
   * acknowledges each message stanza once it has taken it (brief §B6: an `error` attribute means it refused it; rc14
   * turns only that into a status update, there is no SERVER_ACK from acks). Settles with 'accepted', `{ error }`,
   * 'closed' (the socket closed first) or 'timeout' (after `timeoutMs`); `cancel()` stops waiting (send failed).
   * `sent()` restarts the timeout once the message has left: Baileys' preparation of a first send to a big group
   * (device lists, prekeys, one `pkmsg` per member device) must not eat into the time the server has to answer.
   */
  expectServerAck(keyId: string, timeoutMs: number): { done: Promise<ServerAckOutcome>; cancel(): void; sent(): void } {
    let settle!: (outcome: ServerAckOutcome) => void;
    let timer: NodeJS.Timeout | undefined;
    const done = new Promise<ServerAckOutcome>((resolve) => {
      timer = setTimeout(() => settle('timeout'), timeoutMs);
      settle = (outcome) => {
        clearTimeout(timer);
        if (this.#serverAcks.get(keyId) === settle) this.#serverAcks.delete(keyId);
        resolve(outcome);
      };
    });
    this.#serverAcks.set(keyId, settle);
    const sent = () => {
      if (this.#serverAcks.get(keyId) !== settle) return; // settled already
      clearTimeout(timer);
      timer = setTimeout(() => settle('timeout'), timeoutMs);
    };
    return { done, cancel: () => settle('closed'), sent };
  }

  #settleServerAcks(outcome: ServerAckOutcome): void {
    for (const settle of [...this.#serverAcks.values()]) settle(outcome);
  }

  /**
   * Records the server's acceptance of the message with key id `keyId` this service sent: ack 2 (SERVER_ACK) and a
   * `message.ack` event, unless a receipt already moved it further. Reactions and edits have no stored message.
   */
  #recordServerAck(keyId: string): void {
    const { store } = this.deps;
    try {
      const message = store.messages.findByKeyId(this.connectionId, keyId);
      if (!message?.fromMe) return;
      store.tx(() => {
        if (store.messages.setAck(this.connectionId, message.id, proto.WebMessageInfo.Status.SERVER_ACK)) {
          store.appendEvent(this.userId, this.connectionId, 'message.ack', {
            id: message.id,
            chatId: message.chatId,
            ack: proto.WebMessageInfo.Status.SERVER_ACK,
          });
        }
      });
    } catch (err) {
      // Called from the socket's frame handler: never let it throw there (a full disk is handled by #onCommitFailure).
      this.#log.warn({ err, keyId }, 'the server acknowledgement could not be recorded');
    }
  }

  /** Creates or merges a contact (see #lastContactWrite); call inside a transaction. */
  #upsertContact(c: Parameters<Store['contacts']['upsert']>[1]): void {
    // the upsert treats a missing field as null, so equivalent writes get one signature
    const signature = JSON.stringify([c.lid ?? null, c.name ?? null, c.pushName ?? null, c.phoneNumber ?? null, !!c.isGroup]);
    if (this.#lastContactWrite.get(c.jid) === signature) return;
    this.deps.store.contacts.upsert(this.connectionId, c);
    if (this.#lastContactWrite.size >= CONTACT_CACHE_MAX) this.#lastContactWrite.clear();
    this.#lastContactWrite.set(c.jid, signature);
  }

  /** Stores a message this service just sent (the engine calls it with Baileys' returned WAMessage). */
  recordSent(msg: WAMessage): Message {
    const m = toStoredMessage(msg, this.modelContext());
    if (!m) throw new Error('sent message has no content');
    return this.deps.store.tx(() => this.#storeMessage(m).message);
  }
}

function chatTouchOf(m: StoredMessage) {
  return { chatId: m.chatId, isGroup: m.chatId.endsWith('@g.us'), timestamp: m.timestamp, body: m.text, fromMe: m.fromMe };
}

/**
 * Turns off Baileys' event buffer, so every decrypted message is handed to us, and committed, right after rc14 sends
 * its receipt. Two buffers hold receipted messages back: the connection-level one (started on connect, flushed only
 * when `<ib><offline>` arrives, so a reconnect holds the whole offline queue) and the per-call one of buffered
 * functions such as `upsertMessage` (flushed by a 100 ms timer for offline-queued messages). A crash in either window
 * lost messages the server had already dropped (seen in the webhook crash test: ~2% of a stream under kill -9).
 * `ev.buffer()` becomes a no-op and every `ev.emit` flushes at once; both are property calls on the shared `ev`
 * object in rc14 (lib/Utils/event-buffer.js), and this must run before the socket's first `process.nextTick`.
 * Only event consolidation is lost, and the engine handles each event on its own anyway.
 */
function disableEventBuffer(sock: WASocket): void {
  const ev = sock.ev;
  const emit = ev.emit.bind(ev);
  ev.buffer = () => undefined;
  ev.emit = ((event, data) => {
    const handled = emit(event, data);
    if (ev.isBuffering()) ev.flush();
    return handled;
  }) as typeof ev.emit;
}

/** "+<digits>" for a phone-number JID; null for LIDs and groups. */
export function phoneOf(jid: string): string | null {
  if (!jid.endsWith('@s.whatsapp.net')) return null;
  const user = jidDecode(jid)?.user;
  return user ? `+${user}` : null;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
