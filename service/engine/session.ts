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
import type { Boom } from '@hapi/boom';
import makeWASocket, {
  Browsers,
  DisconnectReason,
  jidDecode,
  jidNormalizedUser,
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
import type { Message } from '../db/messages.ts';
import type { Store } from '../db/store.ts';
import { loadAuthState, type SqliteAuthState } from './auth-state.ts';
import { forgetUnfinishedPairing, isLinked, linkedMe, PhoneCodePairing } from './pairing.ts';
import { baileysLogger } from './baileys-logger.ts';
import { CallBook } from './calls.ts';
import { sendFramesAfterCommit, type FrameGate } from './commit-before-receipt.ts';
import type { GroupCache } from './groups.ts';
import type { MediaFile, MediaStore } from './media-store.ts';
import type { ModelContext } from './message-model.ts';
import type { SandboxTrust } from './sandbox-trust.ts';
import { ServerAcks, type ServerAckWait } from './session-acks.ts';
import { SessionContacts } from './session-contacts.ts';
import { SessionGroups } from './session-groups.ts';
import { SessionIngest } from './session-ingest.ts';
import { SessionMedia } from './session-media.ts';

const MAX_QR_CYCLES = 5;
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
}

/** The status reason while the store cannot commit (the disk is full or failing). */
export const STORAGE_UNAVAILABLE = 'storage unavailable';
/** Waits between storage checks after a failed commit, in ms (the last repeats). */
const STORAGE_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

