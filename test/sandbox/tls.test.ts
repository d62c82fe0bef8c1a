/** The sandbox's hand-written X.509 CA + leaf (DER encoder), checked with node:crypto, and its persistence. */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../service/sandbox/store.ts';
import { loadTlsIdentity } from '../../service/sandbox/tls.ts';

describe('sandbox TLS identity', () => {
  it('issues a CA and a loopback leaf it signs, stable across restarts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-tls-'));
    try {
      let store = new Store(dir);
      const first = loadTlsIdentity(store, '127.0.0.1');
      store.close();
      const ca = new X509Certificate(first.caCertPem);
      const leaf = new X509Certificate(first.certPem);
      expect(ca.ca).toBe(true);
      expect(ca.checkIssued(ca)).toBe(true);
      expect(leaf.ca).toBe(false);
      expect(leaf.checkIssued(ca)).toBe(true);
      expect(leaf.verify(ca.publicKey)).toBe(true);
      expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
      expect(leaf.checkIP('::1')).toBe('::1');
      expect(leaf.checkHost('localhost')).toBe('localhost');
      expect(new Date(leaf.validTo).getTime()).toBeGreaterThan(Date.now() + 365 * 86400e3);

      store = new Store(dir);
      const again = loadTlsIdentity(store, '127.0.0.1');
      expect(again).toEqual(first);
      // a new listen host re-issues the leaf under the same CA
      const other = loadTlsIdentity(store, '10.1.2.3');
      store.close();
      expect(other.caCertPem).toBe(first.caCertPem);
      expect(new X509Certificate(other.certPem).checkIP('10.1.2.3')).toBe('10.1.2.3');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
