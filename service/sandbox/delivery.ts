/**
 * Delivery to companions: the registry of logged-in companions and the per-companion pump that turns
 * durable outbox rows into `<message>` stanzas (brief §B5, §B8, pitfalls D17/D18).
 *
 * Owns:
 * - which connection currently speaks for `(account, device)` (a newer login replaces the older one
 *   with `<conflict type="replaced"/>`);
 * - the login tail: first login waits for the prekey upload, then queues the phone's app-state key share and the
 *   inline history sync;
 *   re-logins flush the queue with `offline="1"` before `<ib><offline count/>`;
 * - sealing: a phone's message is encrypted for each companion once — at send ({@link Delivery.seal}), or at the
 *   first delivery of a row queued without it (history, key shares, rows of an older sandbox) — and the ciphertext
 *   is stored on the outbox row with the session state that made it; every redelivery sends those bytes, as
 *   WhatsApp's server stores and redelivers the sender's ciphertext (a stanza the client read but did not
 *   acknowledge before a crash decrypts after its restart, instead of arriving encrypted again further along the
 *   chain);
 * - the pump: rows go out in queue order (so the companion meets a session's chain in order), at most
 *   {@link DELIVERY_WINDOW} unanswered at a time (the server's flow control: a client handles offline stanzas in a
 *   queue of their own, which live ones would otherwise overtake by thousands), the session state is committed
 *   *before* any ciphertext made from it is written, and a row is deleted only when the client's `<receipt>` (or a
 *   terminal `<ack error>`) for it arrives — a crash means redelivery, never loss; a returning companion's
 *   `<ib><offline count>` follows once every row queued at its login was sent;
 * - retry receipts: the phone (the sender) re-encrypts — with a new session when the receipt carries `<keys>` or its
 *   registration id is not the session's — and the server queues that new ciphertext at the end of the companion's
 *   queue in place of the old; prekey-low notifications, device-list change notifications and unlinking companions.
 */
