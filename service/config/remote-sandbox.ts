/**
 * Trusting a sandbox that runs in another process (`switchboard sandbox`): its admin API answers `GET /` with
 * `{ rootPublicKey: <hex>, caCertPem }`, the root of its Noise certificate chain and the CA of its media host,
 * on the same host and port as its WebSocket endpoint. Used only in sandbox mode; a live service never trusts a key it was not given.
 */

/** The sandbox at a `--wa-url` could not tell its root key; the service does not start. */
export class SandboxDiscoveryError extends Error {
  override name = 'SandboxDiscoveryError';
}

/** How long the lookup may take before the service refuses to start. */
const TIMEOUT_MS = 5_000;

/** Admin API base (`http://HOST:PORT`) of the sandbox whose WebSocket endpoint is `waUrl`. */
export function sandboxAdminUrl(waUrl: string): string {
  const url = new URL('/', waUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  return url.origin;
}

/** What the service needs to trust a sandbox running elsewhere. */
export interface SandboxTrust {
  /** 32-byte root key of its Noise certificate chain. */
  rootPublicKey: Buffer;
  /** PEM of the CA of its HTTPS media host, when it reports one. */
  caCertPem?: string;
}

/**
 * Reads the trust anchors of the sandbox behind `waUrl` (`ws://HOST:PORT/ws/chat`) from its admin `GET /`
 * (`{ rootPublicKey: <hex>, caCertPem?: <PEM> }`).
 * @throws SandboxDiscoveryError naming the URL when the sandbox cannot be reached or answers something else.
 */
export async function fetchSandboxTrust(waUrl: string): Promise<SandboxTrust> {
  const url = new URL('/', sandboxAdminUrl(waUrl));
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const info = (await res.json()) as { rootPublicKey?: unknown; caCertPem?: unknown };
    const hex = info.rootPublicKey;
    if (typeof hex !== 'string' || !/^[0-9a-f]{64}$/i.test(hex)) throw new Error('no rootPublicKey in its answer');
    const ca = typeof info.caCertPem === 'string' && info.caCertPem.includes('BEGIN CERTIFICATE') ? info.caCertPem : undefined;
    return { rootPublicKey: Buffer.from(hex, 'hex'), ...(ca && { caCertPem: ca }) };
  } catch (err) {
    throw new SandboxDiscoveryError(
      `cannot read the sandbox root key from ${url.href} (${(err as Error).message}); pass --wa-root-key`,
    );
  }
}
