/**
 * Which webhook URLs the service may call (DESIGN §4 "Webhook URLs"): HTTPS to public addresses always;
 * `http://` and loopback / private (RFC 1918) / ULA / CGNAT (100.64/10) targets only with the operator setting
 * `allowLanWebhooks`; link-local and cloud metadata addresses, multicast, broadcast, unspecified, reserved and
 * IPv4-embedding IPv6 ranges, and the service's own port are always refused.
 *
 * `checkUrl` gives a clear message at create/update time (resolving the name once); `lookup` is the undici
 * `connect.lookup` used at delivery time: it resolves the name once per new connection, checks every address and
 * hands the checked address to the socket, so a second DNS answer cannot differ (rebinding).
 */
import dns from 'node:dns';
import os from 'node:os';
import ipaddr from 'ipaddr.js';

export class UrlPolicyError extends Error {
  override name = 'UrlPolicyError';
}

/** Addresses refused even though ipaddr.js files them under an allowed range. */
const METADATA_ADDRESSES = new Set(['100.100.100.200', '192.0.0.192', 'fd00:ec2::254']);
const LAN_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat']);

export type AddressClass = 'public' | 'lan' | 'refused';

/** Classifies one IP address (IPv4-mapped IPv6 is unwrapped first). */
export function classifyAddress(address: string): { cls: AddressClass; range: string; normalized: string } {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return { cls: 'refused', range: 'invalid', normalized: address };
  }
  const normalized = parsed.toNormalizedString();
  const canonical = parsed.toString();
  const range = parsed.range();
  if (METADATA_ADDRESSES.has(canonical) || METADATA_ADDRESSES.has(normalized)) return { cls: 'refused', range: 'metadata', normalized: canonical };
  if (range === 'unicast') return { cls: 'public', range, normalized: canonical };
  if (LAN_RANGES.has(range)) return { cls: 'lan', range, normalized: canonical };
  return { cls: 'refused', range, normalized: canonical };
}

function describe(range: string): string {
  switch (range) {
    case 'linkLocal':
      return 'a link-local address (cloud metadata and similar)';
    case 'metadata':
      return 'a cloud metadata address';
    case 'unspecified':
      return 'the unspecified address';
    case 'multicast':
      return 'a multicast address';
    case 'broadcast':
      return 'the broadcast address';
    default:
      return `a ${range} address`;
  }
}

export interface UrlPolicyOptions {
  /** Operator switch from flags/env; the `settings` table can also turn it on (see `allowLanSetting`). */
  allowLan: boolean;
  /** Reads the `settings` value of `allowLanWebhooks` (checked on every use). */
  allowLanSetting?: () => boolean;
  /** The service's own listen port, once known. */
  ownPort?: number;
}

export class UrlPolicy {
  readonly #opts: UrlPolicyOptions;
  /** checkStatic results by allowLan + raw URL (the dispatcher checks the same few URLs on every attempt). */
  readonly #memo = new Map<string, URL | UrlPolicyError>();

  constructor(opts: UrlPolicyOptions) {
    this.#opts = { ...opts };
  }

  set ownPort(port: number | undefined) {
    this.#opts.ownPort = port;
    this.#memo.clear();
  }

  get allowLan(): boolean {
    return this.#opts.allowLan || (this.#opts.allowLanSetting?.() ?? false);
  }

  /**
   * Checks everything that can be checked without DNS; returns the parsed URL, shared between calls with the same
   * `raw` (do not modify it). @throws UrlPolicyError
   */
  checkStatic(raw: string): URL {
    const key = (this.allowLan ? '1' : '0') + raw;
    let result = this.#memo.get(key);
    if (result === undefined) {
      try {
        result = this.#checkStatic(raw);
      } catch (err) {
        if (!(err instanceof UrlPolicyError)) throw err;
        result = err;
      }
      if (this.#memo.size >= 1000) this.#memo.clear();
      this.#memo.set(key, result);
    }
    if (result instanceof UrlPolicyError) throw result;
    return result;
  }

  #checkStatic(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new UrlPolicyError('url must be an absolute http(s) URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UrlPolicyError('url must use https://');
    if (url.protocol === 'http:' && !this.allowLan) {
      throw new UrlPolicyError('url must use https:// (http:// needs the operator setting allowLanWebhooks)');
    }
    if (url.username || url.password) throw new UrlPolicyError('url must not contain credentials');
    const host = hostOf(url);
    if (ipaddr.isValid(host)) this.checkAddress(host, portOf(url));
    else if (host === 'localhost' || host.endsWith('.localhost')) this.checkAddress('127.0.0.1', portOf(url));
    return url;
  }

  /** Checks one resolved address for a target on `port`. @throws UrlPolicyError */
  checkAddress(address: string, port: number): void {
    const { cls, range, normalized } = classifyAddress(address);
    if (cls === 'refused') throw new UrlPolicyError(`url resolves to ${describe(range)} (${normalized}), which is never allowed`);
    if (cls === 'lan' && !this.allowLan) {
      throw new UrlPolicyError(`url resolves to a ${range} address (${normalized}); LAN targets need the operator setting allowLanWebhooks`);
    }
    if (this.#opts.ownPort !== undefined && port === this.#opts.ownPort && isOwnAddress(normalized)) {
      throw new UrlPolicyError("url points at this service's own port");
    }
  }

  /** Create/update check: static rules, then the name resolved once (an unresolvable name is accepted). @throws UrlPolicyError */
  async checkUrl(raw: string): Promise<URL> {
    const url = this.checkStatic(raw);
    const host = hostOf(url);
    if (ipaddr.isValid(host) || host === 'localhost' || host.endsWith('.localhost')) return url;
    let addresses: dns.LookupAddress[];
    try {
      addresses = await dns.promises.lookup(host, { all: true });
    } catch {
      return url; // offline or not yet in DNS: checked again at delivery
    }
    for (const a of addresses) this.checkAddress(a.address, portOf(url));
    return url;
  }

  /** An undici/net `lookup` for connections to `port`: resolves once, refuses any disallowed answer. */
  lookupFor(port: number): NonNullable<import('node:net').TcpNetConnectOpts['lookup']> {
    return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
      dns.lookup(hostname, { all: true, ...(options.family ? { family: options.family } : {}) }, (err, addresses) => {
        if (err) return callback(err);
        try {
          if (addresses.length === 0) throw new UrlPolicyError(`${hostname} has no addresses`);
          for (const a of addresses) this.checkAddress(a.address, port);
        } catch (e) {
          return callback(e);
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      });
    }) as never;
  }
}

/** Hostname without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

function isOwnAddress(address: string): boolean {
  const { range } = classifyAddress(address);
  if (range === 'loopback' || range === 'unspecified') return true;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const i of list ?? []) if (classifyAddress(i.address).normalized === address) return true;
  }
  return false;
}
