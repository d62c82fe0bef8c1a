/**
 * The outbound URL policy (issue 20 item 2, docs/architecture.md § Webhook URLs): the one gate for every URL the
 * service fetches on a user's behalf — webhook URLs (at create/update and on each delivery) and the `url` field of the
 * send-* routes (media by URL).
 *
 * - Schemes: webhooks `https://`, `http://` only with LAN access allowed (or to loopback in sandbox mode); media
 *   `https://` only (outgoing.ts).
 * - Addresses: the host is resolved first (every address of the answer is checked). Loopback, private (RFC 1918),
 *   CGNAT (100.64/10) and ULA (fc00::/7) targets, and `localhost` / `*.localhost`, need LAN access allowed (the
 *   operator switch `allowLanWebhooks`: flag, env or settings.json, docs/settings.md), except that in sandbox mode
 *   (a test mode) webhook URLs may target loopback (`http://` too) without it (`allowLoopbackWebhooks`; send-* `url`
 *   fetches stay strict). Link-local (169.254/16, fe80::/10), cloud metadata
 *   (169.254.169.254, fd00:ec2::254, 100.100.100.200, 192.0.0.192), unspecified, multicast, broadcast, reserved
 *   and documentation ranges, IPv4-compatible IPv6 (`::a.b.c.d`), 6to4, Teredo and the service's own port are
 *   always refused. Every spelling is covered: the WHATWG URL parser turns decimal, octal, hex and short IPv4
 *   (`2130706433`, `0x7f.1`, `017700000001`, `127.1`) and trailing dots into dotted quads; IPv4-mapped IPv6
 *   (`::ffff:127.0.0.1`) and NAT64 (`64:ff9b::/96`) are judged by the IPv4 address they carry.
 * - Pinning: the connection goes to an address checked by the same lookup (`pinnedLookup` / `lookupFor`), so a
 *   second DNS answer cannot differ from the checked one (DNS rebinding).
 * - No redirects: a 3xx answer is a failure. Failures that depend on the target's state (refused address, closed
 *   port, timeout, TLS error, DNS error, non-2xx) give the API user one text, `UNREACHABLE`; the cause goes to the log.
 */
import dns from 'node:dns';
import type { ConnectionOptions } from 'node:tls';
import os from 'node:os';
import ipaddr from 'ipaddr.js';
import { Agent, request, type Dispatcher } from 'undici';

/** A URL or address the policy refuses; the message says why (shown at webhook create/update). */
export class OutboundRefusedError extends Error {
  override name = 'OutboundRefusedError';
}

/**
 * A fetch that did not produce a 2xx answer. `message` is always `UNREACHABLE` (no port-scan oracle); `reason`
 * is the cause, for the log only.
 */
export class OutboundFetchError extends Error {
  override name = 'OutboundFetchError';
  constructor(readonly reason: string) {
    super(UNREACHABLE);
  }
}

/** The one text an API user sees when an outbound request fails, whatever the target's state. */
export const UNREACHABLE = 'The URL could not be reached (refused address, network or TLS error, timeout, redirect or non-2xx answer)';

/** Resolves a host name to every address (node's `dns.lookup` with `all: true` by default; tests inject a stub). */
export type Resolver = (hostname: string) => Promise<dns.LookupAddress[]>;

const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** Addresses refused even though ipaddr.js files them under an allowed range. */
const METADATA_ADDRESSES = new Set(['169.254.169.254', '100.100.100.200', '192.0.0.192', 'fd00:ec2::254']);
const LAN_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat']);
/** NAT64 well-known prefix (RFC 6052): the IPv4 address sits in the last 32 bits. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
/** IPv4-compatible IPv6 (RFC 4291 §2.5.5.1, deprecated): `::a.b.c.d`. */
const V4_COMPATIBLE = ipaddr.parseCIDR('::/96');

export type AddressClass = 'public' | 'lan' | 'refused';

