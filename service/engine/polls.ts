/**
 * Poll votes: decryption of an incoming `pollUpdateMessage` with the poll's `messageSecret` and mapping of the
 * selected option hashes (SHA-256 of each option name) back to option names.
 * Protocol facts from Baileys rc14 `decryptPollVote` (lib/Utils/process-message.js): the key is derived from the
 * poll's message id, the creator's JID and the voter's JID; AES-256-GCM authenticates it, so a wrong JID guess
 * fails cleanly. Which address form (phone JID or LID) the voting phone used is not in the vote, so each known
 * form of both parties is tried.
 */
import { createHash } from 'node:crypto';
import { decryptPollVote, jidNormalizedUser, proto, type WAMessage } from '@whiskeysockets/baileys';
import type { Message, MessagePoll } from '../db/messages.ts';

export interface VoteInput {
  /** The vote message (its key names the voter). */
  msg: WAMessage;
  /** Key of the poll creation message, as the vote names it. */
  pollKey: proto.IMessageKey;
  vote: proto.Message.IPollEncValue;
  /** The stored poll record. */
  poll: Message;
  /** The stored poll's 32-byte messageSecret (null when unknown: the vote cannot be read). */
  secret: Buffer | null;
  /** The stored poll's raw WebMessageInfo (its key holds the creator's address as received). */
  raw?: Buffer | null;
  ownJid: string | null;
  ownLid: string | null;
}

/** Option name of each option hash (hex SHA-256 of the name) of a poll. */
export function optionHashes(poll: MessagePoll): Map<string, string> {
  return new Map(poll.options.map((o) => [createHash('sha256').update(o.name).digest('hex'), o.name]));
}

const uniq = (xs: Array<string | null | undefined>) => [...new Set(xs.filter((x): x is string => !!x).map((x) => jidNormalizedUser(x)))];

/**
 * The option names a vote selects (empty: the voter withdrew the vote); undefined when it cannot be decrypted.
 */
export function decryptVote(input: VoteInput): string[] | undefined {
  const { msg, pollKey, vote, poll, secret } = input;
  if (!secret || !poll.poll || !vote.encPayload || !vote.encIv) return undefined;
  const rawKey = input.raw ? proto.WebMessageInfo.decode(input.raw).key : undefined;
  const creators = poll.fromMe
    ? uniq([input.ownJid, input.ownLid])
    : uniq([rawKey?.participant, rawKey?.remoteJid?.endsWith('@g.us') ? null : rawKey?.remoteJid, pollKey.participant, poll.senderJid]);
  const key = msg.key as WAMessage['key'] & { participantAlt?: string; remoteJidAlt?: string };
  const voters = msg.key.fromMe
    ? uniq([input.ownJid, input.ownLid])
    : uniq([key.participant, key.participantAlt, key.remoteJid?.endsWith('@g.us') ? null : key.remoteJid, key.remoteJidAlt]);
  for (const pollCreatorJid of creators) {
    for (const voterJid of voters) {
      try {
        const decrypted = decryptPollVote(vote, { pollCreatorJid, pollMsgId: pollKey.id ?? '', pollEncKey: secret, voterJid });
        const names = optionHashes(poll.poll);
        return (decrypted.selectedOptions ?? [])
          .map((h) => names.get(Buffer.from(h).toString('hex')))
          .filter((n): n is string => n !== undefined);
      } catch {
        // wrong address form: authentication failed; try the next pair
      }
    }
  }
  return undefined;
}
