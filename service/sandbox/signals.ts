/**
 * Read receipts, delivery receipts, chatstates and presence between phones and companions (brief §A7, §B9).
 *
 * Owns:
 * - companion → phones: a companion's `<receipt>` (delivery/inactive/read) for a contact's message, its
 *   `<chatstate to>` and its own `<presence type>` are recorded as "seen" by the contact's phone
 *   (`receipts` / `chatstates` tables) and relayed, best effort, to that contact's own online companions;
 * - phone → companions (admin API): read receipts for messages a phone received, typing/recording/paused,
 *   and available/unavailable presence, sent to the relevant online companions (not queued).
 */
import { getBinaryNodeChild, getBinaryNodeChildren, type BinaryNode } from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import { unixNow } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow } from './store.ts';
import { pnJid } from './phone-number.ts';

export type ChatState = 'composing' | 'recording' | 'paused';
export type PresenceType = 'available' | 'unavailable';

const nowS = (): number => Math.floor(Date.now() / 1000);

function receiptNode(from: string, ids: string[], type?: string, participant?: string): BinaryNode {
  const attrs: Record<string, string> = { from, id: ids[0]!, t: unixNow() };
  if (type) attrs.type = type;
  if (participant) attrs.participant = participant;
  const node: BinaryNode = { tag: 'receipt', attrs };
  if (ids.length > 1) {
    node.content = [{ tag: 'list', attrs: {}, content: ids.slice(1).map((id) => ({ tag: 'item', attrs: { id } })) }];
  }
  return node;
}

function chatstateNode(from: string, state: ChatState): BinaryNode {
  const child: BinaryNode =
    state === 'recording' ? { tag: 'composing', attrs: { media: 'audio' } } : { tag: state, attrs: {} };
  return { tag: 'chatstate', attrs: { from }, content: [child] };
}

export class Signals {
  constructor(private readonly ctx: SandboxContext) {}

  /**
   * A companion's `<receipt>` (not retry/server-error): record delivery/read as seen by the contact's phone. In a
   * group (`to="<id>@g.us" participant=<sender>`) the sender is the participant, and a read receipt reaches the
   * sender's companions as `<receipt from=group participant=reader type="read">`.
   */
  async onClientReceipt(conn: ClientConnection, node: BinaryNode): Promise<void> {
    const { accounts, store } = this.ctx;
    const type = node.attrs.type;
    const kind =
      !type || type === 'inactive' ? 'delivery' : type === 'read' || type === 'read-self' ? 'read' : undefined;
    if (!kind || conn.pn === undefined) return;
    const group = node.attrs.to?.endsWith('@g.us') ? node.attrs.to : undefined;
    const target = accounts.resolveJid(group ? node.attrs.participant : node.attrs.to);
    if (!target || target.account.pn === conn.pn) return;
    const ids = [
      node.attrs.id,
      ...getBinaryNodeChildren(getBinaryNodeChild(node, 'list'), 'item').map((i) => i.attrs.id),
    ].filter((id): id is string => !!id);
    if (!ids.length) return;
    const reader = conn.pn;
    store.enqueue(() => store.insertReceiptNow(target.account.pn, reader, ids, kind, nowS()));
    if (kind !== 'read') {
      // a delivery receipt is only recorded: not waited for (the connection's later stanzas would wait with it)
      store.commit().catch((err: unknown) => conn.log.error({ err }, 'could not record a delivery receipt'));
      return;
    }
    await store.commit();
    const receipt = group ? receiptNode(group, ids, 'read', pnJid(reader)) : receiptNode(pnJid(reader), ids, 'read');
    this.ctx.delivery.sendToCompanions(target.account.pn, receipt);
  }

