/**
 * Linking a companion by phone code ("Link with phone number instead"), the server and the primary phone's side of
 * the `link_code_companion_reg` exchange that Baileys' `requestPairingCode` drives (rc14
 * `lib/Socket/socket.js requestPairingCode` and `lib/Socket/messages-recv.js` case `link_code_companion_reg`).
 *
 * 1. The companion (a registering connection, already shown QR refs) sends
 *    `<iq type="set" xmlns="md"><link_code_companion_reg jid="<phone>@s.whatsapp.net" stage="companion_hello">`
 *    with `link_code_pairing_wrapped_companion_ephemeral_pub` = salt(32) ‖ iv(16) ‖ AES-256-CTR(key, ephemeralPub32),
 *    key = PBKDF2-SHA256(code, salt, 131 072 iterations, 32 bytes) (`lib/Utils/crypto.js derivePairingCodeKey`),
 *    `companion_server_auth_key_pub` (its Noise static key), `companion_platform_id`, `companion_platform_display`
 *    and `link_code_pairing_nonce`. The server stores it for that phone number and answers with a
 *    `link_code_pairing_ref`. The code itself never leaves the companion.
 * 2. The user types the code on the phone ({@link LinkCodes.enter}): the phone unwraps the companion's ephemeral key
 *    with it, makes its own ephemeral key pair and wraps the public half the same way; the server sends the companion
 *    `<notification type="link_code_companion_reg"><link_code_companion_reg stage="primary_hello">` with the ref,
 *    `link_code_pairing_wrapped_primary_ephemeral_pub` and `primary_identity_pub` (the phone's identity key).
 * 3. The companion answers `stage="companion_finish"` with `link_code_pairing_wrapped_key_bundle` = salt(32) ‖
 *    iv(12) ‖ AES-256-GCM(HKDF-SHA256(DH(ephemerals), salt, "link_code_pairing_key_bundle_encryption_key"),
 *    companionIdentityPub ‖ primaryIdentityPub ‖ random32), `companion_identity_public` and the ref. A wrong code
 *    gives the two sides different ephemeral keys, so the phone cannot open the bundle (GCM tag): that is how a wrong
 *    code shows, one round trip later, as on a real phone.
 * 4. Both sides derive advSecret = HKDF-SHA256(DH(ephemerals) ‖ DH(identities) ‖ random32, no salt, "adv_secret"),
 *    and the phone links the companion exactly as after a QR scan, with that secret in place of the QR's
 *    (`Pairing.pairWithSecret`: `pair-success` whose HMAC Baileys checks with its derived secret, then 515).
 *
 * A hello is valid while its connection is open and waiting to be linked; a newer hello of the same connection
 * replaces it. The phone takes the newest valid hello that named it, as a real phone shows the latest request.
 * Crypto uses node:crypto (not Baileys' helpers), so the sandbox checks Baileys against an independent
 * implementation; X25519 is libsignal's, as everywhere in the sandbox.
 */
import { createCipheriv, createDecipheriv, hkdfSync, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Curve, generateMessageIDV2, getBinaryNodeChild, jidDecode, type BinaryNode } from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import { unixNow } from './context.ts';
import { ScanError, type ScanResult } from './pairing.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow } from './store.ts';

const pbkdf2Async = promisify(pbkdf2);

/** PBKDF2 iterations of the code key (Baileys: `2 << 16`). */
const CODE_KEY_ITERATIONS = 2 << 16;
const BUNDLE_INFO = 'link_code_pairing_key_bundle_encryption_key';
const ADV_SECRET_INFO = 'adv_secret';
/** How long the phone waits for the companion's `companion_finish` (as a scan waits for `pair-device-sign`). */
const FINISH_TIMEOUT_MS = 15_000;
/** salt(32) ‖ iv(16) ‖ key(32) */
const WRAPPED_KEY_LENGTH = 80;
/** What a phone accepts as a typed code: 8 letters or digits once dashes and spaces are removed. */
const CODE_SHAPE = /^[0-9A-Z]{8}$/;

/** The normalised form of a code as typed (`abcd-efgh` → `ABCDEFGH`), or undefined when it is not 8 letters/digits. */
export function normaliseLinkCode(input: string): string | undefined {
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return CODE_SHAPE.test(code) ? code : undefined;
}

interface Hello {
  conn: ClientConnection;
  /** The phone number the companion named (E.164 digits). */
  pn: string;
  ref: string;
  wrappedEphemeral: Buffer;
  platformDisplay: string;
  at: number;
  /** Set while the phone waits for this hello's `companion_finish`. */
  finish: { deliver(node: BinaryNode): void; fail(err: Error): void } | undefined;
  busy: boolean;
}

function childBuffer(node: BinaryNode | undefined, tag: string): Buffer | undefined {
  const c = getBinaryNodeChild(node, tag)?.content;
  if (c instanceof Uint8Array) return Buffer.from(c);
  return typeof c === 'string' ? Buffer.from(c, 'utf8') : undefined;
}

