/**
 * The initial history sync a phone sends to a newly linked companion (brief §B8; client side in
 * `lib/Utils/history.js` and `lib/Utils/process-message.js`).
 *
 * Owns: building `proto.HistorySync` chunks from the sandbox's conversations of one account
 * (per chat: id, name, unreadCount, timestamps, LID/PN, newest-first `WebMessageInfo`s with
 * key/fromMe/pushName/status; at most `messagesPerChat` newest messages per chat, none with 0) plus
 * `phoneNumberToLidMappings` for every account, each chunk zlib-deflated as
 * `initialHistBootstrapInlinePayload` of a `HISTORY_SYNC_NOTIFICATION` protocol message (inline, so the
 * client downloads nothing). Chunk 0 is `INITIAL_BOOTSTRAP`, later chunks (at most `messagesPerChunk`
 * messages each, most recent chats first) are `RECENT`, the last with progress 100.
 * The account's groups are conversations too (`<id>@g.us`, named by subject, with their participants and ranks;
 * each message keyed with its sender as `participant` in the group's addressing mode).
 * Poll votes are not history messages: as a phone does, each poll carries its votes, decrypted, in `pollUpdates`
 * (WebMessageInfo field 45: the vote message's key, the selected options as SHA-256 hashes of their names, the
 * vote's time; Baileys issue #561 "only pollCreationMessages are received", whatsmeow PR #1151).
 */
import { deflateSync } from 'node:zlib';
import { proto } from '@whiskeysockets/baileys';
import type { Accounts } from './accounts.ts';
import type { AccountRow, MessageRow, Store } from './store.ts';
import { lidJid, memberJid, pnJid } from './phone-number.ts';
import { openPollVote } from './poll-vote.ts';

/** Default: most recent messages kept per conversation in the history sync. */
export const HISTORY_MESSAGES_PER_CHAT = 100_000;
/** Default: messages per history-sync message (chunk). */
export const HISTORY_MESSAGES_PER_CHUNK = 5_000;

export interface HistoryLimits {
  messagesPerChat: number;
  messagesPerChunk: number;
}

/**
 * Build the history-sync protocol messages (chunks, in delivery order) for `account`'s companion.
 * Synchronous on purpose: the caller snapshots the conversations and marks the device as synced in the
 * same tick, so no message can fall between the snapshot and the live queue.
 */
