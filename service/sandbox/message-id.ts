/**
 * Message ids in the shape WhatsApp clients use and Baileys' `generateMessageIDV2` makes: "3EB0" + 18 upper-case
 * hex digits. Drawn from a pooled random buffer: the sandbox makes one per simulated message, and
 * `generateMessageIDV2` costs a `randomBytes` call, a BigInt and a SHA-256 each (a few % of the sandbox's CPU at
 * 500 msg/s).
 */
import { randomFillSync } from 'node:crypto';

const ID_BYTES = 9;
const pool = Buffer.alloc(ID_BYTES * 512);
let offset = pool.length;

/** A fresh random message id, e.g. `3EB0A1B2C3D4E5F6A7B8C9`. */
export function newMessageId(): string {
  if (offset + ID_BYTES > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = '3EB0' + pool.toString('hex', offset, offset + ID_BYTES).toUpperCase();
  offset += ID_BYTES;
  return id;
}