/** The 32-byte key a code gives with `salt` (PBKDF2-SHA256, 131 072 iterations), off the event loop. */
function codeKey(code: string, salt: Buffer): Promise<Buffer> {
  return pbkdf2Async(Buffer.from(code, 'utf8'), salt, CODE_KEY_ITERATIONS, 32, 'sha256');
}

/** Opens salt(32) ‖ iv(16) ‖ AES-256-CTR(key) with `code`. CTR has no tag: a wrong code gives other bytes. */
async function unwrapKey(wrapped: Buffer, code: string): Promise<Buffer> {
  const key = await codeKey(code, wrapped.subarray(0, 32));
  const decipher = createDecipheriv('aes-256-ctr', key, wrapped.subarray(32, 48));
  return Buffer.concat([decipher.update(wrapped.subarray(48, 80)), decipher.final()]);
}

async function wrapKey(pub: Buffer, code: string): Promise<Buffer> {
  const salt = randomBytes(32);
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-ctr', await codeKey(code, salt), iv);
  return Buffer.concat([salt, iv, cipher.update(pub), cipher.final()]);
}

/** Opens the companion's key bundle, or undefined when the GCM tag does not verify (a wrong code). */
function openBundle(bundle: Buffer, ephemeralShared: Buffer): Buffer | undefined {
  if (bundle.length < 32 + 12 + 16) return undefined;
  const salt = bundle.subarray(0, 32);
  const iv = bundle.subarray(32, 44);
  const sealed = bundle.subarray(44);
  const key = Buffer.from(hkdfSync('sha256', ephemeralShared, salt, BUNDLE_INFO, 32));
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]);
  } catch {
    return undefined;
  }
}

export class LinkCodes {
  private readonly byConn = new Map<ClientConnection, Hello>();

  constructor(private readonly ctx: SandboxContext) {}

  /**
   * `<iq type="set" xmlns="md"><link_code_companion_reg stage=…>` from a client: stores a `companion_hello` (answering
   * with its ref) or hands a `companion_finish` to the phone waiting for it. Always sends exactly one reply.
   */
  onIq(conn: ClientConnection, iq: BinaryNode, reg: BinaryNode): void {
    const stage = reg.attrs.stage;
    if (stage === 'companion_hello') return this.onHello(conn, iq, reg);
    if (stage === 'companion_finish') return this.onFinish(conn, iq, reg);
    conn.replyError(iq, '400', 'bad-request');
  }

  private onHello(conn: ClientConnection, iq: BinaryNode, reg: BinaryNode): void {
    const decoded = jidDecode(reg.attrs.jid);
    const wrapped = childBuffer(reg, 'link_code_pairing_wrapped_companion_ephemeral_pub');
    const noiseKey = childBuffer(reg, 'companion_server_auth_key_pub');
    if (
      decoded?.server !== 's.whatsapp.net' ||
      !decoded.user ||
      wrapped?.length !== WRAPPED_KEY_LENGTH ||
      noiseKey?.length !== 32
    ) {
      conn.log.info('malformed companion_hello');
      return conn.replyError(iq, '400', 'bad-request');
    }
    // Only a client that is registering (has QR refs, not linked) may ask, with the Noise key it connected with.
    if (!this.ctx.pairing.waitingIdentity(conn) || !conn.clientStaticKey?.equals(noiseKey)) {
      conn.log.info('companion_hello from a connection that is not waiting to be linked');
      return conn.replyError(iq, '401', 'not-authorized');
    }
    if (!this.ctx.accounts.get(decoded.user)) {
      conn.log.info({ pn: decoded.user }, 'companion_hello for a number that has no account');
      return conn.replyError(iq, '404', 'item-not-found');
    }
    const previous = this.byConn.get(conn);
    if (previous?.busy) return conn.replyError(iq, '409', 'conflict');
    const ref = `2@${randomBytes(24).toString('base64')}`;
    this.byConn.set(conn, {
      conn,
      pn: decoded.user,
      ref,
      wrappedEphemeral: wrapped,
      platformDisplay: childBuffer(reg, 'companion_platform_display')?.toString('utf8') ?? '',
      at: Date.now(),
      finish: undefined,
      busy: false,
    });
    conn.log.info({ pn: decoded.user }, 'companion asked to be linked by phone code');
    conn.reply(iq, [
      {
        tag: 'link_code_companion_reg',
        attrs: {},
        content: [{ tag: 'link_code_pairing_ref', attrs: {}, content: Buffer.from(ref) }],
      },
    ]);
  }

  private onFinish(conn: ClientConnection, iq: BinaryNode, reg: BinaryNode): void {
    const hello = this.byConn.get(conn);
    const ref = childBuffer(reg, 'link_code_pairing_ref')?.toString('utf8');
    if (!hello || ref !== hello.ref) return conn.replyError(iq, '404', 'item-not-found');
    // The server relays; only the phone can tell whether the bundle opens.
    conn.reply(iq);
    const waiter = hello.finish;
    hello.finish = undefined;
    waiter?.deliver(reg);
  }

