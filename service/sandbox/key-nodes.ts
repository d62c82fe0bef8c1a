/**
 * Binary-node encodings of Signal key material as WhatsApp carries it (`lib/Utils/signal.js`
 * `xmppPreKey`/`xmppSignedPreKey`, `parseAndInjectE2ESessions`, `extractE2ESessionFromRetryReceipt`):
 * big-endian ids (3 bytes), registration ids (4 bytes), 32-byte keys without the 0x05 prefix.
 */
import type { BinaryNode } from '@whiskeysockets/baileys';
import type { PreKey } from './store.ts';

/** Key type byte of Curve25519 bundles (`KEY_BUNDLE_TYPE`). */
export const KEY_TYPE = Buffer.from([5]);

/** `n` as a `bytes`-long big-endian unsigned integer. */
export function encodeBE(n: number, bytes: number): Buffer {
  const out = Buffer.alloc(bytes);
  out.writeUIntBE(n, 0, bytes);
  return out;
}

/** `<skey><id/><value/><signature/></skey>` */
export function signedPreKeyNode(id: number, pub: Uint8Array, sig: Uint8Array): BinaryNode {
  return {
    tag: 'skey',
    attrs: {},
    content: [
      { tag: 'id', attrs: {}, content: encodeBE(id, 3) },
      { tag: 'value', attrs: {}, content: pub },
      { tag: 'signature', attrs: {}, content: sig },
    ],
  };
}

/** `<key><id/><value/></key>` */
export function preKeyNode(k: PreKey): BinaryNode {
  return {
    tag: 'key',
    attrs: {},
    content: [
      { tag: 'id', attrs: {}, content: encodeBE(k.keyId, 3) },
      { tag: 'value', attrs: {}, content: k.pub },
    ],
  };
}

export interface BundleFields {
  registrationId: number;
  identityPub: Uint8Array;
  signedPreKeyId: number;
  signedPreKeyPub: Uint8Array;
  signedPreKeySig: Uint8Array;
}

/** Children of a `<user>` in an `encrypt key` answer: registration, type, identity, skey, [key]. */
export function bundleNodes(b: BundleFields, preKey: PreKey | undefined): BinaryNode[] {
  return [
    { tag: 'registration', attrs: {}, content: encodeBE(b.registrationId, 4) },
    { tag: 'type', attrs: {}, content: KEY_TYPE },
    { tag: 'identity', attrs: {}, content: b.identityPub },
    signedPreKeyNode(b.signedPreKeyId, b.signedPreKeyPub, b.signedPreKeySig),
    ...(preKey ? [preKeyNode(preKey)] : []),
  ];
}
