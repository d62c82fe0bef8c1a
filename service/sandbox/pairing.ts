/**
 * QR pairing of companions (brief §B3): refs for fresh clients, the admin "scan" by an account's phone,
 * `pair-success` with a real ADV identity, and the `pair-device-sign` → `<stream:error code="515"/>` finish.
 *
 * Owns: pending pairings (one per registering connection, keyed by each of its refs), QR parsing and
 * "is this QR current" checks, device-id allocation, building/verifying the ADV signed identity
 * (`lib/Utils/validate-connection.js configureSuccessfulPairing` is the client-side verifier), and
 * persisting the new companion.
 *
 * QR currency: Baileys shows ref #0 for 60 s and each later ref for 20 s (`qrTimeout` overrides both,
 * which the server cannot see), so a ref is "rotated away" once the default schedule has moved past it;
 * refs shown early by a faster client are accepted. All refs die when the connection closes or pairs.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { Curve, hmacSign, proto, type BinaryNode } from '@whiskeysockets/baileys';
import { verifySignature } from 'libsignal/src/curve.js';
import type { SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow } from './store.ts';
import { unixNow } from './context.ts';
import { lidJid, pnJid } from './phone-number.ts';

/** Number of refs offered per registration (the brief's experiment used 6). */
export const REF_COUNT = 6;
const FIRST_QR_MS = 60_000;
const NEXT_QR_MS = 20_000;
const GRACE_MS = 5_000;
const PAIR_REPLY_TIMEOUT_MS = 15_000;
const ADV_ACCOUNT_SIG_PREFIX = Buffer.from([6, 0]);
const ADV_DEVICE_SIG_PREFIX = Buffer.from([6, 1]);
const QR_PREFIX = 'https://wa.me/settings/linked_devices#';

/** A scan failure with the HTTP status the admin API should answer. */
export class ScanError extends Error {
  override name = 'ScanError';
  constructor(
    readonly statusCode: 400 | 409 | 502 | 504,
    message: string,
  ) {
    super(message);
  }
}

export interface ScanResult {
  /** `<pn>:<device>@s.whatsapp.net` */
  jid: string;
  /** `<lid>:<device>@lid` */
  lid: string;
  deviceId: number;
}

interface PendingPairing {
  conn: ClientConnection;
  refs: string[];
  issuedAt: number;
  noiseKey: Buffer;
  registrationId: number;
  identityPub: Buffer;
  signedPreKeyId: number;
  signedPreKeyPub: Buffer;
  signedPreKeySig: Buffer;
  platform: string | null;
  state: 'waiting' | 'scanning' | 'done';
}

interface ParsedQr {
  ref: string;
  noiseKey: Buffer;
  identityKey: Buffer;
  advSecret: Buffer;
}

/**
 * The fields of a linking QR, in either form a phone accepts: rc14's `https://wa.me/settings/linked_devices#` +
 * `ref,noiseKey,identityKey,advSecret,platformId` (`lib/Utils/companion-reg-client-utils.js buildPairingQRData`), or
 * the four fields `ref,noiseKey,identityKey,advSecret` that Baileys 6 shows (`Socket/socket.js genPairQR`,
 * no URL prefix, no platform id). Keys are standard base64 of 32 bytes; undefined for anything else.
 */
function parseQr(qr: string): ParsedQr | undefined {
  const text = qr.trim();
  const body = text.startsWith(QR_PREFIX) ? text.slice(QR_PREFIX.length) : text;
  const parts = body.split(',');
  if (parts.length !== 4 && parts.length !== 5) return undefined;
  const [ref, noise, ident, adv] = parts as [string, string, string, string];
  const noiseKey = Buffer.from(noise, 'base64');
  const identityKey = Buffer.from(ident, 'base64');
  const advSecret = Buffer.from(adv, 'base64');
  if (!ref || noiseKey.length !== 32 || identityKey.length !== 32 || advSecret.length !== 32) return undefined;
  return { ref, noiseKey, identityKey, advSecret };
}

const beInt = (b: Uint8Array | null | undefined): number =>
  b && b.length ? Buffer.from(b).readUIntBE(0, Math.min(b.length, 6)) : 0;

function describePlatform(deviceProps: Uint8Array | null | undefined): string | null {
  if (!deviceProps?.length) return null;
  try {
    const props = proto.DeviceProps.decode(deviceProps);
    const type = props.platformType != null ? proto.DeviceProps.PlatformType[props.platformType] : undefined;
    return [type, props.os].filter(Boolean).join(' / ') || null;
  } catch {
    return null;
  }
}

export class Pairing {
  private readonly byRef = new Map<string, PendingPairing>();
  private readonly byConn = new Map<ClientConnection, PendingPairing>();

  constructor(private readonly ctx: SandboxContext) {}

