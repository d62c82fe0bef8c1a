/**
 * A session's socket lifecycle (part of `Session`, session.ts): it makes the Baileys socket, runs the status state
 * machine and the reconnect policy, and closes the connection when a commit fails.
 *
 * Status (docs/architecture.md § Connection status): starting → scan_qr → connected (linked; initial sync running) →
 * online (ready); reconnecting (transient loss, backoff), logged_out (401/411: auth wiped, data kept), failed (403,
 * 440, QR never scanned). Every change is one `session.status` event `{ status, previous, reason }`. A linked socket
 * goes `online` once it is open, the server's offline-delivered marker (`<ib><offline/>`) came (or ONLINE_FALLBACK_MS
 * passed) and, for a fresh link, the initial history sync is done (or HISTORY_WAIT_MS passed).
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
 * message is committed. Documented in the README. A failed commit (db/store.ts `onCommitFailure`) drops the held
 * frames and closes the socket without acknowledging; the session reconnects once storage works again.
 *
 * Linking: a new socket shows QR codes (`scan_qr`); instead of a scan, a phone code can be asked for
 * (`requestPairingCode`, pairing.ts), announced again on each new socket of the pairing. Linked means `creds.account`
 * is set (`isLinked`), not `creds.me` alone.
 *
 * What the other parts of the session do with a socket is theirs: the lifecycle calls its `LifecycleHooks` when a
 * socket is made, opens, emits events and goes away.
 */
import type { Boom } from '@hapi/boom';
import makeWASocket, {
  Browsers,
  DEFAULT_CONNECTION_CONFIG,
  DisconnectReason,
  jidDecode,
  jidNormalizedUser,
  proto,
  type BaileysEventMap,
  type GroupMetadata,
  type WASocket,
} from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { ConnectionRow, ConnectionStatus } from '../db/connections.ts';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';
import { loadAuthState, type SqliteAuthState } from './auth-state.ts';
import { baileysLogger } from './baileys-logger.ts';
import { sendFramesAfterCommit, type FrameGate } from './commit-before-receipt.ts';
import { DecryptReplay } from './decrypt-replay.ts';
import type { SandboxTrust } from './sandbox-trust.ts';
import { forgetUnfinishedPairing, isLinked, linkedMe, PhoneCodePairing } from './pairing.ts';
import type { OwnIdentity } from './session-contacts.ts';

const MAX_QR_CYCLES = 5;
const MAX_BACKOFF_MS = 60_000;
/** The longest a decrypt holds the session's frames and key writes waiting for its message's upsert. */
const DECRYPT_HOLD_MAX_MS = 2_000;
/**
 * How long a new socket may take to reach the QR or the logged-in state (Baileys' default connectTimeoutMs).
 * The session enforces it itself and gives Baileys connectTimeoutMs 0: rc14 otherwise wraps every frame it sends
 * in a 20 s timeout that captures two stack traces and builds a Boom per frame (lib/Utils/generics.js
 * promiseTimeout), a measurable share of the per-message CPU, and our frame hook (commit-before-receipt.ts)
 * acknowledges every write at once, so that timeout could never fire anyway.
 */
export const CONNECT_TIMEOUT_MS = 20_000;
/** How long a freshly linked session waits for its initial history sync before it reports `online` anyway. */
export const HISTORY_WAIT_MS = 15_000;

/** The status reason while the store cannot commit (the disk is full or failing). */
export const STORAGE_UNAVAILABLE = 'storage unavailable';
/** Waits between storage checks after a failed commit, in ms (the last repeats). */
const STORAGE_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

/** Default of LifecycleOptions.onlineFallbackMs (issue #13 item 7). */
export const ONLINE_FALLBACK_MS = 20_000;

/** How a session connects (a part of `SessionDeps`, session.ts). */
export interface LifecycleOptions {
  store: Store;
  /** The event log every change of the session is appended to (events/log.ts). */
  events: EventLog;
  logger: Logger;
  waUrl?: string;
  /** Level for Baileys' own logger (it is chatty; default `warn`). */
  baileysLogLevel: string;
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
}