/** Classifies one IP address: IPv4-mapped and NAT64 addresses are judged by the IPv4 address they carry. */
export function classifyAddress(address: string): { cls: AddressClass; range: string; normalized: string } {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return { cls: 'refused', range: 'invalid', normalized: address };
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    const bytes = v6.toByteArray();
    if (v6.match(NAT64)) {
      const inner = classifyAddress(bytes.slice(12).join('.'));
      return { ...inner, normalized: v6.toString() };
    }
    if (v6.match(V4_COMPATIBLE) && v6.range() === 'unicast') return { cls: 'refused', range: 'ipv4Compatible', normalized: v6.toString() };
  }
  const canonical = parsed.toString();
  const range = parsed.range();
  if (METADATA_ADDRESSES.has(canonical) && range !== 'linkLocal') return { cls: 'refused', range: 'metadata', normalized: canonical };
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
    case 'ipv4Compatible':
      return 'an IPv4-compatible IPv6 address';
    default:
      return `a ${range} address`;
  }
}

/** What an outbound URL is for: a webhook target, or a URL fetched for a send-* route. */
export type OutboundUse = 'webhook' | 'fetch';

/** How a refused LAN target or http:// URL names the switch that allows it (serve flag, env, setting). */
export const LAN_SWITCH_HINT = 'serve --allow-lan-webhooks (or SWITCHBOARD_ALLOW_LAN_WEBHOOKS=1, or the allowLanWebhooks setting)';

export interface OutboundPolicyOptions {
  /** A fixed LAN switch (tests, embedders); the service passes false and reads its settings through `allowLanSetting`. */
  allowLan: boolean;
  /**
   * Webhook URLs may target loopback (127.0.0.0/8, ::1, `localhost`; `http://` too) without `allowLan`: on in
   * sandbox mode, a test mode whose receivers usually run on the same machine. Never applies to send-* `url`.
   */
  allowLoopbackWebhooks?: boolean;
  /** Reads the current `allowLanWebhooks` (checked on every use, so a change from the settings API applies at once). */
  allowLanSetting?: () => boolean;
  /** The service's own listen port, once known. */
  ownPort?: number;
  /** Name resolution (tests inject a stub); `dns.lookup` with `all: true` by default. */
  resolve?: Resolver;
}

export interface FetchOptions {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Total time for connect, headers and body, in ms. */
  timeoutMs: number;
  /** Connect timeout in ms (default: `timeoutMs`). */
  connectTimeoutMs?: number;
  /** TLS options for the connection (tests trust a local CA). */
  tls?: ConnectionOptions;
}

