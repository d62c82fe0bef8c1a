/**
 * The sandbox's own TLS certificate authority for its HTTPS media host (docs/architecture.md § Sandbox trust).
 *
 * Owns: a P-256 CA (10 years) and a server leaf it signs, for the loopback names (127.0.0.1, ::1,
 * localhost) plus the configured listen host; both persisted in the `meta` table, so a restarted
 * sandbox keeps the CA a service already trusts. The leaf is re-issued when the host set changes.
 * Only sandbox-mode requests trust `caCertPem` (see `service/engine/sandbox-trust.ts`).
 */
import { createPrivateKey } from 'node:crypto';
import type { Store } from './store.ts';
import { buildCertificate, newEcKey, toPem } from './x509.ts';

export interface TlsIdentity {
  /** PEM of the CA certificate clients should trust (sandbox mode only). */
  caCertPem: string;
  /** PEM of the server certificate followed by the CA (full chain). */
  certPem: string;
  /** PEM (PKCS#8) of the server key. */
  keyPem: string;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;
const DEFAULT_NAMES = ['127.0.0.1', '::1', 'localhost'];

/** Load the CA and a leaf valid for `host` (creating/persisting them as needed). */
export function loadTlsIdentity(store: Store, host: string): TlsIdentity {
  const names = [...new Set([...DEFAULT_NAMES, ...(host && host !== '0.0.0.0' && host !== '::' ? [host] : [])])];
  const namesKey = names.join(',');
  const get = (k: string): string | undefined => store.getMeta(k)?.toString('utf8');
  let caKeyPem = get('tls.ca.key');
  let caCertPem = get('tls.ca.cert');
  const now = Date.now();
  if (!caKeyPem || !caCertPem) {
    const { privateKey } = newEcKey();
    caKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    caCertPem = toPem(
      buildCertificate({
        subjectCn: 'Switchboard Sandbox CA',
        issuerCn: 'Switchboard Sandbox CA',
        subjectKey: privateKey,
        issuerKey: privateKey,
        ca: true,
        notBefore: new Date(now - 24 * 3600 * 1000),
        notAfter: new Date(now + 10 * YEAR_MS),
      }),
      'CERTIFICATE',
    );
  }
  let leafKeyPem = get('tls.leaf.key');
  let leafCertPem = get('tls.leaf.cert');
  if (!leafKeyPem || !leafCertPem || get('tls.leaf.names') !== namesKey || !store.getMeta('tls.ca.cert')) {
    const { privateKey } = newEcKey();
    leafKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    leafCertPem = toPem(
      buildCertificate({
        subjectCn: 'sandbox media host',
        issuerCn: 'Switchboard Sandbox CA',
        subjectKey: privateKey,
        issuerKey: createPrivateKey(caKeyPem),
        ca: false,
        altNames: names,
        notBefore: new Date(now - 24 * 3600 * 1000),
        notAfter: new Date(now + 5 * YEAR_MS),
      }),
      'CERTIFICATE',
    );
    const values: Array<[string, string]> = [
      ['tls.ca.key', caKeyPem],
      ['tls.ca.cert', caCertPem],
      ['tls.leaf.key', leafKeyPem],
      ['tls.leaf.cert', leafCertPem],
      ['tls.leaf.names', namesKey],
    ];
    store.transaction(() => {
      for (const [k, v] of values) store.setMeta(k, Buffer.from(v, 'utf8'));
    });
  }
  return { caCertPem, certPem: leafCertPem + caCertPem, keyPem: leafKeyPem };
}