import {
  decodeBinaryNode,
  generateMessageIDV2,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  proto,
  writeRandomPadMax16,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import { buildHistorySyncMessages } from './history.ts';
import { unixNow, type SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow, DeviceRow, NewOutbox, OutboxRow } from './store.ts';
import { companionAddress, type EncType } from './signal-device.ts';
import { lidJid, pnJid } from './phone-number.ts';
import { randomBytes } from 'node:crypto';

/** Outbox attribute (never sent) marking a message whose first delivery is undecryptable on purpose. */
export const GARBLE_ATTR = 'sandbox:garble';

/** Outbox attribute of a phone's group row: `'1'` = deliver only the skmsg (the device has the sender key). */
export const SKIP_PAIRWISE_ATTR = 'x-skip-pairwise';

/** A phone's message encrypted for one companion: the `<enc>` type and bytes, made once and stored on its row. */
export interface Sealed {
  encType: EncType;
  ciphertext: Buffer;
}

const PUMP_BATCH = 64;
/**
 * Most stanzas a companion may have been sent and not yet answered (receipt or ack): the server's flow control. A
 * client reads its queue in order but handles `offline` stanzas in a queue of their own, behind which newer ones
 * (live) are handled at once (Baileys' offline-node processor); without a bound a live message could overtake
 * thousands of queued ones from the same sender and meet its Signal chain more than 2,000 messages ahead
 * (libsignal's limit). Baileys asks for offline batches of 100 (`<ib><offline_batch count="100"/>`).
 */
const DELIVERY_WINDOW = 500;
/** An unanswered stanza stops holding a place in the window after this long (a client that never answers it). */
const UNANSWERED_MS = 30_000;
const MAX_ATTEMPTS = 5;
/** Baileys uploads more prekeys when a notification reports fewer than this (`MIN_PREKEY_COUNT`). */
const PREKEY_LOW = 5;

interface Link {
  conn: ClientConnection;
  pn: string;
  deviceId: number;
  /** Highest outbox seq already sent on this connection. */
  cursor: number;
  /** Rows with seq ≤ this existed at login and are sent with `offline="1"`. */
  offlineUpTo: number;
  offlineSent: number;
  /** `<ib><offline count>` is owed once every row ≤ offlineUpTo was sent (a returning companion's login). */
  markerDue: boolean;
  /** Stanzas sent on this connection and not answered yet: message id → when sent (ms). */
  inFlight: Map<string, number>;
  /** Set while the window is full: pumps again when unanswered stanzas stop counting. */
  stallTimer: NodeJS.Timeout | undefined;
  /** The companion's bundle is known (uploaded), so the phones can encrypt to it. */
  ready: boolean;
  pumping: Promise<void> | undefined;
  again: boolean;
  preKeyLowNotified: boolean;
}

const linkKey = (pn: string, deviceId: number): string => `${pn}:${deviceId}`;

export class Delivery {
  private readonly links = new Map<string, Link>();

  constructor(private readonly ctx: SandboxContext) {}

  /** Register a freshly logged-in companion; an older connection of the same device is replaced (440). */
  attach(conn: ClientConnection): void {
    if (conn.pn === undefined || conn.deviceId === undefined) return;
    const key = linkKey(conn.pn, conn.deviceId);
    const old = this.links.get(key);
    this.links.set(key, {
      conn,
      pn: conn.pn,
      deviceId: conn.deviceId,
      cursor: 0,
      offlineUpTo: 0,
      offlineSent: 0,
      markerDue: false,
      inFlight: new Map(),
      stallTimer: undefined,
      ready: false,
      pumping: undefined,
      again: false,
      preKeyLowNotified: false,
    });
    if (old && old.conn !== conn) {
      old.conn.log.info('connection replaced by a newer login');
      old.conn.replaced();
    }
  }

  /** Forget a closed connection (if it is still the registered one). */
  detach(conn: ClientConnection): void {
    if (conn.pn === undefined || conn.deviceId === undefined) return;
    const key = linkKey(conn.pn, conn.deviceId);
    const link = this.links.get(key);
    if (link?.conn !== conn) return;
    clearTimeout(link.stallTimer);
    this.links.delete(key);
  }

  /** Whether a companion is connected and logged in. */
  isOnline(pn: string, deviceId: number): boolean {
    return this.links.get(linkKey(pn, deviceId))?.conn.isOnline ?? false;
  }

  /** Number of logged-in companions. */
  get onlineCount(): number {
    return this.links.size;
  }

  /**
   * After `<success>`: a returning companion gets its queue (`offline="1"`, paced by the delivery window) then
   * `<ib><offline count=N/>` once all of it was sent;
   * a first login (or one whose history sync is still undelivered) gets `<ib><offline count="0"/>` first,
   * so the client is in `AwaitingInitialSync` when the history arrives (otherwise it skips the app-state
   * sync and then waits 20 s for a history that already came).
   */
  async onLogin(conn: ClientConnection, device: DeviceRow): Promise<void> {
    const link = this.link(conn);
    if (!link) return;
    const historyPending = !device.historySent || this.ctx.store.hasOutboxKind(device.pn, device.deviceId, 'history');
    if (!device.bundleUploaded || historyPending) {
      this.sendOfflineMarker(conn, 0);
      if (device.bundleUploaded) await this.onBundleUploaded(conn);
      return;
    }
    const account = this.ctx.accounts.get(link.pn);
    if (account && !this.ctx.appState.sharedWith(link.pn, link.deviceId)) {
      // linked before the sandbox shared app-state keys: the phone sends its key now
      this.ctx.store.transaction(() => this.ctx.store.insertOutboxNow([this.keyShareRow(account, link.deviceId)]));
    }
    link.ready = true;
    link.offlineUpTo = this.ctx.store.maxOutboxSeq();
    link.markerDue = true;
    await this.pump(link);
  }

  /** Fault injection (admin `PUT /faults/offline-marker`): logins get no offline-delivered marker while set. */
  withholdOfflineMarker = false;

  private sendOfflineMarker(conn: ClientConnection, count: number): void {
    if (this.withholdOfflineMarker) {
      conn.log.info('offline-delivered marker withheld (fault injection)');
      return;
    }
    conn.send({
      tag: 'ib',
      attrs: { from: '@s.whatsapp.net' },
      content: [{ tag: 'offline', attrs: { count: String(count) } }],
    });
  }

  /**
   * The companion uploaded its prekeys (`iq set encrypt`). On the first upload the account's phone queues
   * the inline history sync (snapshot + "history sent" flag in one synchronous transaction, so every later
   * message is queued instead), then delivery starts.
   */
  async onBundleUploaded(conn: ClientConnection): Promise<void> {
    const link = this.link(conn);
    if (!link) return;
    link.preKeyLowNotified = false;
    const { store, accounts } = this.ctx;
    const device = store.getDevice(link.pn, link.deviceId);
    const account = accounts.get(link.pn);
    if (!device || !account) return;
    if (!device.historySent) {
      store.transaction(() => {
        const messages = buildHistorySyncMessages(store, accounts, account, this.ctx.history);
        const t = unixNow();
        // the app-state key first (as a phone shares it right after linking), then the history
        if (!this.ctx.appState.sharedWith(link.pn, link.deviceId)) store.insertOutboxNow([this.keyShareRow(account, link.deviceId)]);
        store.insertOutboxNow(
          messages.map((message) => ({
            pn: link.pn,
            deviceId: link.deviceId,
            msgId: generateMessageIDV2(pnJid(account.pn)),
            kind: 'history' as const,
            senderPn: account.pn,
            attrs: {
              from: pnJid(account.pn),
              type: 'text',
              category: 'peer',
              notify: account.pushName,
              sender_lid: lidJid(account.lid),
              t,
            },
            plaintext: Buffer.from(proto.Message.encode(message).finish()),
            encType: null,
            ciphertext: null,
          })),
        );
        store.markHistorySent(link.pn, link.deviceId);
      });
      conn.log.info('queued initial history sync');
    }
    link.ready = true;
    await this.pump(link);
  }

  /**
   * The phone's APP_STATE_SYNC_KEY_SHARE for one of its companions, as an outbox row (app-state.ts); marks the key
   * shared, so call it inside the transaction that inserts the row.
   */
  private keyShareRow(account: AccountRow, deviceId: number): NewOutbox {
    const message = this.ctx.appState.shareFor(account.pn, deviceId);
    return {
      pn: account.pn,
      deviceId,
      msgId: generateMessageIDV2(pnJid(account.pn)),
      kind: 'message',
      senderPn: account.pn,
      attrs: { from: pnJid(account.pn), type: 'text', category: 'peer', notify: account.pushName, sender_lid: lidJid(account.lid), t: unixNow() },
      plaintext: Buffer.from(proto.Message.encode(message).finish()),
      encType: null,
      ciphertext: null,
    };
  }

  /** New rows were committed for a companion: deliver them if it is online. */
  kick(pn: string, deviceId: number): void {
    const link = this.links.get(linkKey(pn, deviceId));
    if (link?.ready) void this.pump(link);
  }

  private link(conn: ClientConnection): Link | undefined {
    if (conn.pn === undefined || conn.deviceId === undefined) return undefined;
    const link = this.links.get(linkKey(conn.pn, conn.deviceId));
    return link?.conn === conn ? link : undefined;
  }

  /** Drain the companion's outbox; concurrent kicks coalesce into one more pass. Never rejects. */
  private pump(link: Link): Promise<void> {
    if (link.pumping) {
      link.again = true;
      return link.pumping;
    }
    link.pumping = (async () => {
      try {
        do {
          link.again = false;
          const drained = await this.pumpOnce(link);
          if (link.markerDue && (drained || link.cursor >= link.offlineUpTo) && link.conn.isOnline) {
            link.markerDue = false;
            this.sendOfflineMarker(link.conn, link.offlineSent);
          }
        } while (link.again && link.conn.isOnline);
      } catch (err) {
        // after a disconnect/shutdown this is expected (rows stay queued); otherwise it is a real fault
        if (link.conn.isOnline) link.conn.log.error({ err }, 'delivery pump failed');
        else link.conn.log.debug({ err }, 'delivery pump stopped');
      } finally {
        link.pumping = undefined;
      }
    })();
    return link.pumping;
  }

  /**
   * Send queued rows after the cursor, in order, while the delivery window has room.
   * @returns true when nothing after the cursor was left (false: the window is full, or the connection is gone).
   */
  private async pumpOnce(link: Link): Promise<boolean> {
    const { store } = this.ctx;
    for (;;) {
      if (!link.conn.isOnline) return false;
      const room = this.windowRoom(link);
      if (room <= 0) return false;
      const limit = Math.min(PUMP_BATCH, room);
      const rows = store.listOutbox(link.pn, link.deviceId, link.cursor, limit);
      if (!rows.length) return true;
      const device = store.getDevice(link.pn, link.deviceId);
      if (!device) return false;
      const stanzas: BinaryNode[] = [];
      for (const row of rows) {
        link.cursor = row.seq;
        const offline = row.seq <= link.offlineUpTo;
        const stanza = await this.buildStanza(link, device, row, offline);
        if (!stanza) continue;
        stanzas.push(stanza);
        if (offline) link.offlineSent++;
      }
      // the phones' session state must be durable before any ciphertext derived from it leaves
      await store.commit();
      if (!link.conn.isOnline) return false;
      const now = Date.now();
      for (const s of stanzas) {
        link.conn.send(s);
        link.inFlight.set(s.attrs.id!, now);
      }
      link.conn.log.debug({ count: stanzas.length }, 'delivered queued stanzas');
      // A short batch drained the outbox; rows committed since then kicked `again` (see pump).
      if (rows.length < limit) return true;
    }
  }

  /**
   * Free places in a companion's delivery window. When it is full, stanzas unanswered for {@link UNANSWERED_MS}
   * stop counting, and a timer pumps again once the oldest would.
   */
  private windowRoom(link: Link): number {
    if (link.inFlight.size < DELIVERY_WINDOW) return DELIVERY_WINDOW - link.inFlight.size;
    const now = Date.now();
    let oldest = now;
    for (const [id, sentAt] of link.inFlight) {
      if (now - sentAt >= UNANSWERED_MS) link.inFlight.delete(id);
      else oldest = Math.min(oldest, sentAt);
    }
    const room = DELIVERY_WINDOW - link.inFlight.size;
    if (room <= 0 && !link.stallTimer) {
      link.stallTimer = setTimeout(() => {
        link.stallTimer = undefined;
        void this.pump(link);
      }, oldest + UNANSWERED_MS - now + 10);
      link.stallTimer.unref();
    }
    return room;
  }

  /**
   * The companion answered stanzas (receipt or ack): their places in the window are free again. The pump is woken
   * once a batch fits (rows queued meanwhile woke it already when there was room).
   */
  private answered(link: Link, ids: string[]): void {
    let freed = false;
    for (const id of ids) freed = link.inFlight.delete(id) || freed;
    if (freed && link.ready && link.inFlight.size <= DELIVERY_WINDOW - PUMP_BATCH) void this.pump(link);
  }

  /**
   * Encrypt a phone's message for one of its recipient's companions, once: the caller stores the result on the
   * outbox row (in the transaction that commits the session state it came from), and every delivery of the row
   * sends it as it is. `garble` (admin `undecryptable: true`) seals random bytes instead; the companion's retry
   * receipt then gets the real message. Session updates are queued (durable with the next `store.commit()`).
   * @param plaintext the encoded `proto.Message`, unpadded.
   * @returns undefined when the phone cannot encrypt to the device (logged); the row is then sealed at its first
   *   delivery, or dropped there.
   */
  async seal(senderPn: string, device: DeviceRow, plaintext: Buffer, garble = false): Promise<Sealed | undefined> {
    if (garble) return { encType: 'msg', ciphertext: randomBytes(64) };
    const companionLid = this.ctx.accounts.get(device.pn)?.lid;
    if (!companionLid) return undefined;
    try {
      const { type, ciphertext } = await this.ctx.phones.encryptToCompanion(
        senderPn,
        device,
        companionLid,
        writeRandomPadMax16(plaintext),
      );
      return { encType: type, ciphertext };
    } catch (err) {
      this.ctx.logger.warn({ err, pn: device.pn, deviceId: device.deviceId }, 'phone could not encrypt to a companion');
      return undefined;
    }
  }

  /**
   * One outbox row as its `<message>` (or `<notification>`) stanza: the stored ciphertext as it is; a phone's row
   * queued without one is sealed now and the result stored on the row (durable with the pump's commit, before the
   * stanza leaves). Undeliverable rows are dropped (logged).
   */
  private async buildStanza(link: Link, device: DeviceRow, row: OutboxRow, offline: boolean): Promise<BinaryNode | undefined> {
    const { store } = this.ctx;
    if (row.kind === 'notification') {
      try {
        const attrs: Record<string, string> = { ...row.attrs, id: row.msgId, ...(offline ? { offline: '1' } : {}) };
        return { tag: 'notification', attrs, content: row.plaintext ? [await decodeBinaryNode(row.plaintext)] : [] };
      } catch (err) {
        link.conn.log.error({ err, id: row.msgId }, 'undecodable queued notification; dropping it');
        store.deleteOutbox(link.pn, link.deviceId, [row.msgId]);
        return undefined;
      }
    }
    // a group row's 1:1 part (the SKDM) is left out when the device already has the key (a retry's row has it)
    const skipPairwise = row.attrs[SKIP_PAIRWISE_ATTR] === '1';
    const parts: Array<{ type: string; ciphertext: Buffer }> = [];
    try {
      if (row.ciphertext && row.encType) {
        parts.push({ type: row.encType, ciphertext: row.ciphertext });
      } else if (row.plaintext && row.senderPn && !skipPairwise) {
        // Fault injection (admin `undecryptable: true`) seals random bytes: the companion's retry receipt gets the
        // real message (onRetry), as when a phone's session was out of step.
        const sealed = await this.seal(row.senderPn, device, row.plaintext, row.attrs[GARBLE_ATTR] === '1');
        if (!sealed) throw new Error('the phone cannot encrypt to this device');
        store.setOutboxCiphertext(row.seq, sealed.encType, sealed.ciphertext);
        parts.push({ type: sealed.encType, ciphertext: sealed.ciphertext });
      }
      // the skmsg comes after the SKDM: the client processes <enc> nodes in order
      if (row.skCiphertext) parts.push({ type: 'skmsg', ciphertext: row.skCiphertext });
      if (!parts.length) throw new Error('outbox row has neither plaintext nor ciphertext');
    } catch (err) {
      link.conn.log.error({ err, msgId: row.msgId }, 'cannot encrypt queued message; dropping it');
      store.deleteOutbox(link.pn, link.deviceId, [row.msgId]);
      return undefined;
    }
    const attrs: Record<string, string> = { id: row.msgId };
    const encAttrs: Record<string, string> = { v: '2' };
    // `enc:<name>` row attributes belong on the <enc> node (mediatype, decrypt-fail); `x-` ones are the sandbox's
    for (const [k, v] of Object.entries(row.attrs)) {
      if (k === GARBLE_ATTR) continue;
      if (k.startsWith('enc:')) encAttrs[k.slice(4)] = v;
      else if (!k.startsWith('x-')) attrs[k] = v;
    }
    attrs.id = row.msgId;
    if (offline) attrs.offline = '1';
    return {
      tag: 'message',
      attrs,
      content: parts.map((p) => ({ tag: 'enc', attrs: { ...encAttrs, type: p.type }, content: p.ciphertext })),
    };
  }

  /**
   * A `<receipt>` from a companion. Any receipt type except `retry` confirms delivery of the listed ids
   * (delivery, inactive, read, peer_msg, hist_sync, sender, …) and removes them from its outbox.
   */
  async onReceipt(conn: ClientConnection, node: BinaryNode): Promise<void> {
    const link = this.link(conn);
    if (!link) return;
    const ids = [
      node.attrs.id,
      ...getBinaryNodeChildren(getBinaryNodeChild(node, 'list'), 'item').map((i) => i.attrs.id),
    ].filter((id): id is string => !!id);
    if (node.attrs.type === 'retry') {
      await this.onRetry(link, node, ids[0]);
      return;
    }
    if (!ids.length) return;
    // Not waited for: a deletion lost in a crash only means a redelivery, which the client recognises. (Waiting
    // would hold every later stanza of the connection for an fsync, and with them the delivery window.)
    this.ctx.store.deleteOutbox(link.pn, link.deviceId, ids);
    this.ctx.store.commit().catch((err: unknown) => link.conn.log.error({ err }, 'could not record delivered rows'));
    this.answered(link, ids);
  }

  /**
   * Retry receipt (the client could not decrypt), answered as WhatsApp's server and the sender's phone do: the phone
   * re-encrypts the message — from a new session when the receipt carries `<keys>` (built from them), or when its
   * `<registration>` is not the registration id of the phone's session (built from the device's bundle on the server,
   * as a sender fetches it) — and the server queues that ciphertext, with `count` on its `<enc>`, at the end of the
   * device's queue in place of the row (so the chain still arrives in order; it is the bytes redelivered from then on).
   * A group message is encrypted again with the sender's current sender key (new skmsg, and its distribution message
   * as the 1:1 part), as a sender re-sends it.
   * Gives up (drops the row) after {@link MAX_ATTEMPTS} attempts — each retry is followed by an `<ack error="500">`,
   * which counts it (onAck). Relayed ciphertext cannot be re-encrypted here and is dropped.
   */
  private async onRetry(link: Link, node: BinaryNode, msgId: string | undefined): Promise<void> {
    const { store, accounts, phones } = this.ctx;
    const row = msgId ? store.getOutboxByMsgId(link.pn, link.deviceId, msgId) : undefined;
    if (msgId) this.answered(link, [msgId]); // its new ciphertext is queued (and counted) afresh
    if (!row) return;
    const retryCount = Number(getBinaryNodeChild(node, 'retry')?.attrs.count ?? '1') || 1;
    link.conn.log.info({ msgId, retryCount }, 'retry receipt');
    const device = store.getDevice(link.pn, link.deviceId);
    const companionLid = accounts.get(link.pn)?.lid;
    if (row.attempts >= MAX_ATTEMPTS || !row.plaintext || !row.senderPn || !device || !companionLid) {
      store.deleteOutbox(link.pn, link.deviceId, [row.msgId]);
      await store.commit();
      return;
    }
    const buf = (n: BinaryNode | undefined, tag: string): Buffer | undefined => {
      const c = getBinaryNodeChild(n, tag)?.content;
      return c instanceof Uint8Array ? Buffer.from(c) : undefined;
    };
    const reg = buf(node, 'registration');
    const registrationId = reg?.length === 4 ? reg.readUInt32BE(0) : undefined;
    const keys = getBinaryNodeChild(node, 'keys');
    const identity = buf(keys, 'identity');
    const skey = getBinaryNodeChild(keys, 'skey');
    const skeyId = buf(skey, 'id');
    const skeyPub = buf(skey, 'value');
    const skeySig = buf(skey, 'signature');
    const key = getBinaryNodeChild(keys, 'key');
    const keyId = buf(key, 'id');
    const keyPub = buf(key, 'value');
    if (registrationId !== undefined && identity?.length === 32 && skeyId && skeyPub?.length === 32 && skeySig?.length === 64) {
      await phones.resetSession(row.senderPn, companionLid, link.deviceId, {
        registrationId,
        identityPub: identity,
        signedPreKeyId: skeyId.readUIntBE(0, skeyId.length),
        signedPreKeyPub: skeyPub,
        signedPreKeySig: skeySig,
        preKey: keyId && keyPub?.length === 32 ? { keyId: keyId.readUIntBE(0, keyId.length), pub: keyPub } : undefined,
      });
    } else if (
      registrationId !== undefined &&
      (await phones.sessionRegistrationId(row.senderPn, companionLid, link.deviceId)) !== registrationId
    ) {
      // the device is not the one the session was made with (or there is none): start over from its bundle
      await phones.dropSession(row.senderPn, companionLid, link.deviceId);
    }
    // a group message goes out again with the sender's current sender key: its distribution message and a new skmsg
    const group = row.skCiphertext ? this.ctx.groups.reencryptForRetry(row.senderPn, row.attrs.from ?? '', row.msgId) : undefined;
    const sealed = row.skCiphertext && !group ? undefined : await this.seal(row.senderPn, device, group?.skdmMessage ?? row.plaintext);
    if (!sealed) {
      store.deleteOutbox(link.pn, link.deviceId, [row.msgId]);
      await store.commit();
      return;
    }
    const attrs: Record<string, string> = { ...row.attrs, 'enc:count': String(retryCount) };
    delete attrs[GARBLE_ATTR];
    delete attrs[SKIP_PAIRWISE_ATTR]; // a group retry carries the sender key again
    store.requeueOutbox(link.pn, link.deviceId, row.msgId, {
      attrs,
      ...sealed,
      ...(group ? { plaintext: group.skdmMessage, skCiphertext: group.skmsg } : {}),
    });
    await store.commit();
    this.kick(link.pn, link.deviceId);
  }

  /**
   * An `<ack class="message" error=…>` from a companion for a stanza we delivered. Error 500 follows a retry receipt
   * (handled there) or a message the client gave up on, and only counts as an attempt until {@link MAX_ATTEMPTS};
   * any other error code is terminal. An `<ack class="notification">` removes that queued notification.
   */
  async onAck(conn: ClientConnection, node: BinaryNode): Promise<void> {
    const link = this.link(conn);
    const error = node.attrs.error;
    const id = node.attrs.id;
    if (link && id && node.attrs.class === 'notification') {
      // a queued notification is done once the client acknowledged it
      this.ctx.store.deleteOutbox(link.pn, link.deviceId, [id]);
      await this.ctx.store.commit();
      this.answered(link, [id]);
      return;
    }
    if (!link || node.attrs.class !== 'message' || !id) return;
    this.answered(link, [id]); // handled by the client, whatever it says
    if (!error) return;
    const row = this.ctx.store.getOutboxByMsgId(link.pn, link.deviceId, id);
    if (!row) return;
    conn.log.warn({ msgId: id, error }, 'companion rejected a delivered message');
    if (error !== '500' || row.attempts >= MAX_ATTEMPTS) this.ctx.store.deleteOutbox(link.pn, link.deviceId, [id]);
    else this.ctx.store.bumpOutboxAttempts(link.pn, link.deviceId, id);
    await this.ctx.store.commit();
  }

  /** One of a companion's uploaded one-time prekeys was consumed; ask it for more when few remain (§B10). */
  onDevicePreKeyTaken(pn: string, deviceId: number, remaining: number): void {
    const link = this.links.get(linkKey(pn, deviceId));
    if (!link || remaining >= PREKEY_LOW || link.preKeyLowNotified || !link.conn.isOnline) return;
    link.preKeyLowNotified = true;
    link.conn.send({
      tag: 'notification',
      attrs: { from: '@s.whatsapp.net', type: 'encrypt', id: generateMessageIDV2(), t: unixNow() },
      content: [{ tag: 'count', attrs: { value: String(remaining) } }],
    });
  }

  /**
   * Send a stanza to every online companion of `pn` (best effort, not queued: receipts, chatstates, presence).
   * @returns how many companions it was sent to.
   */
  sendToCompanions(pn: string, node: BinaryNode): number {
    let n = 0;
    for (const link of this.links.values()) {
      if (link.pn !== pn || !link.ready || !link.conn.isOnline) continue;
      link.conn.send(node);
      n++;
    }
    return n;
  }

  /**
   * Tell every other logged-in companion that `account`'s device list changed
   * (`<notification type="devices"><update><device jid/></update></notification>`), so their 5-minute
   * device caches are dropped and the next send re-runs usync (`lib/Socket/messages-recv.js
   * handleDevicesNotification`). Best effort, not queued.
   */
  broadcastDeviceChange(pn: string, lidUser: string, deviceId: number): void {
    for (const link of this.links.values()) {
      if ((link.pn === pn && link.deviceId === deviceId) || !link.conn.isOnline) continue;
      link.conn.send({
        tag: 'notification',
        attrs: { from: pnJid(pn), type: 'devices', id: generateMessageIDV2(), t: unixNow() },
        content: [
          {
            tag: 'update',
            attrs: {},
            content: [
              { tag: 'device', attrs: { jid: pnJid(pn, deviceId) } },
              { tag: 'device', attrs: { jid: lidJid(lidUser, deviceId) } },
            ],
          },
        ],
      });
    }
  }

  /**
   * Drop a linked companion's connection the way WhatsApp's servers do, to exercise the client's reconnect policy
   * (brief A4): 428 closes the WebSocket without a word (Baileys reports `connectionClosed`), 440 sends
   * `<stream:error><conflict type="replaced"/>`, any other code `<stream:error code=…/>` (408, 500, 503, 515 …).
   * The device stays linked.
   * @returns false when that device has no open connection.
   */
  disconnectDevice(account: AccountRow, deviceId: number, code: number): boolean {
    const link = this.links.get(linkKey(account.pn, deviceId));
    if (!link) return false;
    if (code === 428) link.conn.close();
    else if (code === 440) link.conn.replaced();
    else link.conn.streamError(String(code));
    return true;
  }

  /**
   * Unlink a companion: delete it (its prekeys and queue cascade) and the phones' sessions with it, close
   * its connection with `<failure reason="401"/>` (unless it is `except`, which logged out itself), and
   * tell the other companions the account's device list changed.
   * @returns whether the device existed.
   */
  unlinkDevice(account: AccountRow, deviceId: number, except?: ClientConnection): boolean {
    const { store, logger } = this.ctx;
    if (!store.getDevice(account.pn, deviceId)) return false;
    store.deleteDevice(account.pn, deviceId);
    store.deleteSessionsForAddress(companionAddress(account.lid, deviceId).toString());
    store.commit().catch((err: unknown) => logger.error({ err }, 'failed to persist companion removal'));
    const key = linkKey(account.pn, deviceId);
    const link = this.links.get(key);
    this.links.delete(key);
    if (link && link.conn !== except) link.conn.fail('401');
    this.broadcastDeviceChange(account.pn, account.lid, deviceId);
    return true;
  }
}
