/**
 * The sender-key fan-out a companion attaches to a group message or a status post (brief §B7): one
 * `<participants><to jid><enc type="pkmsg|msg">` per recipient device, each carrying the sender key distribution
 * message (SKDM) pairwise-encrypted for that device, beside the `<enc type="skmsg">` every recipient decrypts with it.
 */
import { getBinaryNodeChild, getBinaryNodeChildren, proto, unpadRandomMax16, type BinaryNode } from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import type { AccountRow } from './store.ts';
import type { EncType } from './signal-device.ts';

/** The pairwise parts addressed to companions, relayed as they are: `"<pn>:<device>"` → `<enc>` type and bytes. */
export type CompanionParts = Map<string, { type: EncType; ciphertext: Buffer }>;

/**
 * Reads a companion's fan-out. Parts addressed to companions are returned for relaying; each part addressed to a
 * phone (device 0) is decrypted by that phone and its SKDM handed to `onDistribution`. A part a phone cannot
 * decrypt goes to `onError` and the others are read on.
 */
export async function readFanout(
  ctx: SandboxContext,
  node: BinaryNode,
  sender: AccountRow,
  senderDevice: number,
  onDistribution: (phone: AccountRow, skdm: Uint8Array) => void,
  onError: (err: unknown, to: string | undefined) => void,
): Promise<CompanionParts> {
  const companions: CompanionParts = new Map();
  for (const toNode of getBinaryNodeChildren(getBinaryNodeChild(node, 'participants'), 'to')) {
    const enc = getBinaryNodeChild(toNode, 'enc');
    const type = enc?.attrs.type;
    const target = ctx.accounts.resolveJid(toNode.attrs.jid);
    if (!target || !enc || (type !== 'pkmsg' && type !== 'msg') || !(enc.content instanceof Uint8Array)) continue;
    if (target.device !== 0) {
      companions.set(`${target.account.pn}:${target.device}`, { type, ciphertext: Buffer.from(enc.content) });
      continue;
    }
    try {
      const padded = await ctx.phones.decryptFromCompanion(target.account.pn, sender.lid, senderDevice, type, enc.content);
      const msg = proto.Message.decode(unpadRandomMax16(padded));
      const item = msg.senderKeyDistributionMessage ?? msg.deviceSentMessage?.message?.senderKeyDistributionMessage;
      if (item?.axolotlSenderKeyDistributionMessage) onDistribution(target.account, item.axolotlSenderKeyDistributionMessage);
    } catch (err) {
      onError(err, toNode.attrs.jid);
    }
  }
  return companions;
}
