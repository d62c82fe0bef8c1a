/**
 * Linking by phone code ("Link with phone number instead"): the engine's side of Baileys' `requestPairingCode`.
 *
 * Protocol (rc14 `lib/Socket/socket.js requestPairingCode`, `lib/Socket/messages-recv.js` case
 * `link_code_companion_reg`): on a socket that shows QR codes (registration), `requestPairingCode(number)` makes an
 * 8-character code (Crockford base32 of 5 random bytes), sends `companion_hello` with the socket's pairing ephemeral
 * key wrapped under it, and answers the phone's `primary_hello` by itself; the phone then sends the same
 * `pair-success` as after a QR scan (its HMAC keyed with a secret both sides derived), so the session goes
 * `connected` → 515 → `online` unchanged. The QR codes keep rotating meanwhile; either way of linking works.
 *
 * Two Baileys traits the session must undo:
 * - `requestPairingCode` sets `creds.me = { id: <number>@s.whatsapp.net, name: '~' }` before anything is linked
 *   (the jid of `companion_finish`). `creds.me` alone therefore does not mean "linked": `creds.account` (the signed
 *   device identity of `pair-success`) does. See {@link isLinked}.
 * - Baileys logs in instead of registering whenever `creds.me` is set (`validateConnection`), so a socket opened
 *   after an unfinished code request (the QR refs ran out, a network drop, a service restart) would log in as a
 *   device that does not exist and be logged out (401). {@link forgetUnfinishedPairing} clears it before each socket.
 *
 * A code stays usable for the whole pairing: when the session opens a new socket for fresh QR codes, the same code
 * is announced again on it (Baileys' `customPairingCode` with the stored ephemeral key), so a code being typed on the
 * phone does not die with the socket that first sent it. Asking again for the same number returns the same code;
 * another number gets a new one.
 */
import type { AuthenticationCreds, WASocket } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';

/** Whether creds belong to a linked device (`pair-success` stored its signed identity), not a pending code request. */
export function isLinked(creds: AuthenticationCreds | undefined): boolean {
  return !!creds?.me?.id && !!creds.account;
}

/** The own identity of linked creds; undefined while not linked (also while a phone code is pending). */
export function linkedMe(creds: AuthenticationCreds | undefined): AuthenticationCreds['me'] {
  return creds && isLinked(creds) ? creds.me : undefined;
}

/**
 * Drops what an unfinished `requestPairingCode` left in `creds` (`me`, `pairingCode`, `registered`), so the next
 * socket registers (QR refs) rather than logging in as a device that does not exist. Linked creds are untouched.
 * @returns whether anything was dropped.
 */
export function forgetUnfinishedPairing(creds: AuthenticationCreds): boolean {
  if (isLinked(creds) || (!creds.me && !creds.pairingCode)) return false;
  creds.me = undefined;
  creds.pairingCode = undefined;
  creds.registered = false;
  return true;
}

/** `ABCDEFGH` → `ABCD-EFGH`, as WhatsApp shows a linking code. */
export function formatPairingCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** The phone-code request of one session: which number, which code, announced again on each new socket. */
export class PhoneCodePairing {
  #pending: { digits: string; code: string } | undefined;

  constructor(private readonly log: Logger) {}

  /**
   * Asks for a code on `sock` (a socket showing QR codes) for the phone number `digits` (E.164 without `+`).
   * @returns the code as shown, `ABCD-EFGH`. @throws what Baileys' send throws (the socket closed meanwhile).
   */
  async request(sock: WASocket, digits: string): Promise<string> {
    const same = this.#pending?.digits === digits ? this.#pending.code : undefined;
    const code = await sock.requestPairingCode(digits, same);
    this.#pending = { digits, code };
    this.log.info({ phoneNumber: `+${digits}` }, 'pairing code requested');
    return formatPairingCode(code);
  }

  /**
   * A new socket of the session (called right after it is made, with its creds): once it shows its first QR code, a
   * pending code is announced on it again. Linked creds end the request.
   */
  attach(sock: WASocket, creds: AuthenticationCreds): void {
    if (isLinked(creds)) {
      this.#pending = undefined;
      return;
    }
    const pending = this.#pending;
    if (!pending) return;
    const onUpdate = (u: { qr?: string; connection?: string }) => {
      if (!u.qr && u.connection !== 'close') return;
      sock.ev.off('connection.update', onUpdate);
      if (!u.qr || this.#pending !== pending) return;
      sock.requestPairingCode(pending.digits, pending.code).then(
        () => this.log.info({ phoneNumber: `+${pending.digits}` }, 'pairing code announced again on a new socket'),
        (err: unknown) => this.log.warn({ err }, 'pairing code could not be announced again'),
      );
    };
    sock.ev.on('connection.update', onUpdate);
  }
}
