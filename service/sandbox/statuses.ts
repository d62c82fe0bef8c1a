/**
 * Status posts a companion makes (`<message to="status@broadcast">`, Baileys `sendMessage('status@broadcast', …,
 * { statusJidList })`), received by the phones of the contacts it names and relayed to their companions.
 *
 * Protocol facts (Baileys rc14 `relayMessage`, lib/Socket/messages-send.js): a status is sent like a group message
 * to the group `status@broadcast` — the content as one `skmsg` under the sender's sender key, and that key (an
 * SKDM, `senderKeyDistributionMessage { groupId: "status@broadcast" }`) as a 1:1 `pkmsg`/`msg` to every device of
 * every JID in `statusJidList`, each time (it keeps no sender-key memory for statuses). Text posts are an
 * `extendedTextMessage` with `backgroundArgb` and `font`.
 *
 * Here each named phone takes the SKDM and decrypts the skmsg (sender-keys.ts), the post is recorded with the
 * phones that received it (their status list: admin `GET /accounts/:phone/statuses`), the named companions get the
 * SKDM and the skmsg from `status@broadcast` with the author as `participant`, and the sender gets its ack.
 */
import {
  getBinaryNodeChildren,
  normalizeMessageContent,
  proto,
  unpadRandomMax16,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow, NewOutbox } from './store.ts';
import { classify } from './content.ts';
import { readFanout } from './fanout.ts';
import { mediaContent } from './media.ts';
import { formatPhoneNumber, lidJid, pnJid } from './phone-number.ts';
import { groupDecrypt, processDistribution, SenderKeyError, type SenderKeyRecord } from './sender-keys.ts';

/** The broadcast "group" of status posts. */
export const STATUS_JID = 'status@broadcast';
/** How long a post stays on its viewers' status list (WhatsApp's 24 h), in seconds. */
const STATUS_LIFETIME_S = 24 * 60 * 60;

/** A status post as a viewer's phone shows it (admin `GET /accounts/:phone/statuses`). */
export interface StatusView {
  id: string;
  /** The author's phone number. */
  from: string;
  timestamp: number;
  type: string;
  /** The text, or an image's caption ("" when none). */
  text: string;
  /** A text post's background as `#AARRGGBB`, and its font (proto `ExtendedTextMessage.FontType`). */
  backgroundColor?: string;
  font?: number;
  media?: { base64: string | null; mimetype: string; caption?: string };
}

export class Statuses {
  constructor(private readonly ctx: SandboxContext) {}

  private loadRecord(pn: string, sender: string): SenderKeyRecord | undefined {
    const json = this.ctx.store.loadSenderKey(pn, STATUS_JID, sender);
    return json ? (JSON.parse(json) as SenderKeyRecord) : undefined;
  }

  private saveRecord(pn: string, sender: string, record: SenderKeyRecord): void {
    this.ctx.store.storeSenderKey(pn, STATUS_JID, sender, JSON.stringify(record));
  }