type LookupCallback = (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void;
/** The `lookup` of `net.connect` / undici's `connect` options. */
export type ConnectLookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

/** The policy; one instance per service (its LAN switch and own port are shared by webhooks and sends). */
export class OutboundPolicy {
  readonly #opts: OutboundPolicyOptions;
  readonly #resolve: Resolver;
  /** checkWebhookUrl results by allowLan + raw URL (the dispatcher checks the same few URLs on every attempt). */
  readonly #memo = new Map<string, URL | OutboundRefusedError>();

  constructor(opts: OutboundPolicyOptions) {
    this.#opts = { ...opts };
    this.#resolve = opts.resolve ?? systemResolver;
  }

  set ownPort(port: number | undefined) {
    this.#opts.ownPort = port;
    this.#memo.clear();
  }

  get allowLan(): boolean {
    return this.#opts.allowLan || (this.#opts.allowLanSetting?.() ?? false);
  }

  /** Whether an address of class `lan` in `range` may be reached for `use`. */
  #lanAllowed(range: string, use: OutboundUse): boolean {
    return this.allowLan || (use === 'webhook' && range === 'loopback' && this.#opts.allowLoopbackWebhooks === true);
  }

  /**
   * A webhook URL's static checks (scheme, credentials, IP-literal and `localhost` hosts); returns the parsed URL,
   * shared between calls with the same `raw` (do not modify it). @throws OutboundRefusedError
   */
  checkWebhookUrl(raw: string): URL {
    const key = (this.allowLan ? '1' : '0') + raw;
    let result = this.#memo.get(key);
    if (result === undefined) {
      try {
        result = this.#checkWebhookUrl(raw);
      } catch (err) {
        if (!(err instanceof OutboundRefusedError)) throw err;
        result = err;
      }
      if (this.#memo.size >= 1000) this.#memo.clear();
      this.#memo.set(key, result);
    }
    if (result instanceof OutboundRefusedError) throw result;
    return result;
  }

  #checkWebhookUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundRefusedError('url must be an absolute http(s) URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundRefusedError('url must use https://');
    if (url.protocol === 'http:' && !this.allowLan && !(this.#opts.allowLoopbackWebhooks && isLoopbackHost(hostOf(url)))) {
      throw new OutboundRefusedError(`url must use https:// (http:// needs ${LAN_SWITCH_HINT})`);
    }
    this.checkHost(url, 'webhook');
    return url;
  }

  /** Checks what a URL says without DNS: no credentials; an IP literal or a `localhost` name is checked as an address. @throws OutboundRefusedError */
  checkHost(url: URL, use: OutboundUse = 'fetch'): void {
    if (url.username || url.password) throw new OutboundRefusedError('url must not contain credentials');
    const host = hostOf(url);
    if (ipaddr.isValid(host)) this.checkAddress(host, portOf(url), use);
    else if (isLocalhostName(host)) this.checkAddress('127.0.0.1', portOf(url), use);
  }

  /** Checks one resolved address for a target on `port`, used for `use`. @throws OutboundRefusedError */
  checkAddress(address: string, port: number, use: OutboundUse = 'fetch'): void {
    const { cls, range, normalized } = classifyAddress(address);
    if (cls === 'refused') throw new OutboundRefusedError(`url resolves to ${describe(range)} (${normalized}), which is never allowed`);
    if (cls === 'lan' && !this.#lanAllowed(range, use)) {
      throw new OutboundRefusedError(`url resolves to a ${range} address (${normalized}); LAN targets need ${LAN_SWITCH_HINT}`);
    }
    if (this.#opts.ownPort !== undefined && port === this.#opts.ownPort && isOwnAddress(normalized)) {
      throw new OutboundRefusedError("url points at this service's own port");
    }
  }

  /**
   * Every address of `url`'s host, each checked (an IP literal or `localhost` without DNS).
   * @throws OutboundRefusedError for a refused address; the resolver's error when the name does not resolve
   */
  async resolve(url: URL, use: OutboundUse = 'fetch'): Promise<dns.LookupAddress[]> {
    this.checkHost(url, use);
    const host = hostOf(url);
    const port = portOf(url);
    if (ipaddr.isValid(host)) return [{ address: host, family: host.includes(':') ? 6 : 4 }];
    if (isLocalhostName(host)) return [{ address: '127.0.0.1', family: 4 }];
    const addresses = await this.#resolve(host);
    if (addresses.length === 0) throw new OutboundRefusedError(`${host} has no addresses`);
    for (const a of addresses) this.checkAddress(a.address, port, use);
    return addresses;
  }

  /** Webhook create/update: static rules, then the name resolved once (an unresolvable name is accepted). @throws OutboundRefusedError */
  async checkUrl(raw: string): Promise<URL> {
    const url = this.checkWebhookUrl(raw);
    try {
      await this.resolve(url, 'webhook');
    } catch (err) {
      if (err instanceof OutboundRefusedError) throw err;
      // offline or not yet in DNS: checked again at delivery
    }
    return url;
  }

  /**
   * An undici `connect.lookup` for a webhook's long-lived agent whose connections go to `port`: every new
   * connection resolves the name once, checks every address (as a webhook target) and connects to a checked one.
   */
  lookupFor(port: number): ConnectLookup {
    return (hostname, options, callback) => {
      const host = hostname.replace(/^\[(.*)\]$/, '$1');
      const literal = ipaddr.isValid(host) ? [{ address: host, family: host.includes(':') ? 6 : 4 }] : undefined;
      const answer = literal ? Promise.resolve(literal) : isLocalhostName(host) ? Promise.resolve([{ address: '127.0.0.1', family: 4 }]) : this.#resolve(host);
      answer.then(
        (addresses) => {
          try {
            if (addresses.length === 0) throw new OutboundRefusedError(`${host} has no addresses`);
            for (const a of addresses) this.checkAddress(a.address, port, 'webhook');
          } catch (err) {
            return callback(err as Error, []);
          }
          answerLookup(addresses, options, callback);
        },
        (err: Error) => callback(err, []),
      );
    };
  }

  /**
   * One request to `url` with the target checked and pinned: resolves and checks first, then connects only to
   * the checked addresses (a fresh agent, closed afterwards); no redirects; only 2xx is returned.
   * The caller must consume or destroy `body`.
   * @throws OutboundFetchError (message `UNREACHABLE`, cause in `reason`) for anything but a 2xx answer
   */
  async fetch(url: URL, opts: FetchOptions): Promise<Dispatcher.ResponseData> {
    let addresses: dns.LookupAddress[];
    try {
      addresses = await this.resolve(url);
    } catch (err) {
      throw new OutboundFetchError(reasonOf(err));
    }
    const agent = new Agent({
      connect: { timeout: opts.connectTimeoutMs ?? opts.timeoutMs, lookup: pinnedLookup(addresses), ...opts.tls },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connections: 1,
      pipelining: 0,
    });
    const close = () => void agent.destroy().catch(() => undefined);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: opts.method,
        dispatcher: agent,
        signal: AbortSignal.timeout(opts.timeoutMs),
        ...(opts.headers && { headers: opts.headers }),
        ...(opts.body !== undefined && { body: opts.body }),
      });
    } catch (err) {
      close();
      throw new OutboundFetchError(reasonOf(err));
    }
    res.body.on('error', () => undefined); // a destroyed or timed-out body: the reader sees it through its own await
    if (res.statusCode < 200 || res.statusCode > 299) {
      res.body.destroy();
      close();
      throw new OutboundFetchError(`HTTP ${res.statusCode}${res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : ''}`);
    }
    res.body.once('close', close);
    return res;
  }
}

