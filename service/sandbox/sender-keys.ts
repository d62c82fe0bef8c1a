/**
 * The Signal sender-key group cipher, as the simulated phones speak it (`skmsg` and the
 * `SenderKeyDistributionMessage`, SKDM). Written for the sandbox from the protocol facts below; every step is
 * synchronous (Node's crypto), so a caller can read a record, encrypt/decrypt and queue the updated record in
 * one tick.
 *
 * Protocol facts (libsignal's group cipher; checked against Baileys rc14's receiving side,
 * `lib/Signal/Group/*.js`, and `groups-protocol.md`):
 * - A sender key state is `(keyId: uint31, iteration, chainKey: 32 bytes, signing key pair: Curve25519)`.
 * - Chain step: message-key seed = HMAC-SHA256(chainKey, 0x01); next chainKey = HMAC-SHA256(chainKey, 0x02);
 *   iteration + 1 (`sender-chain-key.js`).
 * - Message key: HKDF-SHA256(seed, salt = 32 zero bytes, info = "WhisperGroup") → 48 bytes; iv = bytes 0–15,
 *   cipher key = bytes 16–47 (`sender-message-key.js`, libsignal `crypto.deriveSecrets` = RFC 5869).
 * - Body: AES-256-CBC with PKCS#7 padding of the (already `writeRandomPadMax16`-padded) `proto.Message`.
 * - `skmsg` = version byte 0x33 ‖ protobuf `SenderKeyMessage { id, iteration, ciphertext }` ‖ 64-byte XEdDSA
 *   signature (Curve25519 `calculateSignature`) of everything before it (`sender-key-message.js`).
 * - SKDM = version byte 0x33 ‖ protobuf `SenderKeyDistributionMessage { id, iteration, chainKey, signingKey }`,
 *   signingKey being the 33-byte public key (0x05 prefix) (`sender-key-distribution-message.js`).
 * - A receiver keeps up to 5 states per sender, looks one up by keyId, derives forward to the message's
 *   iteration keeping skipped message keys (at most 2000 ahead), and refuses an iteration whose key it
 *   already used (`group_cipher.js`, `sender-key-record.js`).
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomInt } from 'node:crypto';
import { Curve, proto } from '@whiskeysockets/baileys';
import * as curve from 'libsignal/src/curve.js';

const VERSION_BYTE = 0x33; // (3 << 4) | 3
const SIGNATURE_LENGTH = 64;
const MAX_STATES = 5;
const MAX_FUTURE = 2000;
const MAX_SKIPPED = 2000;

/** One sender-key state, JSON-serializable (buffers as base64). */
export interface SenderKeyState {
  keyId: number;
  iteration: number;
  chainKey: string;
  /** 32-byte Curve25519 public signing key (no 0x05 prefix). */
  signingPub: string;
  /** Private signing key: only in the sender's own state. */
  signingPriv?: string;
  /** Skipped message keys `[iteration, seed]` of a receiving state. */
  skipped: Array<[number, string]>;
}

/** The states a phone keeps for one (group, sender), oldest first. */
export interface SenderKeyRecord {
  states: SenderKeyState[];
}

export class SenderKeyError extends Error {
  override name = 'SenderKeyError';
}

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');
const unb64 = (s: string): Buffer => Buffer.from(s, 'base64');
const hmac = (key: Buffer, data: number): Buffer => createHmac('sha256', key).update(Buffer.from([data])).digest();

function messageKeys(seed: Buffer): { iv: Buffer; key: Buffer } {
  const okm = Buffer.from(hkdfSync('sha256', seed, Buffer.alloc(32), Buffer.from('WhisperGroup'), 48));
  return { iv: okm.subarray(0, 16), key: okm.subarray(16, 48) };
}

/** A fresh sending state (random key id, chain key and signing key pair) at iteration 0. */
export function createSenderKey(): SenderKeyState {
  const signing = Curve.generateKeyPair();
  return {
    keyId: randomInt(0x7fffffff),
    iteration: 0,
    chainKey: b64(randomBytes(32)),
    signingPub: b64(signing.public),
    signingPriv: b64(signing.private),
    skipped: [],
  };
}

/** The SKDM bytes (`axolotlSenderKeyDistributionMessage`) for a sending state at its current iteration. */
export function distributionMessage(state: SenderKeyState): Buffer {
  const body = proto.SenderKeyDistributionMessage.encode({
    id: state.keyId,
    iteration: state.iteration,
    chainKey: unb64(state.chainKey),
    signingKey: Buffer.concat([Buffer.from([5]), unb64(state.signingPub)]),
  }).finish();
  return Buffer.concat([Buffer.from([VERSION_BYTE]), body]);
}

/**
 * Add the state an SKDM describes to `record` (a receiver's record for that sender; created when absent).
 * @throws SenderKeyError for a malformed SKDM.
 */
