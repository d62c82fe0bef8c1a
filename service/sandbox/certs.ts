/**
 * The sandbox server's long-term keys and Noise certificate chain (brief §B1 "CertChain", §0 findings 2–4).
 *
 * Owns: root key R (the client trusts it via `WA_CERT_DETAILS.PUBLIC_KEY = R.pub`), intermediate key I,
 * server static key S — all persisted in the `meta` table on first start — and the encoded `proto.CertChain`:
 *   intermediate = {serial: 1, issuerSerial: 0 (explicitly encoded!), key: I.pub} signed by R,
 *   leaf         = {serial: 2, issuerSerial: 1, key: S.pub} signed by I.
 * Signatures are XEdDSA over the raw `details` bytes with no prefix (`lib/Utils/noise-handler.js processHandshake`).
 */
import { Curve, proto } from '@whiskeysockets/baileys';
import type { Store } from './store.ts';

export interface KeyPair {
  /** 32-byte Curve25519 public key (no 0x05 prefix). */
  public: Buffer;
  /** 32-byte private key. */
  private: Buffer;
}

export interface ServerIdentity {
  rootKey: KeyPair;
  intermediateKey: KeyPair;
  /** Noise static key S sent (encrypted) in ServerHello. */
  staticKey: KeyPair;
  /** Encoded `proto.CertChain`, the ServerHello payload. */
  certChain: Buffer;
}

const TEN_YEARS_S = 10 * 365 * 24 * 3600;

function loadOrCreateKeyPair(store: Store, name: string): KeyPair {
  const pub = store.getMeta(`${name}.pub`);
  const priv = store.getMeta(`${name}.priv`);
  if (pub && priv) return { public: pub, private: priv };
  const kp = Curve.generateKeyPair();
  const pair = { public: Buffer.from(kp.public), private: Buffer.from(kp.private) };
  store.transaction(() => {
    store.setMeta(`${name}.pub`, pair.public);
    store.setMeta(`${name}.priv`, pair.private);
  });
  return pair;
}

function signedCert(
  details: proto.CertChain.NoiseCertificate.IDetails,
  signer: KeyPair,
): proto.CertChain.INoiseCertificate {
  const bytes = proto.CertChain.NoiseCertificate.Details.encode(details).finish();
  return { details: bytes, signature: Buffer.from(Curve.sign(signer.private, bytes)) };
}

/**
 * Load the server keys from the store (creating and persisting them on first use) and build the cert chain.
 * The chain is rebuilt on every start (XEdDSA signatures are randomized); the keys are stable.
 */
export function loadServerIdentity(store: Store): ServerIdentity {
  const rootKey = loadOrCreateKeyPair(store, 'noise.root');
  const intermediateKey = loadOrCreateKeyPair(store, 'noise.intermediate');
  const staticKey = loadOrCreateKeyPair(store, 'noise.static');
  const now = Math.floor(Date.now() / 1000);
  const intermediate = signedCert(
    { serial: 1, issuerSerial: 0, key: intermediateKey.public, notBefore: now - 86400, notAfter: now + TEN_YEARS_S },
    rootKey,
  );
  const leaf = signedCert(
    { serial: 2, issuerSerial: 1, key: staticKey.public, notBefore: now - 86400, notAfter: now + TEN_YEARS_S },
    intermediateKey,
  );
  const certChain = Buffer.from(proto.CertChain.encode({ leaf, intermediate }).finish());
  return { rootKey, intermediateKey, staticKey, certChain };
}