/** A `connect.lookup` that answers with `addresses` (already checked) whatever name it is asked for. */
export function pinnedLookup(addresses: readonly dns.LookupAddress[]): ConnectLookup {
  return (_hostname, options, callback) => answerLookup(addresses, options, callback);
}

function answerLookup(addresses: readonly dns.LookupAddress[], options: dns.LookupOptions, callback: LookupCallback): void {
  const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
  const list = wanted.length ? wanted : addresses;
  if (options.all) callback(null, [...list]);
  else callback(null, list[0]!.address, list[0]!.family);
}

/** The cause of a failed request, for logs (never shown to the API user). */
export function reasonOf(err: unknown): string {
  if (err instanceof OutboundRefusedError) return `refused by the outbound URL policy: ${err.message}`;
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timed out';
  const cause = e.cause?.code ?? e.cause?.message;
  const text = [e.code, e.message, cause && cause !== e.code ? `(${cause})` : undefined].filter(Boolean).join(' ');
  return text.slice(0, 500) || 'request failed';
}

/** Hostname without IPv6 brackets and without a trailing dot. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** Whether a URL's host (from `hostOf`) is a loopback IP literal in any spelling, or a `localhost` name. */
function isLoopbackHost(host: string): boolean {
  return isLocalhostName(host) || (ipaddr.isValid(host) && classifyAddress(host).range === 'loopback');
}

function isOwnAddress(address: string): boolean {
  const { range } = classifyAddress(address);
  if (range === 'loopback' || range === 'unspecified') return true;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const i of list ?? []) if (classifyAddress(i.address).normalized === address) return true;
  }
  return false;
}