  /** The connection closed (or was linked): its hello can no longer be answered. */
  end(conn: ClientConnection): void {
    const hello = this.byConn.get(conn);
    if (!hello) return;
    this.byConn.delete(conn);
    const waiter = hello.finish;
    hello.finish = undefined;
    waiter?.fail(new ScanError(400, 'The linking device went away before it answered'));
  }

  /** How many companions wait for a code to be typed (for health output). */
  get waitingCount(): number {
    return this.byConn.size;
  }

  /**
   * `account`'s phone: the user typed `code` (already normalised, see normaliseLinkCode). Answers the newest valid
   * hello that named this phone, checks the companion's key bundle, then links it as a scan does.
   * @throws ScanError 400 (no companion waits for a code for this phone — never asked, or it went away — or the code
   *   is wrong), 409 (a code is being entered for that companion right now), 502 (inconsistent bundle or a bad reply
   *   to `pair-success`), 504 (the companion did not answer within 15 s).
   */
  async enter(account: AccountRow, code: string): Promise<ScanResult> {
    const hello = this.newestFor(account.pn);
    if (!hello) {
      throw new ScanError(400, 'No device is waiting for a code for this phone (the code expired or was never requested)');
    }
    if (hello.busy) throw new ScanError(409, 'A code is already being entered for this device');
    hello.busy = true;
    try {
      return await this.answer(account, hello, code);
    } finally {
      hello.busy = false;
    }
  }

  private newestFor(pn: string): Hello | undefined {
    let newest: Hello | undefined;
    for (const h of this.byConn.values()) {
      if (h.pn !== pn || !this.ctx.pairing.waitingIdentity(h.conn)) continue;
      if (!newest || h.at >= newest.at) newest = h;
    }
    return newest;
  }

  private async answer(account: AccountRow, hello: Hello, code: string): Promise<ScanResult> {
    const { conn } = hello;
    const companionEphemeral = await unwrapKey(hello.wrappedEphemeral, code);
    const primaryEphemeral = Curve.generateKeyPair();
    const wrappedPrimary = await wrapKey(Buffer.from(primaryEphemeral.public), code);
    if (this.byConn.get(conn) !== hello) throw new ScanError(400, 'The linking device went away or asked for a new code');

    const finish = new Promise<BinaryNode>((resolve, reject) => {
      const timer = setTimeout(() => {
        hello.finish = undefined;
        reject(new ScanError(504, 'the linking device did not answer in time'));
      }, FINISH_TIMEOUT_MS);
      hello.finish = {
        deliver: (node) => {
          clearTimeout(timer);
          resolve(node);
        },
        fail: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
    });
    conn.send({
      tag: 'notification',
      attrs: { from: '@s.whatsapp.net', type: 'link_code_companion_reg', id: generateMessageIDV2(), t: unixNow() },
      content: [
        {
          tag: 'link_code_companion_reg',
          attrs: { stage: 'primary_hello' },
          content: [
            { tag: 'link_code_pairing_ref', attrs: {}, content: Buffer.from(hello.ref) },
            { tag: 'link_code_pairing_wrapped_primary_ephemeral_pub', attrs: {}, content: wrappedPrimary },
            { tag: 'primary_identity_pub', attrs: {}, content: account.identityPub },
          ],
        },
      ],
    });
    const reg = await finish;

    const companionIdentity = childBuffer(reg, 'companion_identity_public');
    const bundle = childBuffer(reg, 'link_code_pairing_wrapped_key_bundle');
    const ephemeralShared = Curve.sharedKey(primaryEphemeral.private, companionEphemeral);
    const plain = bundle && openBundle(bundle, ephemeralShared);
    if (!plain) {
      conn.log.info({ pn: account.pn }, 'phone could not open the key bundle: wrong code');
      throw new ScanError(400, 'Wrong code: it does not match the code shown on the linking device');
    }
    const registered = this.ctx.pairing.waitingIdentity(conn);
    if (
      plain.length !== 96 ||
      !companionIdentity?.equals(plain.subarray(0, 32)) ||
      !registered?.equals(companionIdentity) ||
      !plain.subarray(32, 64).equals(account.identityPub)
    ) {
      throw new ScanError(502, 'the linking device sent a key bundle with keys that do not match its registration');
    }
    const identityShared = Curve.sharedKey(account.identityPriv, companionIdentity);
    const advSecret = Buffer.from(
      hkdfSync('sha256', Buffer.concat([ephemeralShared, identityShared, plain.subarray(64)]), Buffer.alloc(0), ADV_SECRET_INFO, 32),
    );
    conn.log.info({ pn: account.pn, platform: hello.platformDisplay }, 'phone code accepted; linking');
    return this.ctx.pairing.pairWithSecret(account, conn, advSecret);
  }
}
