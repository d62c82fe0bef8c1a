/**
 * The admin API's view of what a phone received (`GET /accounts/:phone/messages`): each message row with
 * its classified content, the decrypted media, current reactions, edit history and revocation, aggregated
 * from every message of that phone's conversations (both directions). Group messages the phone received (it was a
 * member when they were sent) are included, with `groupId` and `to` = the group JID.
 */
import { proto } from '@whiskeysockets/baileys';
import type { Store, MessageRow } from './store.ts';
import { classify, mentionedJids, type Classified } from './content.ts';
import { formatPhoneNumber } from './phone-number.ts';

export interface MessageView {
  id: string;
  from: string;
  to: string;
  type: string;
  text: string;
  timestamp: number;
  replyTo: string | null;
  media?: { base64: string | null; mimetype: string; filename?: string; caption?: string; ptt?: boolean };
  location?: Classified['location'];
  contact?: Classified['contact'];
  reaction?: Classified['reaction'];
  edit?: Classified['edit'];
  revoke?: Classified['revoke'];
  reactions: Array<{ from: string; emoji: string }>;
  edits: Array<{ text: string; timestamp: number }>;
  revoked: boolean;
  /** The message came forwarded (contextInfo.isForwarded); absent otherwise. */
  forwarded?: boolean;
  /** Phone numbers that read this message (the receiving phone, once it sent a read receipt). */
  readBy: string[];
  /** `<id>@g.us` of a group message (absent for 1:1 messages). */
  groupId?: string;
  /** Phone numbers mentioned (`contextInfo.mentionedJid`, LIDs resolved); absent when none. */
  mentions?: string[];
}

const pairKey = (a: string, b: string, id: string): string => `${a < b ? a : b}|${a < b ? b : a}|${id}`;
/** The conversation-scoped key of message `id` in the chat of `row` (a group or a pair of phones). */
const chatKey = (row: MessageRow, id: string): string =>
  row.groupId !== null ? `g|${row.groupId}|${id}` : pairKey(row.fromPn, row.toPn, id);
const bySeq = (a: MessageRow, b: MessageRow): number => a.ts - b.ts || a.seq - b.seq;

function decode(row: MessageRow): Classified {
  try {
    return classify(proto.Message.decode(row.message));
  } catch {
    return { type: 'other', text: row.text, replyTo: null };
  }
}

/** Every message received by `pn`, oldest first, in the admin API shape. */
export function receivedMessagesView(store: Store, pn: string): MessageView[] {
  const reactions = new Map<string, Map<string, string>>();
  const edits = new Map<string, Array<{ text: string; timestamp: number }>>();
  const revoked = new Set<string>();
  for (const row of [...store.listInvolving(pn), ...store.listGroupMessagesSeenBy(pn)]) {
    const c = decode(row);
    if (c.reaction) {
      const key = chatKey(row, c.reaction.messageId);
      let byFrom = reactions.get(key);
      if (!byFrom) reactions.set(key, (byFrom = new Map()));
      byFrom.delete(row.fromPn); // the latest reaction of a sender wins; "" removes it
      if (c.reaction.emoji) byFrom.set(row.fromPn, c.reaction.emoji);
    } else if (c.edit) {
      const key = chatKey(row, c.edit.messageId);
      let list = edits.get(key);
      if (!list) edits.set(key, (list = []));
      list.push({ text: c.edit.text, timestamp: row.ts });
    } else if (c.revoke) {
      revoked.add(chatKey(row, c.revoke.messageId));
    }
  }
  const readBy = new Map<string, Set<string>>();
  for (const r of store.listReceiptsFrom(pn)) {
    if (r.type !== 'read') continue;
    for (const id of r.msgIds) {
      let set = readBy.get(id);
      if (!set) readBy.set(id, (set = new Set()));
      set.add(formatPhoneNumber(r.fromPn));
    }
  }

  const received = [...store.listReceived(pn), ...store.listGroupReceived(pn)].sort(bySeq);
  return received.map((row) => {
    const c = decode(row);
    const key = chatKey(row, row.msgId);
    const view: MessageView = {
      id: row.msgId,
      from: formatPhoneNumber(row.fromPn),
      to: row.groupId !== null ? `${row.groupId}@g.us` : formatPhoneNumber(row.toPn),
      type: c.type === 'other' ? 'text' : c.type,
      text: row.text ?? '',
      timestamp: row.ts,
      replyTo: c.replyTo,
      reactions: [...(reactions.get(key) ?? new Map<string, string>())].map(([from, emoji]) => ({
        from: formatPhoneNumber(from),
        emoji,
      })),
      edits: edits.get(key) ?? [],
      revoked: revoked.has(key),
      readBy: [...(readBy.get(row.msgId) ?? [])],
    };
    if (c.media) {
      const plaintext = store.getMessageMedia(row.fromPn, row.msgId);
      const { mimetype, filename, caption, ptt } = c.media;
      view.media = {
        base64: plaintext ? plaintext.toString('base64') : null,
        mimetype,
        ...(filename !== undefined ? { filename } : {}),
        ...(caption !== undefined ? { caption } : {}),
        ...(ptt !== undefined ? { ptt } : {}),
      };
    }
    if (c.location) view.location = c.location;
    if (c.contact) view.contact = c.contact;
    if (c.reaction) view.reaction = c.reaction;
    if (c.edit) view.edit = c.edit;
    if (c.revoke) view.revoke = c.revoke;
    if (c.forwarded) view.forwarded = true;
    if (row.groupId !== null) view.groupId = `${row.groupId}@g.us`;
    const mentions = mentionsOf(store, row);
    if (mentions.length) view.mentions = mentions;
    return view;
  });
}

/** The phone numbers a message mentions (PN JIDs as they are, LID JIDs through the account table). */
function mentionsOf(store: Store, row: MessageRow): string[] {
  let jids: string[];
  try {
    jids = mentionedJids(proto.Message.decode(row.message));
  } catch {
    return [];
  }
  return jids.map((jid) => {
    const [user = '', server = ''] = jid.split('@');
    const bare = user.split(':')[0] ?? '';
    const pn = server === 'lid' ? store.getAccountByLid(bare)?.pn : bare;
    return pn ? formatPhoneNumber(pn) : jid;
  });
}
