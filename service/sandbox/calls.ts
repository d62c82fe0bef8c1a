/**
 * Voice and video calls placed by the simulated phones (issue 14 item 8), at signalling level only (no media).
 *
 * Protocol (what Baileys rc14 parses, lib/Socket/messages-recv.js handleCall / getCallStatusFromNode): the callee's
 * companions get `<call from id t notify><offer call-id call-creator caller_pn><audio/><video/>?</offer></call>`
 * (acknowledged with `<ack class="call">`), and `<call><terminate call-id call-creator/></call>` when the caller
 * hangs up. A companion rejects with `<call to id><reject call-id call-creator count="0"/></call>` (Baileys
 * `rejectCall`, which waits for the server's answer carrying the same id: an `<ack class="call" type="reject">`).
 * Calls are kept in memory (a restart forgets them).
 */
import { randomBytes } from 'node:crypto';
import { getBinaryNodeChildren, type BinaryNode } from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import { unixNow } from './context.ts';
import { formatPhoneNumber, pnJid } from './phone-number.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow } from './store.ts';

export interface CallView {
  id: string;
  /** The caller, `+<digits>`. */
  from: string;
  /** The callee, `+<digits>`. */
  to: string;
  isVideo: boolean;
  /** `ringing` until rejected by a companion of the callee or ended by the caller. */
  status: 'ringing' | 'rejected' | 'ended';
  rejected: boolean;
  /** How many companions of the callee got the offer. */
  offeredTo: number;
  /** Unix seconds the call was placed. */
  timestamp: number;
}

interface CallRow extends CallView {
  fromPn: string;
  toPn: string;
}

const view = ({ fromPn: _f, toPn: _t, ...v }: CallRow): CallView => ({ ...v });

export class Calls {
  readonly #calls = new Map<string, CallRow>();

  constructor(private readonly ctx: SandboxContext) {}

  /** `from`'s phone calls `to`: the offer goes to every online companion of `to`. */
  place(from: AccountRow, to: AccountRow, isVideo: boolean): CallView {
    const id = randomBytes(16).toString('hex').toUpperCase();
    const caller = pnJid(from.pn);
    const media: BinaryNode[] = [{ tag: 'audio', attrs: { enc: 'opus', rate: '16000' } }];
    if (isVideo) media.push({ tag: 'video', attrs: { enc: 'vp8', dec: 'vp8' } });
    const offeredTo = this.ctx.delivery.sendToCompanions(to.pn, {
      tag: 'call',
      attrs: { from: caller, id: randomBytes(8).toString('hex').toUpperCase(), t: unixNow(), notify: from.pushName },
      content: [{ tag: 'offer', attrs: { 'call-id': id, 'call-creator': caller, caller_pn: caller }, content: media }],
    });
    const row: CallRow = {
      id,
      from: formatPhoneNumber(from.pn),
      to: formatPhoneNumber(to.pn),
      fromPn: from.pn,
      toPn: to.pn,
      isVideo,
      status: 'ringing',
      rejected: false,
      offeredTo,
      timestamp: Number(unixNow()),
    };
    this.#calls.set(id, row);
    return view(row);
  }

  /** The caller hangs up a ringing call: its callee's companions get `<terminate>`. Undefined for an unknown call. */
  end(from: AccountRow, callId: string): CallView | undefined {
    const row = this.#calls.get(callId);
    if (!row || row.fromPn !== from.pn) return undefined;
    if (row.status === 'ringing') {
      row.status = 'ended';
      const caller = pnJid(from.pn);
      this.ctx.delivery.sendToCompanions(row.toPn, {
        tag: 'call',
        attrs: { from: caller, id: randomBytes(8).toString('hex').toUpperCase(), t: unixNow() },
        content: [{ tag: 'terminate', attrs: { 'call-id': callId, 'call-creator': caller } }],
      });
    }
    return view(row);
  }

  /** Calls `pn` placed or received, oldest first. */
  list(pn: string): CallView[] {
    return [...this.#calls.values()].filter((c) => c.fromPn === pn || c.toPn === pn).map(view);
  }

  /** A companion's `<call>` stanza (a reject); always answered with an `<ack class="call">` carrying its id. */
  onClientCall(conn: ClientConnection, node: BinaryNode): void {
    const [child] = getBinaryNodeChildren(node, 'reject');
    if (child) {
      const row = this.#calls.get(child.attrs['call-id'] ?? '');
      if (row && row.toPn === conn.pn && row.status === 'ringing') {
        row.status = 'rejected';
        row.rejected = true;
      }
    }
    const first = Array.isArray(node.content) ? node.content[0] : undefined;
    conn.send({ tag: 'ack', attrs: { id: node.attrs.id ?? '', class: 'call', type: first?.tag ?? '', from: '@s.whatsapp.net' } });
  }
}