export function buildHistorySyncMessages(
  store: Store,
  accounts: Accounts,
  account: AccountRow,
  limits: HistoryLimits = { messagesPerChat: HISTORY_MESSAGES_PER_CHAT, messagesPerChunk: HISTORY_MESSAGES_PER_CHUNK },
): proto.IMessage[] {
  const byPeer = new Map<string, MessageRow[]>();
  for (const m of store.listInvolving(account.pn)) {
    const peer = m.fromPn === account.pn ? m.toPn : m.fromPn;
    let list = byPeer.get(peer);
    if (!list) byPeer.set(peer, (list = []));
    list.push(m);
  }

  const conversations: proto.IConversation[] = [];
  for (const [peerPn, rows] of byPeer) {
    const peer = accounts.get(peerPn);
    const chatJid = pnJid(peerPn);
    const { messages: all, pollUpdates } = splitPollVotes(rows, accounts, (v) => ({ remoteJid: chatJid, fromMe: v.fromPn === account.pn, id: v.msgId }));
    if (all.length === 0) continue;
    const msgs = limitedHistory(all, limits);
    let unread = 0;
    for (let i = msgs.length - 1; i >= 0 && msgs[i]!.fromPn !== account.pn; i--) unread++;
    const last = all[all.length - 1]!; // the chat's activity, even when its messages are left out
    const history: proto.IHistorySyncMsg[] = [];
    for (let i = msgs.length - 1; i >= 0; i--) {
      const m = msgs[i]!;
      const fromMe = m.fromPn === account.pn;
      history.push({
        msgOrderId: m.seq,
        message: {
          key: { remoteJid: chatJid, fromMe, id: m.msgId },
          message: proto.Message.decode(m.message),
          messageTimestamp: m.ts,
          ...(pollUpdates.has(m.msgId) && { pollUpdates: pollUpdates.get(m.msgId) }),
          pushName: fromMe ? account.pushName : peer?.pushName,
          status: fromMe
            ? peer
              ? proto.WebMessageInfo.Status.DELIVERY_ACK
              : proto.WebMessageInfo.Status.SERVER_ACK
            : proto.WebMessageInfo.Status.READ,
        },
      });
    }
    conversations.push({
      id: chatJid,
      name: peer?.pushName,
      displayName: peer?.pushName,
      pnJid: chatJid,
      lidJid: peer ? lidJid(peer.lid) : undefined,
      unreadCount: unread,
      conversationTimestamp: last.ts,
      lastMsgTimestamp: last.ts,
      messages: history,
    });
  }
  conversations.push(...groupConversations(store, accounts, account, limits));
  conversations.sort((a, b) => Number(b.conversationTimestamp) - Number(a.conversationTimestamp));

  const phoneNumberToLidMappings = accounts.list().map((a) => ({ pnJid: pnJid(a.pn), lidJid: lidJid(a.lid) }));

  // split into chunks of at most messagesPerChunk messages; a long chat may span several chunks
  const perChunk = Math.max(1, limits.messagesPerChunk);
  const chunks: proto.IConversation[][] = [[]];
  let inChunk = 0;
  for (const conv of conversations) {
    const msgs = conv.messages ?? [];
    let offset = 0;
    do {
      if (inChunk >= perChunk) {
        chunks.push([]);
        inChunk = 0;
      }
      const take = msgs.slice(offset, offset + (perChunk - inChunk));
      chunks[chunks.length - 1]!.push({ ...conv, messages: take });
      inChunk += take.length;
      offset += take.length;
    } while (offset < msgs.length);
  }

  return chunks.map((convs, i) => {
    const syncType =
      i === 0 ? proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP : proto.HistorySync.HistorySyncType.RECENT;
    const progress = Math.round(((i + 1) / chunks.length) * 100);
    const payload = proto.HistorySync.encode({
      syncType,
      conversations: convs,
      phoneNumberToLidMappings: i === 0 ? phoneNumberToLidMappings : [],
      chunkOrder: i,
      progress,
    }).finish();
    return {
      protocolMessage: {
        type: proto.Message.ProtocolMessage.Type.HISTORY_SYNC_NOTIFICATION,
        historySyncNotification: {
          syncType: syncType as unknown as proto.Message.HistorySyncType,
          chunkOrder: i,
          progress,
          initialHistBootstrapInlinePayload: deflateSync(payload),
        },
      },
    };
  });
}

/**
 * The newest `messagesPerChat` messages of a conversation; 0 sends none, so the conversation arrives as metadata
 * only (id, name, timestamps), as real phones send older chats.
 */
function limitedHistory(all: MessageRow[], limits: HistoryLimits): MessageRow[] {
  return limits.messagesPerChat > 0 ? all.slice(-limits.messagesPerChat) : [];
}

