/**
 * 1:1 messaging between sandbox accounts (brief §B5, §B6).
 *
 * Owns:
 * - phone → companions (`sendFromPhone`, the admin API's send): the message row and one outbox row per
 *   linked companion of the recipient (from the sender's phone, PN-addressed with `sender_lid` and
 *   `notify`, so the client needs no LID lookup) plus a `deviceSentMessage` copy for the sender's own
 *   companions — committed together before the caller answers;
 * - companion → contacts (`onClientMessage`): decrypt every `<to>` part addressed to a simulated phone,
 *   record what the recipient's phone received, relay parts addressed to other companions, then
 *   `<ack class="message">` and (if a recipient phone got it) a delivery `<receipt>`. A message to a group
 *   (`…@g.us`) is handed to `groups.ts`.
 */
import {
  getBinaryNodeChild,
  getBinaryNodeChildren,
  jidDecode,
  normalizeMessageContent,
  proto,
  unpadRandomMax16,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import { GARBLE_ATTR, type Sealed } from './delivery.ts';
import { unixNow, type SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow, NewOutbox } from './store.ts';
import type { EncType } from './signal-device.ts';
import { lidJid, pnJid } from './phone-number.ts';
import { KEY_TYPE, encodeBE, preKeyNode, signedPreKeyNode } from './key-nodes.ts';
import { classify, stanzaAttrs } from './content.ts';
import { mediaContent } from './media.ts';
import { newMessageId } from './message-id.ts';
import { STATUS_JID } from './statuses.ts';

/** Protocol messages a phone records as messages (edits and revokes); others are device plumbing. */
const RECORDED_PROTOCOL_TYPES = new Set<number>([
  proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
  proto.Message.ProtocolMessage.Type.REVOKE,
]);

interface EncPart {
  jid: string;
  type: EncType;
  ciphertext: Uint8Array;
}

function encParts(node: BinaryNode): EncPart[] {
  const parts: EncPart[] = [];
  const push = (jid: string | undefined, enc: BinaryNode | undefined): void => {
    const type = enc?.attrs.type;
    if (jid && enc && (type === 'pkmsg' || type === 'msg') && enc.content instanceof Uint8Array) {
      parts.push({ jid, type, ciphertext: enc.content });
    }
  };
  for (const to of getBinaryNodeChildren(getBinaryNodeChild(node, 'participants'), 'to')) {
    push(to.attrs.jid, getBinaryNodeChild(to, 'enc'));
  }
  push(node.attrs.to, getBinaryNodeChild(node, 'enc'));
  return parts;
}

/** Retry receipts a phone sends per undecryptable message before giving up. */
const MAX_PHONE_RETRIES = 2;

export class Messaging {
  /** msgId → retry receipts sent (bounded: oldest entries are evicted). */
  private readonly retries = new Map<string, number>();
  /** Server acks held back while `withholdAcks` is set (fault injection), in arrival order. */
  private heldAcks: Array<{ conn: ClientConnection; node: BinaryNode }> = [];
  #withholdAcks = false;

  constructor(private readonly ctx: SandboxContext) {}

  /**
   * Fault injection (admin `PUT /faults/message-acks`): while true, companion messages are handled as always (stored,
   * received by the phones, relayed) but their `<ack class="message">` is held back, as when the server's answer is
   * lost or late; set back to false, the held acks go out to the connections still open.
   */
  get withholdAcks(): boolean {
    return this.#withholdAcks;
  }

  set withholdAcks(on: boolean) {
    this.#withholdAcks = on;
    if (on) return;
    const held = this.heldAcks;
    this.heldAcks = [];
    for (const { conn, node } of held) conn.send(node);
  }

  /** Acknowledges a companion's message (`<ack class="message">`, with `error` for a refusal), unless acks are withheld. */
  ackMessage(conn: ClientConnection, id: string, from: string, error?: string): void {
    const node: BinaryNode = { tag: 'ack', attrs: { id, class: 'message', from, t: unixNow(), ...(error ? { error } : {}) } };
    if (this.#withholdAcks) this.heldAcks.push({ conn, node });
    else conn.send(node);
  }

  /**
   * The recipient phone could not decrypt: send `<receipt type="retry">` with its key bundle (a fresh
   * one-time prekey), as a real phone does, so the client re-keys and re-sends (brief §B5 "Decrypt failure").
   * In a group the receipt names the phone as `participant` (the client then re-sends the message to the whole
   * group with fresh sender-key distribution, `sendMessagesAgain` in Baileys' `messages-recv.js`).
   */
  requestRetry(conn: ClientConnection, node: BinaryNode, phone: AccountRow, participant?: string): void {
    const id = node.attrs.id!;
    const count = (this.retries.get(id) ?? 0) + 1;
    if (count > MAX_PHONE_RETRIES) return;
    this.retries.set(id, count);
    if (this.retries.size > 10_000) this.retries.delete(this.retries.keys().next().value!);
    const preKey = this.ctx.accounts.takePhonePreKey(phone.pn);
    const t = unixNow();
    conn.send({
      tag: 'receipt',
      attrs: { id, from: node.attrs.to ?? pnJid(phone.pn), type: 'retry', t, ...(participant ? { participant } : {}) },
      content: [
        { tag: 'retry', attrs: { count: String(count), id, t, v: '1', error: '0' } },
        { tag: 'registration', attrs: {}, content: encodeBE(phone.registrationId, 4) },
        {
          tag: 'keys',
          attrs: {},
          content: [
            { tag: 'type', attrs: {}, content: KEY_TYPE },
            { tag: 'identity', attrs: {}, content: phone.identityPub },
            ...(preKey ? [preKeyNode(preKey)] : []),
            signedPreKeyNode(phone.signedPreKeyId, phone.signedPreKeyPub, phone.signedPreKeySig),
          ],
        },
      ],
    });
  }

  /**
   * `from`'s phone sends `message` to `to`: stored (with the media plaintext, if any), queued for every
   * linked companion of `to` (and a `deviceSentMessage` copy for `from`'s own companions), committed, then
   * delivered to those online. Companions whose history sync is not queued yet get it through that sync.
   * Each row holds the phone's ciphertext for its device, encrypted here once (`Delivery.seal`) and committed with
   * the session state: redeliveries send the same bytes. A device linked meanwhile gets its row sealed at delivery.
   * @returns the WhatsApp message id (`3EB0…`), once the rows are durable.
   */
  async sendFromPhone(
    from: AccountRow,
    to: AccountRow,
    message: proto.IMessage,
    opts: { mediaPlaintext?: Buffer; statusBroadcast?: boolean; undecryptableFirst?: boolean } = {},
  ): Promise<{ id: string; timestamp: number }> {
    const { store } = this.ctx;
    const id = newMessageId();
    const ts = Math.floor(Date.now() / 1000);
    const text = classify(message).text;
    const bytes = Buffer.from(proto.Message.encode(message).finish());
    const dsm = Buffer.from(
      proto.Message.encode({ deviceSentMessage: { destinationJid: pnJid(to.pn), message } }).finish(),
    );
    const baseAttrs = stanzaAttrs(message);
    const targets: Array<[string, number]> = [];
    // A status post comes from status@broadcast with its author as participant (issue #13); the phones' 1:1 session
    // encrypts it, which Baileys accepts for broadcasts (author = participant).
    const recipientAttrs: Record<string, string> = opts.statusBroadcast
      ? { ...baseAttrs, from: 'status@broadcast', participant: pnJid(from.pn), t: String(ts), notify: from.pushName }
      : { ...baseAttrs, from: pnJid(from.pn), t: String(ts), notify: from.pushName, sender_lid: lidJid(from.lid) };
    if (opts.undecryptableFirst) recipientAttrs[GARBLE_ATTR] = '1';
    // Encrypt once per device, before the transaction; the device list is read again inside it (a history sync
    // queued in between decides who gets the message through the history instead).
    const sealed = new Map<string, Sealed>();
    const seal = async (pn: string, plaintext: Buffer, garble: boolean): Promise<void> => {
      const devices = store
        .listDeliveryTargets(pn)
        .filter((d) => d.historySent)
        .flatMap((d) => store.getDevice(pn, d.deviceId) ?? []);
      const made = await Promise.all(devices.map((d) => this.ctx.delivery.seal(from.pn, d, plaintext, garble)));
      devices.forEach((d, i) => made[i] && sealed.set(`${pn}:${d.deviceId}`, made[i]));
    };
    await seal(to.pn, bytes, !!opts.undecryptableFirst);
    if (from.pn !== to.pn) await seal(from.pn, dsm, false);
    const sealedFor = (pn: string, deviceId: number) => {
      const s = sealed.get(`${pn}:${deviceId}`);
      return { encType: s?.encType ?? null, ciphertext: s?.ciphertext ?? null };
    };
    store.enqueue(() => {
      store.insertMessageNow({ msgId: id, fromPn: from.pn, toPn: to.pn, ts, text, message: bytes });
      if (opts.mediaPlaintext) store.putMessageMediaNow(from.pn, id, opts.mediaPlaintext);
      const rows: NewOutbox[] = [];
      for (const d of store.listDeliveryTargets(to.pn)) {
        if (!d.historySent) continue;
        rows.push({
          pn: to.pn,
          deviceId: d.deviceId,
          msgId: id,
          kind: 'message',
          senderPn: from.pn,
          attrs: recipientAttrs,
          plaintext: bytes,
          ...sealedFor(to.pn, d.deviceId),
        });
      }
      for (const d of from.pn === to.pn ? [] : store.listDeliveryTargets(from.pn)) {
        if (!d.historySent) continue;
        rows.push({
          pn: from.pn,
          deviceId: d.deviceId,
          msgId: id,
          kind: 'message',
          senderPn: from.pn,
          attrs: { ...baseAttrs, from: pnJid(from.pn), recipient: pnJid(to.pn), t: String(ts), notify: from.pushName },
          plaintext: dsm,
          ...sealedFor(from.pn, d.deviceId),
        });
      }
      store.insertOutboxNow(rows);
      for (const r of rows) targets.push([r.pn, r.deviceId]);
    });
    await store.commit();
    for (const [pn, deviceId] of targets) this.ctx.delivery.kick(pn, deviceId);
    return { id, timestamp: ts };
  }

  /** A `<message>` from a logged-in companion (brief §B6 steps 3–5). */
  async onClientMessage(conn: ClientConnection, node: BinaryNode): Promise<void> {
    const { accounts, phones, store } = this.ctx;
    const id = node.attrs.id;
    const to = node.attrs.to;
    const sender = conn.pn !== undefined ? accounts.get(conn.pn) : undefined;
    const senderDevice = conn.deviceId;
    if (!id || !to || !sender || senderDevice === undefined) {
      conn.log.warn({ attrs: node.attrs }, 'message stanza without id/to');
      return;
    }
    if (to.endsWith('@g.us')) {
      await this.ctx.groups.onClientMessage(conn, node, sender, senderDevice);
      return;
    }
    if (to === STATUS_JID) {
      await this.ctx.statuses.onClientMessage(conn, node, sender, senderDevice);
      return;
    }
    const isPeer = node.attrs.category === 'peer';
    const chat = accounts.resolveJid(to);
    const ts = Math.floor(Date.now() / 1000);

    let content: proto.IMessage | undefined;
    let destinationJid: string | undefined;
    let deliveredToPhone = false;
    const relays: NewOutbox[] = [];

    for (const part of encParts(node)) {
      const target = accounts.resolveJid(part.jid);
      if (!target) continue;
      if (target.device === 0) {
        let msg: proto.Message;
        try {
          const padded = await phones.decryptFromCompanion(
            target.account.pn,
            sender.lid,
            senderDevice,
            part.type,
            part.ciphertext,
          );
          msg = proto.Message.decode(unpadRandomMax16(padded));
        } catch (err) {
          conn.log.warn({ err, msgId: id, to: part.jid }, 'phone could not decrypt a companion message');
          if (target.account.pn !== sender.pn) this.requestRetry(conn, node, target.account);
          continue;
        }
        if (target.account.pn === sender.pn) {
          destinationJid ??= msg.deviceSentMessage?.destinationJid ?? undefined;
          content ??= msg.deviceSentMessage?.message ?? msg;
        } else {
          content = msg;
          deliveredToPhone = true;
        }
        continue;
      }
      if (target.account.pn === sender.pn && target.device === senderDevice) continue;
      const device = store.getDevice(target.account.pn, target.device);
      if (!device?.historySent) continue;
      const ownCopy = target.account.pn === sender.pn;
      const attrs: Record<string, string> = {
        from: pnJid(sender.pn, senderDevice),
        type: node.attrs.type ?? 'text',
        t: String(ts),
        notify: sender.pushName,
      };
      if (node.attrs.edit) attrs.edit = node.attrs.edit;
      if (ownCopy) attrs.recipient = chat ? pnJid(chat.account.pn) : to;
      else attrs.sender_lid = lidJid(sender.lid, senderDevice);
      relays.push({
        pn: target.account.pn,
        deviceId: target.device,
        msgId: id,
        kind: 'relay',
        senderPn: null,
        attrs,
        plaintext: null,
        encType: part.type,
        ciphertext: Buffer.from(part.ciphertext),
      });
    }

    // a chat with another sandbox account is recorded once that phone decrypted it; a chat with an unknown
    // number only exists as the sender's own-phone copy
    const chatWithAccount = chat && chat.account.pn !== sender.pn ? chat.account : undefined;
    const protocolType = normalizeMessageContent(content)?.protocolMessage?.type;
    const record =
      content &&
      !isPeer &&
      (protocolType === null || protocolType === undefined || RECORDED_PROTOCOL_TYPES.has(protocolType)) &&
      (deliveredToPhone || !chatWithAccount);
    const toPn = chatWithAccount?.pn ?? jidDecode(destinationJid ?? to)?.user;
    if (record && content && toPn) {
      const bytes = Buffer.from(proto.Message.encode(content).finish());
      const text = classify(content).text;
      // the receiving phone downloads the companion's upload and checks its hashes (brief §B7)
      let plaintext: Buffer | undefined;
      if (mediaContent(content)) {
        try {
          plaintext = await this.ctx.media.fetchMessageMedia(content);
        } catch (err) {
          conn.log.warn({ err, msgId: id }, "phone could not download/verify the companion's media");
        }
      }
      store.enqueue(() => {
        store.insertMessageNow({ msgId: id, fromPn: sender.pn, toPn, ts, text, message: bytes });
        if (plaintext) store.putMessageMediaNow(sender.pn, id, plaintext);
      });
    }
    if (relays.length) store.enqueue(() => store.insertOutboxNow(relays));
    await store.commit(); // session state + what the phone received, before acknowledging
    for (const r of relays) this.ctx.delivery.kick(r.pn, r.deviceId);

    this.ackMessage(conn, id, to);
    if (deliveredToPhone) {
      conn.send({ tag: 'receipt', attrs: { id, from: to, t: unixNow() } });
    }
    conn.log.debug({ msgId: id, to, recorded: !!record, relays: relays.length }, 'companion message handled');
  }
}
