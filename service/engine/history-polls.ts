/**
 * Poll votes that arrive with the history sync at pairing. A phone does not send votes as history messages: each
 * poll carries its votes in `WebMessageInfo.pollUpdates` (field 45), already decrypted — the vote message's key
 * (who voted), a `PollVoteMessage` whose `selectedOptions` are SHA-256 hashes of the chosen option names, and the
 * vote's time (Baileys issue #561 "only pollCreationMessages are received … look at message.pollUpdates";
 * whatsmeow PR #1151). They are recorded on the stored polls like live votes (the latest vote of each voter), with
 * no `poll.vote` event (history messages announce nothing either).
 * Votes that do come as encrypted `pollUpdateMessage`s in a history chunk are opened with the poll's stored secret.
 */
import type { WAMessage } from '@whiskeysockets/baileys';
import type { Store } from '../db/store.ts';
import { classify, messageIdOfKey, senderOf, chatIdOf, type ModelContext } from './message-model.ts';
import { decryptVote, optionHashes } from './polls.ts';

interface HistoryVote {
  pollId: string;
  voter: string;
  options: string[];
  /** Unix seconds. */
  timestamp: number;
}

/**
 * Records the votes of a history chunk's messages on their polls, which must be stored already (the chunk's
 * messages are written first). Runs inside the caller's transaction. Returns how many votes were recorded.
 */
export function storeHistoryPollVotes(store: Store, connectionId: string, messages: WAMessage[], ctx: ModelContext): number {
  const votes: HistoryVote[] = [];
  for (const msg of messages) {
    if (msg.pollUpdates?.length) votes.push(...aggregatedVotes(store, connectionId, msg, ctx));
    const kind = classify(msg);
    if (kind.kind === 'pollVote') {
      const vote = encryptedVote(store, connectionId, msg, kind, ctx);
      if (vote) votes.push(vote);
    }
  }
  // Oldest first, so the latest vote of each voter is the one that stays.
  votes.sort((a, b) => a.timestamp - b.timestamp);
  let recorded = 0;
  for (const v of votes) if (store.messages.vote(connectionId, v.pollId, v.voter, v.options, v.timestamp)) recorded++;
  return recorded;
}

/** The decrypted votes a poll message carries in `pollUpdates`, mapped to option names of the stored poll. */
function aggregatedVotes(store: Store, connectionId: string, msg: WAMessage, ctx: ModelContext): HistoryVote[] {
  const pollId = messageIdOfKey(msg.key, ctx);
  const poll = store.messages.get(connectionId, pollId)?.poll;
  if (!poll) return [];
  const names = optionHashes(poll);
  const chatId = chatIdOf(msg.key, ctx);
  const out: HistoryVote[] = [];
  for (const u of msg.pollUpdates ?? []) {
    if (!u.pollUpdateMessageKey || !u.vote) continue;
    const voter = senderOf({ key: u.pollUpdateMessageKey } as WAMessage, chatId, ctx).senderJid;
    if (!voter) continue;
    const options = (u.vote.selectedOptions ?? [])
      .map((h) => names.get(Buffer.from(h).toString('hex')))
      .filter((n): n is string => n !== undefined);
    const ms = Number(u.senderTimestampMs ?? 0);
    out.push({ pollId, voter, options, timestamp: ms ? Math.floor(ms / 1000) : Number(msg.messageTimestamp ?? 0) });
  }
  return out;
}

/** A `pollUpdateMessage` of the chunk itself, opened with the stored poll's secret; undefined when it cannot be. */
function encryptedVote(
  store: Store,
  connectionId: string,
  msg: WAMessage,
  kind: Extract<ReturnType<typeof classify>, { kind: 'pollVote' }>,
  ctx: ModelContext,
): HistoryVote | undefined {
  const chatId = chatIdOf(msg.key, ctx);
  const target = store.messages.findByChatAndKey(connectionId, chatId, kind.pollKey.id ?? '');
  const stored = target && store.messages.poll(connectionId, target.id);
  if (!target || !stored) return undefined;
  const options = decryptVote({
    msg,
    pollKey: kind.pollKey,
    vote: kind.vote,
    poll: target,
    secret: stored.secret,
    raw: stored.raw,
    ownJid: ctx.ownJid,
    ownLid: ctx.ownLid,
  });
  if (!options) return undefined;
  const voter = senderOf(msg, chatId, ctx).senderJid;
  const timestamp = kind.timestampMs ? Math.floor(kind.timestampMs / 1000) : Number(msg.messageTimestamp ?? 0);
  return voter ? { pollId: target.id, voter, options, timestamp } : undefined;
}
