/**
 * Noise transport for one client connection: the WA intro/framing and a `Noise_XX_25519_AESGCM_SHA256`
 * responder mirroring Baileys' initiator (`lib/Utils/noise-handler.js`; brief §B1 "Noise handshake").
 *
 * Owns: splitting the client's byte stream into frames (stripping the 4-byte `WA 06 03` intro and the
 * optional `ED 00 01 <len24> <routingInfo>` prefix once), the three handshake messages, and the
 * post-handshake AES-256-GCM transport (independent counters, IV = counter as uint32 BE in bytes 8..11,
 * empty AAD). Any malformed input throws {@link NoiseProtocolError}; the caller closes that client.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync } from 'node:crypto';
import { Curve, NOISE_MODE, NOISE_WA_HEADER, proto } from '@whiskeysockets/baileys';
import type { KeyPair, ServerIdentity } from './certs.ts';

/** Raised for any framing/handshake/decryption failure; fatal for that connection only. */
export class NoiseProtocolError extends Error {
  override name = 'NoiseProtocolError';
}

const MAX_FRAME = 0xffffff;
const GCM_TAG = 16;
const EMPTY = Buffer.alloc(0);

function iv(counter: number): Buffer {
  const out = Buffer.alloc(12);
  out.writeUInt32BE(counter >>> 0, 8);
  return out;
}

function gcmEncrypt(key: Buffer, counter: number, aad: Buffer, plaintext: Uint8Array): Buffer {
  const c = createCipheriv('aes-256-gcm', key, iv(counter));
  c.setAAD(aad);
  return Buffer.concat([c.update(plaintext), c.final(), c.getAuthTag()]);
}

function gcmDecrypt(key: Buffer, counter: number, aad: Buffer, data: Uint8Array): Buffer {
  if (data.length < GCM_TAG) throw new NoiseProtocolError('ciphertext shorter than the GCM tag');
  const d = createDecipheriv('aes-256-gcm', key, iv(counter));
  d.setAAD(aad);
  d.setAuthTag(data.subarray(data.length - GCM_TAG));
  try {
    return Buffer.concat([d.update(data.subarray(0, data.length - GCM_TAG)), d.final()]);
  } catch {
    throw new NoiseProtocolError('frame failed authentication');
  }
}

/** Prefix a payload with its 3-byte big-endian length (server→client frames carry no intro). */
export function encodeFrame(payload: Uint8Array): Buffer {
  if (payload.length > MAX_FRAME) throw new NoiseProtocolError(`frame too large: ${payload.length} bytes`);
  const out = Buffer.allocUnsafe(3 + payload.length);
  out[0] = (payload.length >>> 16) & 0xff;
  out.writeUInt16BE(payload.length & 0xffff, 1);
  out.set(payload, 3);
  return out;
}

/**
 * Reassembles client frames from WebSocket messages. The first bytes must be the intro
 * (`57 41 06 03`), optionally preceded by `'E' 'D' 00 01 <3-byte len> <routingInfo>`.
 */
export class FrameReader {
  private buf: Buffer = EMPTY;
  private introDone = false;

  /** Append received bytes; returns every complete frame payload now available. */
  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.introDone && !this.stripIntro()) return [];
    const frames: Buffer[] = [];
    while (this.buf.length >= 3) {
      const len = (this.buf[0]! << 16) | this.buf.readUInt16BE(1);
      if (this.buf.length < 3 + len) break;
      frames.push(this.buf.subarray(3, 3 + len));
      this.buf = this.buf.subarray(3 + len);
    }
    return frames;
  }

  private stripIntro(): boolean {
    let offset = 0;
    if (this.buf.length >= 2 && this.buf[0] === 0x45 && this.buf[1] === 0x44) {
      if (this.buf.length < 7) return false;
      offset = 7 + ((this.buf[4]! << 16) | this.buf.readUInt16BE(5));
    }
    if (this.buf.length < offset + NOISE_WA_HEADER.length) return false;
    if (!this.buf.subarray(offset, offset + NOISE_WA_HEADER.length).equals(NOISE_WA_HEADER)) {
      throw new NoiseProtocolError('bad connection intro (expected WA header)');
    }
    this.buf = this.buf.subarray(offset + NOISE_WA_HEADER.length);
    this.introDone = true;
    return true;
  }
}

/** Result of a completed handshake. */
export interface HandshakeResult {
  /** The client's 32-byte Noise static key (= `creds.noiseKey.public`, also in the QR). */
  clientStaticKey: Buffer;
  payload: proto.ClientPayload;
}

/**
 * Noise XX responder. Call {@link processClientHello}, then {@link processClientFinish}; afterwards
 * {@link encrypt}/{@link decrypt} handle transport frames.
 */
export class NoiseResponder {
  private h: Buffer;
  private ck: Buffer;
  private k: Buffer;
  private n = 0;
  private ephemeral: KeyPair | undefined;
  private clientEphemeral: Buffer | undefined;
  private sendKey: Buffer | undefined;
  private recvKey: Buffer | undefined;
  private sendCounter = 0;
  private recvCounter = 0;