  /**
   * A registration `ClientPayload` arrived: remember the companion's keys and send
   * `<iq type="set" xmlns="md"><pair-device><ref/>×6</pair-device></iq>` (the client answers and shows QR #1).
   */
  begin(conn: ClientConnection, payload: proto.ClientPayload): void {
    const data = payload.devicePairingData;
    if (!data?.eIdent || !data.eSkeyVal || !data.eSkeySig || !conn.clientStaticKey) {
      conn.log.warn('registration payload without pairing data');
      conn.fail('400');
      return;
    }
    const refs = Array.from({ length: REF_COUNT }, () => `2@${randomBytes(24).toString('base64')}`);
    const pending: PendingPairing = {
      conn,
      refs,
      issuedAt: Date.now(),
      noiseKey: conn.clientStaticKey,
      registrationId: beInt(data.eRegid),
      identityPub: Buffer.from(data.eIdent),
      signedPreKeyId: beInt(data.eSkeyId),
      signedPreKeyPub: Buffer.from(data.eSkeyVal),
      signedPreKeySig: Buffer.from(data.eSkeySig),
      platform: describePlatform(data.deviceProps),
      state: 'waiting',
    };
    this.byConn.set(conn, pending);
    for (const ref of refs) this.byRef.set(ref, pending);
    conn
      .query(
        {
          tag: 'iq',
          attrs: { from: '@s.whatsapp.net', type: 'set', xmlns: 'md' },
          content: [
            {
              tag: 'pair-device',
              attrs: {},
              content: refs.map((r) => ({ tag: 'ref', attrs: {}, content: Buffer.from(r) })),
            },
          ],
        },
        PAIR_REPLY_TIMEOUT_MS,
      )
      .catch((err) => conn.log.debug({ err }, 'no reply to pair-device'));
  }

  /** The connection closed: its refs are no longer scannable. */
  end(conn: ClientConnection): void {
    const pending = this.byConn.get(conn);
    if (!pending) return;
    this.byConn.delete(conn);
    for (const ref of pending.refs) this.byRef.delete(ref);
  }

  /** Closes the connection of every client waiting to be linked, as a network drop would. @returns how many. */
  dropWaiting(): number {
    const waiting = [...this.byConn.values()].filter((p) => p.state === 'waiting');
    for (const p of waiting) p.conn.close();
    return waiting.length;
  }

  /** Whether any client is currently waiting to be scanned (for health output). */
  get waitingCount(): number {
    return this.byConn.size;
  }

  /**
   * The Signal identity key (32 bytes) `conn` registered with, while it is open and waiting to be linked
   * (neither paired nor being paired); undefined otherwise. Used by the link-code flow (link-code.ts).
   */
  waitingIdentity(conn: ClientConnection): Buffer | undefined {
    const pending = this.byConn.get(conn);
    return pending && pending.state === 'waiting' && conn.isOpen ? pending.identityPub : undefined;
  }

  /**
   * Links the waiting client `conn` to `account` with an ADV secret agreed outside a QR code (the link-code
   * flow derives it from both sides' keys): the same `pair-success` → `pair-device-sign` → 515 finish as a scan.
   * @throws ScanError 400 (the client is gone or not waiting), 409 (already being paired), 502, 504 as scan.
   */
  async pairWithSecret(account: AccountRow, conn: ClientConnection, advSecret: Buffer): Promise<ScanResult> {
    const pending = this.byConn.get(conn);
    if (!pending || !conn.isOpen) throw new ScanError(400, 'the linking device is no longer connected');
    if (pending.state !== 'waiting') throw new ScanError(409, 'the linking device is already being linked');
    return this.claim(pending, () => this.pair(account, pending, advSecret));
  }

  /** Runs a pairing attempt of `pending`, which is `scanning` meanwhile and `waiting` again if it fails. */
  private async claim(pending: PendingPairing, attempt: () => Promise<ScanResult>): Promise<ScanResult> {
    pending.state = 'scanning';
    try {
      return await attempt();
    } catch (err) {
      if (pending.state === 'scanning') pending.state = 'waiting';
      throw err;
    }
  }

