/**
 * A minimal X.509 v3 certificate builder (DER by hand, ECDSA P-256 / SHA-256) for the sandbox's own TLS CA.
 * No ASN.1 package is installed, and `node:crypto` can verify certificates but not create them.
 *
 * Owns: the DER encoding of exactly what the media host needs — a self-signed CA certificate
 * (basicConstraints CA, keyUsage keyCertSign|cRLSign) and a server leaf it signs (serverAuth,
 * subjectAltName with IP addresses and DNS names), each with subject/authority key identifiers.
 */
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

// ---- DER primitives ---------------------------------------------------------------------------

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One TLV with tag byte `tag`. */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bitString = (b: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);

/** Unsigned big-endian integer (a leading zero is added when the top bit is set). */
function integer(value: Buffer | number): Buffer {
  let b = typeof value === 'number' ? Buffer.from([value]) : value;
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && (b[i + 1]! & 0x80) === 0) i++;
  b = b.subarray(i);
  if (b[0]! & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [parts[0]! * 40 + parts[1]!];
  for (const p of parts.slice(2)) {
    const stack: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) stack.unshift((v & 0x7f) | 0x80);
    out.push(...stack);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyId: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyId: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

const name = (cn: string): Buffer =>
  seq(set(seq(oid(OID.organization), utf8('Switchboard Sandbox'))), set(seq(oid(OID.commonName), utf8(cn))));

const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

/** SHA-1 of the subjectPublicKey bits (RFC 5280 §4.2.1.2 method 1). */
function keyId(spkiDer: Buffer): Buffer {
  // SPKI = SEQ { SEQ algorithm, BIT STRING key }; the EC point is the last 65 bytes for P-256
  return createHash('sha1')
    .update(spkiDer.subarray(spkiDer.length - 65))
    .digest();
}

export interface CertInput {
  subjectCn: string;
  issuerCn: string;
  /** The subject's key (private or public). */
  subjectKey: KeyObject;
  /** The issuer's private key (signs the certificate). */
  issuerKey: KeyObject;
  ca: boolean;
  /** IP addresses and DNS names for subjectAltName (leaf only). */
  altNames?: string[];
  notBefore: Date;
  notAfter: Date;
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand '::'
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** Build and sign one certificate; returns its DER bytes. */
export function buildCertificate(c: CertInput): Buffer {
  const spki = createPublicKey(c.subjectKey).export({ type: 'spki', format: 'der' });
  const issuerSpki = createPublicKey(c.issuerKey).export({ type: 'spki', format: 'der' });
  const alg = seq(oid(OID.ecdsaWithSha256));
  const exts: Buffer[] = [
    extension(OID.basicConstraints, true, c.ca ? seq(bool(true)) : seq()),
    // keyUsage bits: digitalSignature (0) for a leaf; keyCertSign (5) + cRLSign (6) for the CA
    extension(OID.keyUsage, true, c.ca ? tlv(0x03, Buffer.from([1, 0x06])) : tlv(0x03, Buffer.from([7, 0x80]))),
    extension(OID.subjectKeyId, false, octets(keyId(spki))),
    extension(OID.authorityKeyId, false, seq(tlv(0x80, keyId(issuerSpki)))),
  ];
  if (!c.ca) {
    exts.push(extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))));
    const names = (c.altNames ?? []).map((n) => (isIP(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, Buffer.from(n, 'ascii'))));
    exts.push(extension(OID.subjectAltName, false, seq(...names)));
  }
  const tbs = seq(
    explicit(0, integer(2)), // v3
    integer(Buffer.concat([Buffer.from([0x40 | (randomBytes(1)[0]! & 0x3f)]), randomBytes(15)])),
    alg,
    name(c.issuerCn),
    seq(time(c.notBefore), time(c.notAfter)),
    name(c.subjectCn),
    spki,
    explicit(3, seq(...exts)),
  );
  const signature = sign('sha256', tbs, { key: c.issuerKey, dsaEncoding: 'der' });
  return seq(tbs, alg, bitString(signature));
}

/** PEM armour for DER bytes. */
export function toPem(der: Buffer, label: string): string {
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${label}-----\n${b64.endsWith('\n') ? b64 : `${b64}\n`}-----END ${label}-----\n`;
}

/** A fresh P-256 key pair. */
export function newEcKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}