/** What the rest of the session does with the lifecycle's sockets (session.ts wires them). */
export interface LifecycleHooks {
  /** A new socket exists, before its first event (its frame gate is set up): listen to its frames here. */
  attached(sock: WASocket): void;
  /** A batch of Baileys events of the current socket (the session dispatches them, the lifecycle's own included). */
  events(sock: WASocket, events: Partial<BaileysEventMap>): void;
  /** The socket logged in (`connection: 'open'`). */
  opened(sock: WASocket): void;
  /** The current socket is gone (closed, stopped, or dropped after a failed commit); `release`: let held frames leave (logout). */
  detached(release: boolean): void;
  /** The auth state was wiped (logout): what belonged to the account goes too (the next one linked here differs). */
  unlinked(): void;
  /** Group metadata for Baileys' `cachedGroupMetadata`. */
  cachedGroupMetadata(jid: string): GroupMetadata | undefined;
}

export class SessionLifecycle {
  readonly connectionId: string;
  readonly userId: string;

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
  /** Plaintexts of recent decrypts, kept across sockets for a redelivery the last socket left unstored. */
  readonly #decryptReplay = new DecryptReplay({
    decrypting: () => this.#holdForDecrypt(),
    decrypted: () => void (this.#decryptHold && (this.#decryptHold.decrypted = true)),
    // Nothing moved (the keys of a failed decrypt are not written): ends the hold unless an earlier decrypt under it
    // (the pkmsg before a group's skmsg) succeeded, whose message is still to be handed over.
    failed: () => void (this.#decryptHold?.decrypted || this.releaseDecryptHold()),
  });
  /** The hold a decrypt took (`#holdForDecrypt`): how to end it, and whether a decrypt under it succeeded. */
  #decryptHold: { release(): void; decrypted: boolean } | undefined;
  /** Goes online without the offline-delivered marker (see LifecycleOptions.onlineFallbackMs). */
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
  /** The current socket's frame gate (commit-before-receipt.ts). */
  #gate: FrameGate | undefined;
  readonly #log: Logger;
  readonly #hooks: LifecycleHooks;
  /** Linking by phone code instead of a QR scan (pairing.ts). */
  readonly #phoneCode: PhoneCodePairing;

  constructor(
    connection: ConnectionRow,
    private readonly d: LifecycleOptions,
    log: Logger,
    hooks: LifecycleHooks,
  ) {
    this.connectionId = connection.id;
    this.userId = connection.userId;
    this.#status = connection.status;
    this.#log = log;
    this.#hooks = hooks;
    this.#phoneCode = new PhoneCodePairing(log);
    this.#opened = this.#newOpened();
  }

  /** The current socket, whatever the status (undefined between sockets). */
  get current(): WASocket | undefined {
    return this.#sock;
  }