  constructor(private readonly identity: ServerIdentity) {
    const mode = Buffer.from(NOISE_MODE);
    this.h = mode.length === 32 ? mode : createHash('sha256').update(mode).digest();
    this.ck = this.h;
    this.k = this.h;
    this.mixHash(NOISE_WA_HEADER);
  }

  get isTransport(): boolean {
    return this.sendKey !== undefined;
  }

  private mixHash(data: Uint8Array): void {
    this.h = createHash('sha256').update(this.h).update(data).digest();
  }

  private mixKey(ikm: Uint8Array): void {
    const out = Buffer.from(hkdfSync('sha256', ikm, this.ck, EMPTY, 64));
    this.ck = out.subarray(0, 32);
    this.k = out.subarray(32, 64);
    this.n = 0;
  }

  private encryptAndHash(plaintext: Uint8Array): Buffer {
    const ct = gcmEncrypt(this.k, this.n++, this.h, plaintext);
    this.mixHash(ct);
    return ct;
  }

  private decryptAndHash(ciphertext: Uint8Array): Buffer {
    const pt = gcmDecrypt(this.k, this.n++, this.h, ciphertext);
    this.mixHash(ciphertext);
    return pt;
  }

  /** Handle `HandshakeMessage{clientHello}`; returns the encoded `HandshakeMessage{serverHello}`. */
  processClientHello(frame: Buffer): Buffer {
    let msg: proto.HandshakeMessage;
    try {
      msg = proto.HandshakeMessage.decode(frame);
    } catch {
      throw new NoiseProtocolError('undecodable ClientHello');
    }
    const e = msg.clientHello?.ephemeral;
    if (!e || e.length !== 32) throw new NoiseProtocolError('ClientHello without a 32-byte ephemeral key');
    this.clientEphemeral = Buffer.from(e);
    this.mixHash(this.clientEphemeral);
    const kp = Curve.generateKeyPair();
    this.ephemeral = { public: Buffer.from(kp.public), private: Buffer.from(kp.private) };
    this.mixHash(this.ephemeral.public);
    this.mixKey(Curve.sharedKey(this.ephemeral.private, this.clientEphemeral));
    const encStatic = this.encryptAndHash(this.identity.staticKey.public);
    this.mixKey(Curve.sharedKey(this.identity.staticKey.private, this.clientEphemeral));
    const encPayload = this.encryptAndHash(this.identity.certChain);
    return Buffer.from(
      proto.HandshakeMessage.encode({
        serverHello: { ephemeral: this.ephemeral.public, static: encStatic, payload: encPayload },
      }).finish(),
    );
  }

  /**
   * Handle `HandshakeMessage{clientFinish}`: recovers the client static key and the `ClientPayload`,
   * then switches to transport mode.
   */
  processClientFinish(frame: Buffer): HandshakeResult {
    if (!this.ephemeral) throw new NoiseProtocolError('ClientFinish before ClientHello');
    let msg: proto.HandshakeMessage;
    try {
      msg = proto.HandshakeMessage.decode(frame);
    } catch {
      throw new NoiseProtocolError('undecodable ClientFinish');
    }
    const encStatic = msg.clientFinish?.static;
    const encPayload = msg.clientFinish?.payload;
    if (!encStatic || !encPayload) throw new NoiseProtocolError('ClientFinish without static/payload');
    // the nonce continues (n = 1): there is no MixKey between the cert payload and this field
    const clientStaticKey = this.decryptAndHash(encStatic);
    if (clientStaticKey.length !== 32) throw new NoiseProtocolError('client static key is not 32 bytes');
    this.mixKey(Curve.sharedKey(this.ephemeral.private, clientStaticKey));
    const payloadBytes = this.decryptAndHash(encPayload);
    let payload: proto.ClientPayload;
    try {
      payload = proto.ClientPayload.decode(payloadBytes);
    } catch {
      throw new NoiseProtocolError('undecodable ClientPayload');
    }
    const out = Buffer.from(hkdfSync('sha256', EMPTY, this.ck, EMPTY, 64));
    this.recvKey = out.subarray(0, 32);
    this.sendKey = out.subarray(32, 64);
    return { clientStaticKey, payload };
  }

  /** Encrypt one transport plaintext (an encoded binary node). */
  encrypt(plaintext: Uint8Array): Buffer {
    if (!this.sendKey) throw new NoiseProtocolError('transport not ready');
    return gcmEncrypt(this.sendKey, this.sendCounter++, EMPTY, plaintext);
  }

  /** Decrypt one transport frame. */
  decrypt(ciphertext: Uint8Array): Buffer {
    if (!this.recvKey) throw new NoiseProtocolError('transport not ready');
    return gcmDecrypt(this.recvKey, this.recvCounter++, EMPTY, ciphertext);
  }
}
