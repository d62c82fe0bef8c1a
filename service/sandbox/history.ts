/**
 * The initial history sync a phone sends to a newly linked companion (brief §B8; client side in
 * `lib/Utils/history.js` and `lib/Utils/process-message.js`).
 *
 * Owns: building `proto.HistorySync{INITIAL_BOOTSTRAP}` from the sandbox's conversations of one account
 * (per chat: id, name, unreadCount, timestamps, LID/PN, newest-first `WebMessageInfo`s with
 * key/fromMe/pushName/status) plus `phoneNumberToLidMappings` for every account, and wrapping it
 * zlib-deflated as `initialHistBootstrapInlinePayload` of a `HISTORY_SYNC_NOTIFICATION` protocol message
 * (inline, so the client downloads nothing).
 */
import { deflateSync } from 'node:zlib';
import { proto } from '@whiskeysockets/baileys';
import type { Accounts } from './accounts.ts';
import type { AccountRow, MessageRow, Store } from './store.ts';
import { lidJid, pnJid } from './phone-number.ts';

/** Most recent messages kept per conversation in the bootstrap payload. */
export const HISTORY_MESSAGES_PER_CHAT = 500;

/**
 * Build the history-sync protocol message for `account`'s companion. Synchronous on purpose: the caller
 * snapshots the conversations and marks the device as synced in the same tick, so no message can fall
 * between the snapshot and the live queue.
 */
export function buildHistorySyncMessage(store: Store, accounts: Accounts, account: AccountRow): proto.IMessage {
  const byPeer = new Map<string, MessageRow[]>();
  for (const m of store.listInvolving(account.pn)) {
    const peer = m.fromPn === account.pn ? m.toPn : m.fromPn;
    let list = byPeer.get(peer);
    if (!list) byPeer.set(peer, (list = []));
    list.push(m);
  }

  const conversations: proto.IConversation[] = [];
  for (const [peerPn, all] of byPeer) {
    const msgs = all.slice(-HISTORY_MESSAGES_PER_CHAT);
    const peer = accounts.get(peerPn);
    const chatJid = pnJid(peerPn);
    let unread = 0;
    for (let i = msgs.length - 1; i >= 0 && msgs[i]!.fromPn !== account.pn; i--) unread++;
    const last = msgs[msgs.length - 1]!;
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
  conversations.sort((a, b) => Number(b.conversationTimestamp) - Number(a.conversationTimestamp));

  const phoneNumberToLidMappings = accounts.list().map((a) => ({ pnJid: pnJid(a.pn), lidJid: lidJid(a.lid) }));
  const payload = proto.HistorySync.encode({
    syncType: proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP,
    conversations,
    phoneNumberToLidMappings,
    chunkOrder: 0,
    progress: 100,
  }).finish();

  return {
    protocolMessage: {
      type: proto.Message.ProtocolMessage.Type.HISTORY_SYNC_NOTIFICATION,
      historySyncNotification: {
        syncType: proto.Message.HistorySyncType.INITIAL_BOOTSTRAP,
        chunkOrder: 0,
        progress: 100,
        initialHistBootstrapInlinePayload: deflateSync(payload),
      },
    },
  };
}