  /** The current socket's frame gate (commit-before-receipt.ts); undefined before the first socket. */
  get gate(): FrameGate | undefined {
    return this.#gate;
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

  /** Whether the session shows QR codes and waits to be linked (status `scan_qr` with a socket). */
  get awaitingLink(): boolean {
    return this.#status === 'scan_qr' && this.#sock !== undefined;
  }

  /**
   * Asks for a phone code to link with instead of the QR (pairing.ts `PhoneCodePairing.request`); `digits`: E.164
   * without `+`. @returns the code as shown, `ABCD-EFGH`. @throws Error when not `awaitingLink`, or what Baileys'
   * send throws (the socket closed meanwhile).
   */
  async requestPairingCode(digits: string): Promise<string> {
    const sock = this.#status === 'scan_qr' ? this.#sock : undefined;
    if (!sock) throw new Error('connection is not waiting to be linked');
    return this.#phoneCode.request(sock, digits);
  }

  /** The live socket of an open session; undefined otherwise. */
  get socket(): WASocket | undefined {
    return this.#status === 'online' || this.#status === 'connected' ? this.#sock : undefined;
  }

  /** Own identity from the live creds (sock.user is a stale snapshot in rc14, brief A9). */
  get me(): OwnIdentity | undefined {
    const me = linkedMe(this.#auth?.creds);
    if (!me?.id) return undefined;
    return { jid: jidNormalizedUser(me.id), lid: me.lid ? jidNormalizedUser(me.lid) : null, name: me.name ?? '' };
  }

  /** Resolves once the session is `online` (used by tests and callers that must wait). */
  whenOnline(): Promise<void> {
    return this.#opened;
  }

  /** Announces `starting` and opens the first socket; a failed commit from now on closes it (`#onCommitFailure`). */
  start(): void {
    this.#stopped = false;
    this.#unsubscribeCommitFailure ??= this.d.store.onCommitFailure((err) => this.#onCommitFailure(err));
    const linked = isLinked(loadAuthState(this.d.store.authState, this.connectionId).creds);
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
    this.#hooks.detached(!!opts.logout);
    if (sock) {
      if (opts.logout && isLinked(this.#auth?.creds)) {
        await Promise.race([sock.logout().catch(() => undefined), delay(3000)]);
      }
      sock.end(undefined);
    }
    if (opts.logout) this.#clearAuthState();
    if (opts.status) this.#setStatus(opts.status, opts.reason ?? null);
  }

  // ---- sockets -----------------------------------------------------------------------------------------

  #newOpened(): Promise<void> {
    return new Promise((resolve) => (this.#resolveOpened = resolve));
  }

  /** Forgets the auth state, after writing what the last socket left for the open batch (it must not come back). */
  #clearAuthState(): void {
    this.d.store.commitPending();
    this.d.store.authState.clear(this.connectionId);
    this.#hooks.unlinked();
  }

  #connect(): void {
    const { store, logger, waUrl, baileysLogLevel } = this.d;
    // Key writes the previous socket left for the open batch must be in the table before the new state loads.
    store.commitPending();
    // Signal key writes join the group commit, coalesced: written once, right before the batch that holds the
    // messages they decrypted commits; frames (the receipts) leave only after that commit.
    // …and wait while the socket's frame gate holds a history chunk (commit-before-receipt.ts).
    const auth = loadAuthState(store.authState, this.connectionId, {
      deferWrites: (flush) => store.beforeCommit(flush),
      holdWrites: () => this.#gate?.holding() ?? false,
    });
    if (forgetUnfinishedPairing(auth.creds)) auth.saveCreds(); // a phone code asked for on an earlier socket (pairing.ts)
    this.#auth = auth;
    this.#pendingDone = false;
    this.#socketOpen = false;
    this.#qrShown = false;
    // Wait for the initial history sync only while none was received yet. Baileys counts accountSyncCounter only
    // once the app-state sync after the history completes, so a socket lost in between (a drop seconds after
    // pairing) would otherwise wait for a history the server does not send twice, on every reconnect;
    // processedHistoryMessages is written as soon as the history notification is processed (process-message.ts).
    this.#awaitingHistory = !!auth.creds.me && !auth.creds.accountSyncCounter && !auth.creds.processedHistoryMessages?.length;
    // Baileys' 515 restart report is lowered from error to info (baileys-logger.ts).
    const baileysLog = baileysLogger(logger.child({ connectionId: this.connectionId, component: 'baileys' }, { level: baileysLogLevel }));
    const sock = makeWASocket({
      auth: { creds: auth.creds, keys: auth.keys }, // auth.keys caches decoded keys itself (auth-state.ts)
      // a message decrypted while the socket closed, and so never upserted, decrypts again when redelivered
      makeSignalRepository: this.#decryptReplay.wrap(DEFAULT_CONNECTION_CONFIG.makeSignalRepository),
      logger: baileysLog,
      ...(waUrl ? { waWebSocketUrl: waUrl } : {}),
      ...(this.d.sandboxTrust && {
        fetchAgent: this.d.sandboxTrust.fetchAgent,
        options: { dispatcher: this.d.sandboxTrust.dispatcher } as unknown as RequestInit,
      }),
      browser: Browsers.macOS('Chrome'),
      connectTimeoutMs: 0, // enforced by #connectTimer instead (see CONNECT_TIMEOUT_MS)
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldSyncHistoryMessage: () => true,
      generateHighQualityLinkPreview: false,
      cachedGroupMetadata: async (jid) => this.#hooks.cachedGroupMetadata(jid),
      getMessage: async (key) => {
        const raw = key.id ? store.messages.findRawByKeyId(this.connectionId, key.id) : undefined;
        return raw ? (proto.WebMessageInfo.decode(raw).message ?? undefined) : undefined;
      },
    });
    this.#sock = sock;
    this.#phoneCode.attach(sock, auth.creds);
    clearTimeout(this.#connectTimer);
    const connectTimeoutMs = this.d.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.#connectTimer = setTimeout(() => {
      if (this.#sock !== sock) return;
      this.#log.warn({ ms: connectTimeoutMs }, 'connection attempt timed out');
      // The shape Baileys' own timeout had (a Boom with statusCode 408), which #onClose reads.
      const timedOut = Object.assign(new Error('Timed Out'), { output: { statusCode: DisconnectReason.timedOut } });
      void sock.end(timedOut);
    }, connectTimeoutMs);
    disableEventBuffer(sock);
    this.releaseDecryptHold(); // the previous socket's gate
    this.#gate = sendFramesAfterCommit(sock, (send) => this.d.store.whenDurable(send), { onRelease: () => auth.writeHeldKeys() });
    this.#hooks.attached(sock);
    sock.ev.process(async (events) => {
      if (this.#sock !== sock) return; // a stale socket's late events
      this.#hooks.events(sock, events);
    });
  }

  /**
   * A ciphertext is being decrypted: its Signal key update must not commit before the message is in the store.
   * rc14's `handleMessage` (lib/Socket/messages-recv.js) decrypts, sends the receipt, then upserts; between the two a
   * write of another event (an ack's `store.tx`) can commit the open batch, and with it the key writes recorded so
   * far. Killed right then, the session would come back with the chain advanced past a message it never stored:
   * the server's redelivery fails with "Key used already" (acknowledged as a duplicate) and the message is lost.
   * So the frame gate holds (frames and key writes, as for a history chunk) from before the decrypt until the upsert is
   * handed to the store (`releaseDecryptHold`, called by the session after its `messages.upsert` handler): the key
   * writes then join the batch that holds the message. Decrypt and upsert run under one mutex in rc14 (with the
   * upserts of our own sends), so one hold covers one message at a time; a decrypt whose upsert never comes (the
   * socket closed in between) is released after DECRYPT_HOLD_MAX_MS.
   */
  #holdForDecrypt(): void {
    if (this.#decryptHold || !this.#gate) return;
    const release = this.#gate.hold();
    const timer = setTimeout(() => {
      // Its message never reached the store (a socket closed in between), or took longer than this: its receipt may
      // leave before it is stored (docs/durability.md, the open loss under kill -9).
      this.#log.warn({ decrypted: this.#decryptHold?.decrypted ?? false }, `decrypt hold ended by its ${DECRYPT_HOLD_MAX_MS} ms fallback`);
      this.releaseDecryptHold();
    }, DECRYPT_HOLD_MAX_MS);
    this.#decryptHold = {
      decrypted: false,
      release() {
        clearTimeout(timer);
        release();
      },
    };
  }

  /** Ends the hold of `#holdForDecrypt` (the decrypted message was handed to the store); idempotent. */
  releaseDecryptHold(): void {
    const hold = this.#decryptHold;
    this.#decryptHold = undefined;
    hold?.release();
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
   * (the disk is full): the status still changes in memory, and the API shows it from there. `account`: the linked
   * account, written in the same transaction, so no read sees a linked status without its phone number.
   */
  #setStatus(status: ConnectionStatus, reason: string | null, opts: { announce?: boolean; account?: OwnIdentity } = {}): boolean {
    const current = this.#status;
    // Same status: recorded again only when announced, or when storage becomes (un)available (the reason matters then).
    const storageReasonChanges = this.#statusReason !== reason && (reason === STORAGE_UNAVAILABLE || this.#statusReason === STORAGE_UNAVAILABLE);
    if (current === status && !opts.announce && !storageReasonChanges) {
      if (opts.account) this.d.store.connections.setAccount(this.connectionId, this.#accountOf(opts.account));
      return true;
    }
    const previous = current === status ? null : current;
    this.#status = status;
    this.#statusReason = reason;
    const { store } = this.d;
    let stored = true;
    try {
      store.tx(() => {
        if (opts.account) store.connections.setAccount(this.connectionId, this.#accountOf(opts.account));
        store.connections.setStatus(this.connectionId, status, reason);
        this.d.events.append(this.userId, this.connectionId, 'session.status', { status, previous, reason });
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
    const dropped = this.#dropHeld();
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
    this.#hooks.detached(false);
    if (sock) endQuietly(sock);
    this.#setStatus('reconnecting', STORAGE_UNAVAILABLE);
    if (firstOfEpisode) this.#scheduleStorageCheck();
  }

  /**
   * Storing the socket's events failed for a reason other than the disk, which `#onCommitFailure` handles (a write
   * that did not get the database's lock in time, a bug): a message decrypted on the way may be unstored while its
   * receipt waits in the frame gate. Nothing held may leave — the server keeps what was not receipted and redelivers
   * it to the next socket — so the held frames are dropped for good and the socket is ended; its close reconnects
   * with the usual backoff (`#onClose`). A socket already replaced (a commit failure ended it) is left alone.
   */
  eventsFailed(sock: WASocket, err: unknown): void {
    if (this.#sock !== sock || this.#stopped) return;
    const dropped = this.#dropHeld();
    this.#log.error(
      { err, droppedFrames: dropped },
      'failed to store session events: the connection is closed without acknowledging them, and reconnects for their redelivery',
    );
    endQuietly(sock, new Error('session events could not be stored'));
  }

  /**
   * Drops what the socket's gate holds (frames, and key writes for good) and ends the decrypt hold without its
   * fallback firing later; returns how many frames were dropped. For a socket about to be ended unacknowledged.
   */
  #dropHeld(): number {
    const dropped = this.#gate?.discard() ?? 0;
    this.releaseDecryptHold(); // the discarded gate lets nothing go on its release
    return dropped;
  }

  #scheduleStorageCheck(): void {
    const retry = this.#storageRetry;
    if (!retry || this.#stopped) return;
    const wait = STORAGE_RETRY_MS[Math.min(retry.attempt, STORAGE_RETRY_MS.length - 1)]!;
    retry.attempt++;
    clearTimeout(retry.timer);
    retry.timer = setTimeout(() => {
      if (this.#stopped || this.#storageRetry !== retry) return;
      const room = this.d.storageHasRoom?.() ?? true;
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

  // ---- Baileys events (the session dispatches them here) ------------------------------------------------

  /** `creds.update`: saves the creds; a changed own pushName updates the connection's account. */
  onCreds(update: BaileysEventMap['creds.update']): void {
    this.#auth?.saveCreds();
    if (update.me?.name !== undefined) {
      const me = this.me;
      if (me) this.d.store.connections.setAccount(this.connectionId, this.#accountOf(me));
    }
  }

  /** The connection's account fields (connections.setAccount) of an own identity. */
  #accountOf(me: OwnIdentity) {
    const user = jidDecode(me.jid)?.user ?? '';
    return { phoneNumber: user ? `+${user}` : null, jid: me.jid, lid: me.lid, pushName: me.name || null };
  }

  /** `connection.update`: QR, pairing, open, the offline-delivered marker and close drive the status. */
  onConnection(sock: WASocket, u: BaileysEventMap['connection.update']): void {
    if (u.qr || u.connection === 'open' || u.connection === 'close') clearTimeout(this.#connectTimer);
    if (u.qr) {
      this.#qr = u.qr;
      this.#qrShown = true;
      this.#setStatus('scan_qr', null);
    }
    if (u.isNewLogin) {
      this.#qrCycles = 0;
      this.#awaitingHistory = true;
      // pair-success stored the account in the creds (creds.update came first): linked, with its number, at once.
      const me = this.me;
      this.#setStatus('connected', 'paired', me && { account: me });
    }
    if (u.connection === 'open') {
      this.#socketOpen = true;
      this.#attempt = 0;
      this.#qrCycles = 0;
      const me = this.me;
      this.#setStatus('connected', null, me && { account: me });
      this.#hooks.opened(sock);
      if (this.#awaitingHistory) {
        this.#historyTimer = setTimeout(() => this.historyDone(), HISTORY_WAIT_MS);
      }
      clearTimeout(this.#onlineFallbackTimer);
      if (!this.#pendingDone) {
        this.#onlineFallbackTimer = setTimeout(() => {
          if (this.#sock !== sock || this.#pendingDone) return;
          this.#log.warn({ waitedMs: this.d.onlineFallbackMs ?? ONLINE_FALLBACK_MS }, 'no offline-delivered marker from the server; going online without it');
          this.#pendingDone = true;
          this.#maybeOnline();
        }, this.d.onlineFallbackMs ?? ONLINE_FALLBACK_MS);
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
    this.#hooks.detached(false);
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

  /** The initial history sync is complete (or no longer awaited): the session may go `online`. */
  historyDone(): void {
    if (!this.#awaitingHistory) return;
    this.#awaitingHistory = false;
    this.#maybeOnline();
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
/** Ends `sock` (with `err` as its close reason), ignoring a socket that is already closing. */
function endQuietly(sock: WASocket, err?: Error): void {
  try {
    void Promise.resolve(sock.end(err)).catch(() => undefined);
  } catch {
    // already closing
  }
}

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