  /** `<chatstate from to><composing|paused/></chatstate>` from a companion. */
  async onClientChatstate(conn: ClientConnection, node: BinaryNode): Promise<void> {
    const { accounts, store } = this.ctx;
    const target = accounts.resolveJid(node.attrs.to);
    const first = Array.isArray(node.content) ? node.content[0] : undefined;
    if (!target || !first || conn.pn === undefined || target.account.pn === conn.pn) return;
    const state: ChatState | undefined =
      first.tag === 'composing'
        ? first.attrs.media === 'audio'
          ? 'recording'
          : 'composing'
        : first.tag === 'paused'
          ? 'paused'
          : undefined;
    if (!state) return;
    const sender = conn.pn;
    store.enqueue(() => store.insertChatstateNow(target.account.pn, sender, state, nowS()));
    await store.commit();
    this.ctx.delivery.sendToCompanions(target.account.pn, chatstateNode(pnJid(sender), state));
  }

  /** `<presence type="available|unavailable" name/>` from a companion: seen by every account it chats with. */
  async onClientPresence(conn: ClientConnection, node: BinaryNode): Promise<void> {
    const type = node.attrs.type;
    if ((type !== 'available' && type !== 'unavailable') || node.attrs.to || conn.pn === undefined) return;
    await this.broadcastPresence(conn.pn, type);
  }

  private async broadcastPresence(pn: string, type: PresenceType): Promise<void> {
    const { accounts, store } = this.ctx;
    const peers = store.listPeers(pn).filter((p) => accounts.get(p));
    const ts = nowS();
    store.enqueue(() => {
      for (const p of peers) store.insertChatstateNow(p, pn, type, ts);
    });
    await store.commit();
    const attrs: Record<string, string> = { from: pnJid(pn), type };
    if (type === 'unavailable') attrs.last = String(ts);
    for (const p of peers) this.ctx.delivery.sendToCompanions(p, { tag: 'presence', attrs });
  }

  /** Phone `reader` read `ids` it received from `sender`: read receipts to `sender`'s companions. */
  async phoneRead(reader: AccountRow, sender: AccountRow, ids: string[]): Promise<void> {
    const { store } = this.ctx;
    store.enqueue(() => store.insertReceiptNow(sender.pn, reader.pn, ids, 'read', nowS()));
    await store.commit();
    this.ctx.delivery.sendToCompanions(sender.pn, receiptNode(pnJid(reader.pn), ids, 'read'));
  }

  /**
   * Phone `reader` read group messages (`messages`, grouped by sender): each sender's companions get
   * `<receipt from="<group>" participant=<reader> type="read">` (reader named in the group's addressing mode).
   */
  async phoneReadGroup(
    reader: AccountRow,
    groupJid: string,
    readerJid: string,
    messages: Array<{ fromPn: string; msgId: string }>,
  ): Promise<void> {
    const { store } = this.ctx;
    const bySender = new Map<string, string[]>();
    for (const m of messages) {
      let ids = bySender.get(m.fromPn);
      if (!ids) bySender.set(m.fromPn, (ids = []));
      ids.push(m.msgId);
    }
    const ts = nowS();
    store.enqueue(() => {
      for (const [sender, ids] of bySender) store.insertReceiptNow(sender, reader.pn, ids, 'read', ts);
    });
    await store.commit();
    for (const [sender, ids] of bySender) {
      this.ctx.delivery.sendToCompanions(sender, receiptNode(groupJid, ids, 'read', readerJid));
    }
  }

  /** Phone `from` is typing/recording/paused in its chat with `to`. */
  async phoneChatstate(from: AccountRow, to: AccountRow, state: ChatState): Promise<void> {
    const { store } = this.ctx;
    store.enqueue(() => store.insertChatstateNow(to.pn, from.pn, state, nowS()));
    await store.commit();
    this.ctx.delivery.sendToCompanions(to.pn, chatstateNode(pnJid(from.pn), state));
  }

  /** Phone `from` goes available/unavailable: seen by the accounts it chats with. */
  phonePresence(from: AccountRow, type: PresenceType): Promise<void> {
    return this.broadcastPresence(from.pn, type);
  }
}
