/**
 * A simulated phone's poll vote, encrypted as WhatsApp clients do (Baileys decrypts it with `decryptPollVote`), and
 * opened again for the history sync.
 */
import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { decryptPollVote, proto } from '@whiskeysockets/baileys';

/**
 * Encrypts a vote the way a phone does (the inverse of Baileys' `decryptPollVote`): the sandbox's simulated phones
 * vote with it, and tests build real votes. Key = HMAC(HMAC(secret, key 0³²), id‖creator‖voter‖"Poll Vote"‖0x01);
 * AES-256-GCM, 12-byte IV, AAD `<pollMsgId>\0<voterJid>`, tag appended.
 */
export function encryptPollVote(
  selectedOptionNames: string[],
  ctx: { pollCreatorJid: string; pollMsgId: string; pollEncKey: Uint8Array; voterJid: string },
  iv: Buffer = randomBytes(12),
): { encPayload: Buffer; encIv: Buffer } {
  const sign = Buffer.concat([
    Buffer.from(ctx.pollMsgId),
    Buffer.from(ctx.pollCreatorJid),
    Buffer.from(ctx.voterJid),
    Buffer.from('Poll Vote'),
    Buffer.from([1]),
  ]);
  const key0 = createHmac('sha256', Buffer.alloc(32)).update(ctx.pollEncKey).digest();
  const key = createHmac('sha256', key0).update(sign).digest();
  const plain = proto.Message.PollVoteMessage.encode({
    selectedOptions: selectedOptionNames.map((n) => createHash('sha256').update(n).digest()),
  }).finish();
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`${ctx.pollMsgId}\u0000${ctx.voterJid}`));
  const enc = Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return { encPayload: enc, encIv: iv };
}

/**
 * The selected option hashes of a stored vote (what a phone puts, decrypted, into `pollUpdates` of the poll in a
 * history sync), trying each address form (phone-number JID, LID) the creator and the voter may have used; undefined
 * when none authenticates. Decryption is Baileys' `decryptPollVote`.
 */
export function openPollVote(
  vote: proto.Message.IPollEncValue,
  ctx: { pollMsgId: string; pollEncKey: Uint8Array; creatorJids: string[]; voterJids: string[] },
): Uint8Array[] | undefined {
  if (!vote.encPayload || !vote.encIv) return undefined;
  for (const pollCreatorJid of ctx.creatorJids) {
    for (const voterJid of ctx.voterJids) {
      try {
        return decryptPollVote(vote, { pollCreatorJid, pollMsgId: ctx.pollMsgId, pollEncKey: ctx.pollEncKey, voterJid }).selectedOptions ?? [];
      } catch {
        // another address form: the GCM tag did not match
      }
    }
  }
  return undefined;
}