  /**
   * `account`'s phone scans `qr`: validates it is a current QR of a connected registering client, sends
   * `pair-success` (device jid/lid, ADV identity HMAC'd with the QR's adv secret), waits for
   * `pair-device-sign`, verifies the device signature, persists the companion, then restarts the client
   * with `<stream:error code="515"/>`.
   * @throws ScanError 400 (malformed/unknown/rotated QR), 409 (already being scanned), 502 (bad client
   *   reply), 504 (client did not answer within 15 s).
   */
  async scan(account: AccountRow, qr: string): Promise<ScanResult> {
    const parsed = parseQr(qr);
    if (!parsed) throw new ScanError(400, 'qr is not a WhatsApp linking QR code');
    const pending = this.byRef.get(parsed.ref);
    if (!pending || !pending.conn.isOpen) throw new ScanError(400, 'QR code is unknown or has expired');
    const index = pending.refs.indexOf(parsed.ref);
    const expiresAt = pending.issuedAt + FIRST_QR_MS + NEXT_QR_MS * index + GRACE_MS;
    if (Date.now() > expiresAt) throw new ScanError(400, 'QR code has expired (rotated away)');
    if (!parsed.noiseKey.equals(pending.noiseKey) || !parsed.identityKey.equals(pending.identityPub)) {
      throw new ScanError(400, 'QR code keys do not match the waiting client');
    }
    if (pending.state !== 'waiting') throw new ScanError(409, 'QR code was already scanned');
    return this.claim(pending, () => this.pair(account, pending, parsed.advSecret));
  }

  private async pair(account: AccountRow, pending: PendingPairing, advSecret: Buffer): Promise<ScanResult> {
    const { store } = this.ctx;
    const conn = pending.conn;
    const deviceId = store.allocateDeviceId(account.pn);
    const keyIndex = deviceId;
    const details = Buffer.from(
      proto.ADVDeviceIdentity.encode({
        rawId: randomInt(1, 2 ** 31),
        timestamp: Math.floor(Date.now() / 1000),
        keyIndex,
        accountType: proto.ADVEncryptionType.E2EE,
        deviceType: proto.ADVEncryptionType.E2EE,
      }).finish(),
    );
    const accountSignature = Buffer.from(
      Curve.sign(account.identityPriv, Buffer.concat([ADV_ACCOUNT_SIG_PREFIX, details, pending.identityPub])),
    );
    const signedIdentity = Buffer.from(
      proto.ADVSignedDeviceIdentity.encode({
        details,
        accountSignatureKey: account.identityPub,
        accountSignature,
      }).finish(),
    );
    const hmac = hmacSign(signedIdentity, advSecret);
    const deviceIdentity = proto.ADVSignedDeviceIdentityHMAC.encode({
      details: signedIdentity,
      hmac,
      accountType: proto.ADVEncryptionType.E2EE,
    }).finish();
    const jid = pnJid(account.pn, deviceId);
    const lid = lidJid(account.lid, deviceId);

    let reply: BinaryNode;
    try {
      reply = await conn.query(
        {
          tag: 'iq',
          attrs: { from: '@s.whatsapp.net', type: 'set', xmlns: 'md', t: unixNow() },
          content: [
            {
              tag: 'pair-success',
              attrs: {},
              content: [
                { tag: 'device-identity', attrs: {}, content: deviceIdentity },
                { tag: 'platform', attrs: { name: 'android' } },
                { tag: 'device', attrs: { jid, lid } },
              ],
            },
          ],
        },
        PAIR_REPLY_TIMEOUT_MS,
      );
    } catch (err) {
      throw new ScanError(504, `client did not confirm pairing: ${(err as Error).message}`);
    }

    const sign = Array.isArray(reply.content) ? reply.content.find((c) => c.tag === 'pair-device-sign') : undefined;
    const idNode = Array.isArray(sign?.content) ? sign.content.find((c) => c.tag === 'device-identity') : undefined;
    if (reply.attrs.type !== 'result' || !(idNode?.content instanceof Uint8Array)) {
      throw new ScanError(502, 'client rejected pairing (no pair-device-sign)');
    }
    const signed = proto.ADVSignedDeviceIdentity.decode(idNode.content);
    const deviceMsg = Buffer.concat([ADV_DEVICE_SIG_PREFIX, details, pending.identityPub, account.identityPub]);
    if (
      !signed.deviceSignature ||
      !verifySignature(Buffer.concat([Buffer.from([5]), pending.identityPub]), deviceMsg, signed.deviceSignature)
    ) {
      throw new ScanError(502, 'client returned an invalid device signature');
    }

    store.insertDevice({
      pn: account.pn,
      deviceId,
      keyIndex,
      noisePub: pending.noiseKey,
      registrationId: pending.registrationId,
      identityPub: pending.identityPub,
      signedPreKeyId: pending.signedPreKeyId,
      signedPreKeyPub: pending.signedPreKeyPub,
      signedPreKeySig: pending.signedPreKeySig,
      platform: pending.platform,
      bundleUploaded: false,
      historySent: false,
      createdAt: Date.now(),
      lastSeenAt: null,
    });
    pending.state = 'done';
    this.ctx.delivery.broadcastDeviceChange(account.pn, account.lid, deviceId);
    conn.log.info({ pn: account.pn, deviceId }, 'companion paired; asking client to restart (515)');
    this.end(conn);
    conn.streamError('515');
    return { jid, lid, deviceId };
  }
}
