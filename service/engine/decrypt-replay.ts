/**
 * Decrypt replay: a message Baileys decrypted but never handed to the application decrypts again when the server
 * redelivers it.
 *
 * Why: rc14's `handleMessage` (lib/Socket/messages-recv.js) decrypts, then sends the delivery receipt, then
 * `upsertMessage`s. When the socket is closing at that moment (the server dropped the connection in the middle of a
 * burst), `sendRawMessage` throws "Connection Closed" and the message is never upserted — but the decrypt already
 * advanced the contact's Signal chain, and those key writes are kept. The server, which got no receipt, redelivers
 * the same ciphertext after the reconnect (as WhatsApp's server does: docs/durability.md); libsignal then throws `MessageCounterError` ("Key used already or never filled"), which Baileys answers
 * with `<ack error="487">` as a duplicate, and the server drops a message the application never saw.
 *
 * So the session keeps the plaintext of the ciphertexts it decrypted recently (bounded, in memory, across its
 * sockets) and, when a redelivered ciphertext fails to decrypt, hands Baileys the plaintext it had: Baileys then
 * receipts and upserts it as any message, and the engine stores it (once: an id it already has changes nothing).
 * A replay only ever returns what the same bytes decrypted to before, so it cannot let a forged message through.
 */
import { createHash } from 'node:crypto';
import type { SignalRepositoryWithLIDStore, SocketConfig } from '@whiskeysockets/baileys';

/** Plaintexts kept per session: a reconnect's window of in-flight messages is far smaller (a few hundred at most). */
const REPLAY_MAX = 2_048;

type MakeSignalRepository = SocketConfig['makeSignalRepository'];

export class DecryptReplay {
  /**
   * @param hooks.decrypting called right before every decrypt: the session holds its Signal key writes and frames
   *   from then until the message is handed to the store (session-lifecycle.ts `#holdForDecrypt`) — from before, not
   *   after: Baileys records the decrypt's key update several microtasks before its result comes back here.
   * @param hooks.decrypted called when it succeeded (not for a replay).
   * @param hooks.failed called when a decrypt failed and nothing was replayed (the keys did not move).
   */
  constructor(
    private readonly hooks: { decrypting(): void; decrypted(): void; failed(): void } = {
      decrypting: () => undefined,
      decrypted: () => undefined,
      failed: () => undefined,
    },
  ) {}

  /** sha256 of `type:ciphertext` (or the group and the skmsg) → the plaintext it decrypted to; oldest first. */
  readonly #plaintexts = new Map<string, Uint8Array>();
  /** How many redelivered ciphertexts were answered from memory (for logs and tests). */
  replayed = 0;

  /**
   * Wraps a Signal repository factory (Baileys' `makeSignalRepository` option): the repositories it makes remember
   * what they decrypt and replay it for a ciphertext that no longer decrypts.
   */
  wrap(make: MakeSignalRepository): MakeSignalRepository {
    return (auth, logger, pnToLID) => {
      const repo = make(auth, logger, pnToLID);
      const decryptMessage = repo.decryptMessage.bind(repo);
      const decryptGroupMessage = repo.decryptGroupMessage.bind(repo);
      const wrapped: SignalRepositoryWithLIDStore = {
        ...repo,
        decryptMessage: (opts) => this.#remembered(opts.type, opts.ciphertext, () => decryptMessage(opts)),
        decryptGroupMessage: (opts) =>
          this.#remembered(`skmsg:${opts.group}:${opts.authorJid}`, opts.msg, () => decryptGroupMessage(opts)),
      };
      return wrapped;
    };
  }

  async #remembered(kind: string, ciphertext: Uint8Array, decrypt: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const key = createHash('sha256').update(kind).update(':').update(ciphertext).digest('base64');
    this.hooks.decrypting();
    try {
      const plaintext = await decrypt();
      this.hooks.decrypted();
      this.#plaintexts.delete(key);
      this.#plaintexts.set(key, plaintext);
      if (this.#plaintexts.size > REPLAY_MAX) this.#plaintexts.delete(this.#plaintexts.keys().next().value!);
      return plaintext;
    } catch (err) {
      const plaintext = this.#plaintexts.get(key);
      if (!plaintext) {
        this.hooks.failed();
        throw err;
      }
      this.replayed++;
      return plaintext;
    }
  }
}
