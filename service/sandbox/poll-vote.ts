/** A simulated phone's poll vote, encrypted as WhatsApp clients do (Baileys decrypts it with `decryptPollVote`). */
import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { proto } from '@whiskeysockets/baileys';

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