export function processDistribution(record: SenderKeyRecord | undefined, skdm: Uint8Array): SenderKeyRecord {
  if (skdm.length < 2 || (skdm[0]! & 0xf0) >> 4 !== 3) throw new SenderKeyError('unsupported SKDM version');
  let m: proto.SenderKeyDistributionMessage;
  try {
    m = proto.SenderKeyDistributionMessage.decode(skdm.subarray(1));
  } catch (err) {
    throw new SenderKeyError(`malformed SKDM: ${(err as Error).message}`);
  }
  const signing = m.signingKey ? Buffer.from(m.signingKey) : Buffer.alloc(0);
  const pub = signing.length === 33 ? signing.subarray(1) : signing;
  if (m.id == null || m.iteration == null || m.chainKey?.length !== 32 || pub.length !== 32) {
    throw new SenderKeyError('incomplete SKDM');
  }
  const states = [...(record?.states ?? [])];
  states.push({
    keyId: m.id,
    iteration: m.iteration,
    chainKey: b64(m.chainKey),
    signingPub: b64(pub),
    skipped: [],
  });
  while (states.length > MAX_STATES) states.shift();
  return { states };
}

/**
 * Encrypt `paddedPlaintext` with a sending state: the message key of the current iteration, then the chain
 * advances (the state is updated in place).
 * @returns the `skmsg` bytes.
 */
export function groupEncrypt(state: SenderKeyState, paddedPlaintext: Uint8Array): Buffer {
  if (!state.signingPriv) throw new SenderKeyError('not a sending state');
  const chainKey = unb64(state.chainKey);
  const { iv, key } = messageKeys(hmac(chainKey, 1));
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  const ciphertext = Buffer.concat([cipher.update(paddedPlaintext), cipher.final()]);
  const body = proto.SenderKeyMessage.encode({ id: state.keyId, iteration: state.iteration, ciphertext }).finish();
  const signed = Buffer.concat([Buffer.from([VERSION_BYTE]), body]);
  const signature = Buffer.from(Curve.sign(unb64(state.signingPriv), signed));
  state.chainKey = b64(hmac(chainKey, 2));
  state.iteration += 1;
  return Buffer.concat([signed, signature]);
}

/**
 * Decrypt an `skmsg` with a receiver's record (updated in place: chain advanced, skipped keys kept or used).
 * `verified` (optional, per skmsg) holds the signing keys this very skmsg was already verified with, so the
 * members of a large group check the signature once (pure-JS Curve25519 verification is the costly step).
 * @returns the padded plaintext (strip with `unpadRandomMax16`).
 * @throws SenderKeyError: no state for the key id, bad signature, a reused or too distant iteration, bad padding.
 */
export function groupDecrypt(record: SenderKeyRecord | undefined, skmsg: Uint8Array, verified?: Set<string>): Buffer {
  if (skmsg.length <= 1 + SIGNATURE_LENGTH || (skmsg[0]! & 0xf0) >> 4 !== 3) {
    throw new SenderKeyError('malformed skmsg');
  }
  const signed = skmsg.subarray(0, skmsg.length - SIGNATURE_LENGTH);
  const signature = skmsg.subarray(skmsg.length - SIGNATURE_LENGTH);
  let m: proto.SenderKeyMessage;
  try {
    m = proto.SenderKeyMessage.decode(signed.subarray(1));
  } catch (err) {
    throw new SenderKeyError(`malformed skmsg: ${(err as Error).message}`);
  }
  const iteration = m.iteration ?? 0;
  const state = [...(record?.states ?? [])].reverse().find((s) => s.keyId === m.id);
  if (!state) throw new SenderKeyError(`no sender key state for key id ${m.id}`);
  if (!verified?.has(state.signingPub)) {
    const pub = Buffer.concat([Buffer.from([5]), unb64(state.signingPub)]);
    if (!curve.verifySignature(pub, signed, signature)) throw new SenderKeyError('invalid skmsg signature');
    verified?.add(state.signingPub);
  }

  let seed: Buffer;
  if (iteration < state.iteration) {
    const i = state.skipped.findIndex(([it]) => it === iteration);
    if (i < 0) throw new SenderKeyError(`old counter: ${state.iteration}, ${iteration}`);
    seed = unb64(state.skipped[i]![1]);
    state.skipped.splice(i, 1);
  } else {
    if (iteration - state.iteration > MAX_FUTURE) throw new SenderKeyError('over 2000 messages into the future');
    let chainKey = unb64(state.chainKey);
    for (let it = state.iteration; it < iteration; it++) {
      state.skipped.push([it, b64(hmac(chainKey, 1))]);
      chainKey = hmac(chainKey, 2);
    }
    while (state.skipped.length > MAX_SKIPPED) state.skipped.shift();
    seed = hmac(chainKey, 1);
    state.chainKey = b64(hmac(chainKey, 2));
    state.iteration = iteration + 1;
  }
  const { iv, key } = messageKeys(seed);
  try {
    const decipher = createDecipheriv('aes-256-cbc', key, iv);
    return Buffer.concat([decipher.update(m.ciphertext ?? Buffer.alloc(0)), decipher.final()]);
  } catch {
    throw new SenderKeyError('skmsg body did not decrypt');
  }
}