/** Default of SessionDeps.onlineFallbackMs (issue #13 item 7). */
export const ONLINE_FALLBACK_MS = 20_000;

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
  /** The media download queue (session-media.ts). */
  readonly #media: SessionMedia;
  /** The current socket's frame gate (commit-before-receipt.ts). */
  #gate: FrameGate | undefined;
  /** Contact writes and the LID ↔ PN mapping (session-contacts.ts). */
  readonly #contacts: SessionContacts;
  /** Waits for the server's acks of sent messages (session-acks.ts). */
  readonly #acks: ServerAcks;
  /** The group metadata cache and group events (session-groups.ts). */
  readonly #groups: SessionGroups;
  /** Baileys events → message model → store (session-ingest.ts). */
  readonly #ingest: SessionIngest;
  /** Linking by phone code instead of a QR scan (pairing.ts). */
  readonly phoneCode: PhoneCodePairing;

  constructor(
    connection: ConnectionRow,
    readonly deps: SessionDeps,
  ) {
    this.connectionId = connection.id;
    this.userId = connection.userId;
    this.#contacts = new SessionContacts(deps.store, connection.id, () => this.me);
    this.#log = deps.logger.child({ connectionId: connection.id });
    this.phoneCode = new PhoneCodePairing(this.#log);
    this.#media = new SessionMedia({
      store: deps.store,
      media: deps.media,
      connectionId: connection.id,
      log: this.#log,
      dispatcher: deps.mediaDispatcher,
      socket: () => this.socket,
    });
    this.#acks = new ServerAcks({ store: deps.store, connectionId: connection.id, userId: connection.userId, log: this.#log });
    this.#groups = new SessionGroups({
      store: deps.store,
      connectionId: connection.id,
      userId: connection.userId,
      log: this.#log,
      contacts: this.#contacts,
      socket: () => this.socket,
      isCurrent: (sock) => this.#sock === sock,
    });
    this.#ingest = new SessionIngest({
      store: deps.store,
      connectionId: connection.id,
      userId: connection.userId,
      log: this.#log,
      contacts: this.#contacts,
      media: deps.media,
      downloads: this.#media,
      downloadStatusMedia: !!deps.downloadStatusMedia,
      me: () => this.me,
      gate: () => this.#gate,
      historyDone: () => this.#historyDone(),
    });
    this.calls = new CallBook({
      store: deps.store,
      logger: deps.logger,
      connectionId: connection.id,
      userId: connection.userId,
      toPn: (jid) => this.#contacts.toPn(jid),
    });
    this.#status = connection.status;
    this.#opened = this.#newOpened();
  }

  /**
   * Metadata of the groups the account is in, handed to Baileys as `cachedGroupMetadata` (a group send then needs no
   * metadata query) and kept current from `w:gp2` notifications (groups.ts); stored, so it survives a restart.
   */
  get groups(): GroupCache {
    return this.#groups.cache;
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

  /** The socket showing QR codes while the session waits to be linked (status `scan_qr`); undefined otherwise. */
  get pairingSocket(): WASocket | undefined {
    return this.#status === 'scan_qr' ? this.#sock : undefined;
  }

  /** The live socket of an open session; undefined otherwise. */
  get socket(): WASocket | undefined {
    return this.#status === 'online' || this.#status === 'connected' ? this.#sock : undefined;
  }

  /** Own identity from the live creds (sock.user is a stale snapshot in rc14, brief A9). */
  get me(): { jid: string; lid: string | null; name: string } | undefined {
    const me = linkedMe(this.#auth?.creds);
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
    const linked = isLinked(loadAuthState(this.deps.store.authState, this.connectionId).creds);
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
    this.#ingest.dropHistoryHolds(!!opts.logout);
    this.#acks.settleAll('closed');
    if (sock) {
      if (opts.logout && isLinked(this.#auth?.creds)) {
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
    this.groups.clear(); // the next account linked here may be in other groups
  }

  #connect(): void {
    const { store, logger, waUrl, baileysLogLevel } = this.deps;
    // Key writes the previous socket left for the open batch must be in the table before the new state loads.
    store.commitPending();
    // Signal key writes join the group commit, coalesced: written once, right before the batch that holds the
    // messages they decrypted commits; frames (the receipts) leave only after that commit.
    const auth = loadAuthState(store.authState, this.connectionId, { deferWrites: (flush) => store.beforeCommit(flush) });
    if (forgetUnfinishedPairing(auth.creds)) auth.saveCreds(); // a phone code asked for on an earlier socket (pairing.ts)
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
    this.phoneCode.attach(sock, auth.creds);
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
    this.#ingest.dropHistoryHolds();
    this.#gate = sendFramesAfterCommit(sock, (send) => this.deps.store.whenDurable(send));
    sock.ws.on('CB:ack,class:message', (node: BinaryNode) => this.#acks.onAckNode(node));
    sock.ev.process(async (events) => {
      if (this.#sock !== sock) return; // a stale socket's late events
      try {
        this.#onEvents(sock, events);
      } catch (err) {
        this.#contacts.forget(); // what it remembers may have been rolled back
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
    this.#ingest.dropHistoryHolds();
    this.#acks.settleAll('closed');
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
    const ingest = this.#ingest;
    if (events['messages.upsert']) ingest.holdForHistory(events['messages.upsert'].messages);
    if (events['creds.update']) this.#onCreds(events['creds.update']);
    if (events['connection.update']) this.#onConnection(sock, events['connection.update']);
    if (events['lid-mapping.update']) ingest.onLidMapping(events['lid-mapping.update']);
    if (events['messaging-history.set']) ingest.onHistory(events['messaging-history.set']);
    if (events['messaging-history.status']?.status === 'complete') this.#historyDone();
    if (events['contacts.upsert']) ingest.onContacts(events['contacts.upsert']);
    if (events['contacts.update']) ingest.onContacts(events['contacts.update']);
    if (events['messages.upsert']) ingest.onMessages(events['messages.upsert'].messages, events['messages.upsert'].type);
    if (events['messages.update']) ingest.onMessageUpdates(events['messages.update']);
    if (events['presence.update']) ingest.onPresence(events['presence.update']);
    if (events['groups.upsert']) this.#groups.onUpsert(events['groups.upsert']);
    if (events['groups.update']) this.#groups.onUpdate(events['groups.update']);
    if (events['group-participants.update']) this.#groups.onParticipants(sock, events['group-participants.update']);
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
      this.#groups.refresh(sock);
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
    const linked = isLinked(this.#auth?.creds);
    this.#log.info({ code, message, linked }, 'socket closed');
    this.#sock = undefined;
    this.#ingest.dropHistoryHolds();
    this.#acks.settleAll('closed');
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

  /** Context for the message model: own identity and LID → PN lookups (session-contacts.ts). */
  modelContext(): ModelContext {
    return this.#contacts.modelContext();
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

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