  /** A companion's `<message to="status@broadcast">`. */
  async onClientMessage(
    conn: ClientConnection,
    node: BinaryNode,
    sender: AccountRow,
    senderDevice: number,
  ): Promise<void> {
    const { store } = this.ctx;
    const id = node.attrs.id!;
    const skEnc = getBinaryNodeChildren(node, 'enc').find((e) => e.attrs.type === 'skmsg');
    const skmsg = skEnc?.content instanceof Uint8Array ? Buffer.from(skEnc.content) : undefined;
    const senderName = `${sender.pn}.${senderDevice}`;

    // The SKDMs: each named phone takes its own, each named companion gets its own relayed.
    const audience = new Map<string, AccountRow>();
    const pairwise = await readFanout(
      this.ctx,
      node,
      sender,
      senderDevice,
      (phone, skdm) => {
        this.saveRecord(phone.pn, senderName, processDistribution(this.loadRecord(phone.pn, senderName), skdm));
        audience.set(phone.pn, phone);
      },
      (err, to) => conn.log.warn({ err, msgId: id, to }, 'phone could not take a status sender key'),
    );

    // Each named phone of another account decrypts the post.
    let content: proto.Message | undefined;
    const viewers: string[] = [];
    if (skmsg) {
      const verified = new Set<string>();
      for (const [pn] of audience) {
        if (pn === sender.pn) continue;
        const rec = this.loadRecord(pn, senderName);
        try {
          const plain = groupDecrypt(rec, skmsg, verified);
          this.saveRecord(pn, senderName, rec!);
          content ??= proto.Message.decode(unpadRandomMax16(plain));
          viewers.push(pn);
        } catch (err) {
          conn.log[err instanceof SenderKeyError ? 'warn' : 'error'](
            { err, msgId: id, phone: pn },
            'phone could not decrypt a status post',
          );
        }
      }
    }

    // The named companions (the author's other devices and the viewers' linked devices) get it as WhatsApp sends it.
    const ts = Math.floor(Date.now() / 1000);
    const attrs: Record<string, string> = {
      from: STATUS_JID,
      type: node.attrs.type ?? 'text',
      participant: pnJid(sender.pn, senderDevice),
      participant_lid: lidJid(sender.lid, senderDevice),
      t: String(ts),
      notify: sender.pushName,
    };
    for (const [k, v] of Object.entries(skEnc?.attrs ?? {})) {
      if (k !== 'v' && k !== 'type') attrs[`enc:${k}`] = v;
    }
    const relays: NewOutbox[] = [];
    for (const [key, pw] of pairwise) {
      const [pn = '', device = ''] = key.split(':');
      const deviceId = Number(device);
      if (pn === sender.pn && deviceId === senderDevice) continue;
      if (!store.getDevice(pn, deviceId)?.historySent) continue;
      relays.push({
        pn,
        deviceId,
        msgId: id,
        kind: 'relay',
        senderPn: null,
        attrs,
        plaintext: null,
        encType: pw.type,
        ciphertext: pw.ciphertext,
        skCiphertext: skmsg ?? null,
      });
    }

    if (content && normalizeMessageContent(content)?.protocolMessage == null) {
      const bytes = Buffer.from(proto.Message.encode(content).finish());
      let plaintext: Buffer | undefined;
      if (mediaContent(content)) {
        try {
          plaintext = await this.ctx.media.fetchMessageMedia(content);
        } catch (err) {
          conn.log.warn({ err, msgId: id }, "phones could not download/verify the status post's media");
        }
      }
      store.enqueue(() => {
        store.insertStatusNow({ msgId: id, fromPn: sender.pn, ts, message: bytes }, viewers);
        if (plaintext) store.putMessageMediaNow(sender.pn, id, plaintext);
      });
    }
    if (relays.length) store.enqueue(() => store.insertOutboxNow(relays));
    await store.commit(); // sender keys, the post and its viewers, the relays: before acknowledging
    for (const r of relays) this.ctx.delivery.kick(r.pn, r.deviceId);
    this.ctx.messaging.ackMessage(conn, id, STATUS_JID);
    conn.log.debug({ msgId: id, viewers: viewers.length, relays: relays.length }, 'status post handled');
  }

  /** The status list of `pn`'s phone: the posts of the last 24 h it received, oldest first. */
  view(pn: string): StatusView[] {
    const since = Math.floor(Date.now() / 1000) - STATUS_LIFETIME_S;
    return this.ctx.store.listStatusesSeenBy(pn, since).map((row) => {
      let message: proto.Message | undefined;
      try {
        message = proto.Message.decode(row.message);
      } catch {
        message = undefined;
      }
      const c = classify(message);
      const view: StatusView = {
        id: row.msgId,
        from: formatPhoneNumber(row.fromPn),
        timestamp: row.ts,
        type: c.type === 'other' ? 'text' : c.type,
        text: c.text ?? '',
      };
      const ext = normalizeMessageContent(message)?.extendedTextMessage;
      if (ext?.backgroundArgb != null)
        view.backgroundColor = `#${(ext.backgroundArgb >>> 0).toString(16).toUpperCase().padStart(8, '0')}`;
      if (ext?.font != null) view.font = ext.font;
      if (c.media) {
        const plaintext = this.ctx.store.getMessageMedia(row.fromPn, row.msgId);
        view.media = {
          base64: plaintext ? plaintext.toString('base64') : null,
          mimetype: c.media.mimetype,
          ...(c.media.caption !== undefined && { caption: c.media.caption }),
        };
      }
      return view;
    });
  }
}