/** The history-sync conversations of `account`'s groups (every group it is in, with the messages it saw). */
function groupConversations(
  store: Store,
  accounts: Accounts,
  account: AccountRow,
  limits: HistoryLimits,
): proto.IConversation[] {
  const byGroup = new Map<string, MessageRow[]>();
  for (const m of store.listGroupHistory(account.pn)) {
    let list = byGroup.get(m.groupId!);
    if (!list) byGroup.set(m.groupId!, (list = []));
    list.push(m);
  }
  const Rank = proto.GroupParticipant.Rank;
  return store.listGroupsOf(account.pn).map((group) => {
    const jid = `${group.id}@g.us`;
    const participantOf = (pn: string) => {
      const a = accounts.get(pn);
      return a ? memberJid(group.addressingMode, a) : pnJid(pn);
    };
    const { messages: all, pollUpdates } = splitPollVotes(byGroup.get(group.id) ?? [], accounts, (v) => ({
      remoteJid: jid,
      fromMe: v.fromPn === account.pn,
      id: v.msgId,
      ...(v.fromPn === account.pn ? {} : { participant: participantOf(v.fromPn) }),
    }));
    const msgs = limitedHistory(all, limits);
    const history: proto.IHistorySyncMsg[] = [];
    for (let i = msgs.length - 1; i >= 0; i--) {
      const m = msgs[i]!;
      const fromMe = m.fromPn === account.pn;
      const sender = accounts.get(m.fromPn);
      const participant = sender ? memberJid(group.addressingMode, sender) : pnJid(m.fromPn);
      history.push({
        msgOrderId: m.seq,
        message: {
          key: { remoteJid: jid, fromMe, id: m.msgId, ...(fromMe ? {} : { participant }) },
          ...(fromMe ? {} : { participant }),
          message: proto.Message.decode(m.message),
          messageTimestamp: m.ts,
          ...(pollUpdates.has(m.msgId) && { pollUpdates: pollUpdates.get(m.msgId) }),
          pushName: sender?.pushName,
          status: fromMe ? proto.WebMessageInfo.Status.DELIVERY_ACK : proto.WebMessageInfo.Status.READ,
        },
      });
    }
    let unread = 0;
    for (let i = msgs.length - 1; i >= 0 && msgs[i]!.fromPn !== account.pn; i--) unread++;
    const last = all[all.length - 1]?.ts ?? group.createdAt;
    return {
      id: jid,
      name: group.subject,
      displayName: group.subject,
      unreadCount: unread,
      conversationTimestamp: last,
      lastMsgTimestamp: last,
      participant: store.listGroupParticipants(group.id).flatMap((p) => {
        const a = accounts.get(p.pn);
        if (!a) return [];
        const rank = p.role === 'superadmin' ? Rank.SUPERADMIN : p.role === 'admin' ? Rank.ADMIN : Rank.REGULAR;
        return [{ userJid: memberJid(group.addressingMode, a), rank }];
      }),
      messages: history,
    };
  });
}

/**
 * Splits a conversation's rows (oldest first) into the messages to sync and the votes, which become `pollUpdates`
 * of their polls, by poll message id: `keyOf` gives a vote message's key as the syncing account sees it. A vote is
 * opened with its poll's messageSecret (PN and LID forms of both parties tried); one that cannot be opened, or whose
 * poll is not in the conversation, is left out.
 */
function splitPollVotes(
  rows: MessageRow[],
  accounts: Accounts,
  keyOf: (vote: MessageRow) => proto.IMessageKey,
): { messages: MessageRow[]; pollUpdates: Map<string, proto.IPollUpdate[]> } {
  const messages: MessageRow[] = [];
  const pollUpdates = new Map<string, proto.IPollUpdate[]>();
  const byId = new Map(rows.map((r) => [r.msgId, r]));
  const forms = (pn: string) => {
    const a = accounts.get(pn);
    return a ? [pnJid(pn), lidJid(a.lid)] : [pnJid(pn)];
  };
  for (const row of rows) {
    // Only rows without text can be votes: the others need no decoding here.
    const vote = row.text === null ? proto.Message.decode(row.message).pollUpdateMessage : undefined;
    if (!vote) {
      messages.push(row);
      continue;
    }
    const pollId = vote.pollCreationMessageKey?.id ?? '';
    const pollRow = byId.get(pollId);
    const poll = pollRow && proto.Message.decode(pollRow.message);
    const secret = poll?.messageContextInfo?.messageSecret;
    if (!pollRow || !secret?.length || !vote.vote) continue;
    const selectedOptions = openPollVote(vote.vote, {
      pollMsgId: pollId,
      pollEncKey: secret,
      creatorJids: forms(pollRow.fromPn),
      voterJids: forms(row.fromPn),
    });
    if (!selectedOptions) continue;
    const list = pollUpdates.get(pollId) ?? [];
    list.push({ pollUpdateMessageKey: keyOf(row), vote: { selectedOptions }, senderTimestampMs: vote.senderTimestampMs ?? row.ts * 1000 });
    pollUpdates.set(pollId, list);
  }
  return { messages, pollUpdates };
}
