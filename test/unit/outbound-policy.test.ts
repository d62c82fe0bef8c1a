/**
 * The outbound URL policy (service/net/outbound.ts) on its own: every spelling of every refused address class,
 * DNS rebinding with a resolver stub, redirects, and one error text whatever the target's state. Nothing here
 * connects outside loopback: refused addresses are refused before any socket, and the servers are local.
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAN_SPELLINGS, LOOPBACK_SPELLINGS, NEVER_SPELLINGS } from '../helpers/address-spellings.ts';
import { OutboundFetchError, OutboundPolicy, OutboundRefusedError, UNREACHABLE, classifyAddress } from '../../service/net/outbound.ts';

const refusal = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return undefined;
};

/** A resolver that must never be asked (every spelling above is decided without DNS). */
const noDns = async (host: string): Promise<dns.LookupAddress[]> => {
  throw new Error(`unexpected DNS lookup of ${host}`);
};

describe('outbound URL policy: address classes in every spelling', () => {
  const strict = new OutboundPolicy({ allowLan: false, resolve: noDns });
  const lan = new OutboundPolicy({ allowLan: true, resolve: noDns });

  it.each([...LOOPBACK_SPELLINGS, ...LAN_SPELLINGS])('refuses %s without LAN access, allows it with', async (host) => {
    const url = new URL(`https://${host}:8443/x`);
    const err = await refusal(strict.resolve(url));
    expect(err).toBeInstanceOf(OutboundRefusedError);
    // The refusal names the switch as the operator types it: the serve flag first, then env and setting.
    expect((err as Error).message).toMatch(/LAN targets need serve --allow-lan-webhooks \(or SWITCHBOARD_ALLOW_LAN_WEBHOOKS=1, or the allowLanWebhooks setting\)$/);
    expect(() => strict.checkWebhookUrl(url.href)).toThrow(OutboundRefusedError);
    await expect(lan.resolve(url)).resolves.toHaveLength(1);
  });

  it.each(LOOPBACK_SPELLINGS)('sandbox mode allows %s as a webhook target (http:// too), never as a send-* url', async (host) => {
    const sandbox = new OutboundPolicy({ allowLan: false, allowLoopbackWebhooks: true, resolve: noDns });
    expect(sandbox.checkWebhookUrl(`http://${host}:8443/hook`)).toBeInstanceOf(URL);
    await expect(sandbox.checkUrl(`https://${host}:8443/hook`)).resolves.toBeInstanceOf(URL);
    const err = await refusal(sandbox.resolve(new URL(`https://${host}:8443/pic.png`))); // 'fetch' use: send-* url
    expect((err as Error).message).toMatch(/loopback address .*; LAN targets need serve --allow-lan-webhooks/);
  });

  it('sandbox mode still refuses LAN, never-allowed and own-port webhook targets, naming the flag', async () => {
    const sandbox = new OutboundPolicy({ allowLan: false, allowLoopbackWebhooks: true, ownPort: 7575, resolve: noDns });
    for (const host of LAN_SPELLINGS) {
      expect(() => sandbox.checkWebhookUrl(`https://${host}/hook`), host).toThrow(/LAN targets need serve --allow-lan-webhooks/);
      expect(() => sandbox.checkWebhookUrl(`http://${host}/hook`), host).toThrow(/http:\/\/ needs serve --allow-lan-webhooks/);
    }
    for (const host of NEVER_SPELLINGS) expect(() => sandbox.checkWebhookUrl(`https://${host}/hook`), host).toThrow(/never allowed/);
    expect(() => sandbox.checkWebhookUrl('http://127.0.0.1:7575/api')).toThrow(/own port/);
    // A name that resolves to loopback is a loopback target too (checked at create and on every connection).
    const named = new OutboundPolicy({ allowLan: false, allowLoopbackWebhooks: true, resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    await expect(named.checkUrl('https://receiver.test/hook')).resolves.toBeInstanceOf(URL);
    await new Promise<void>((resolve) => named.lookupFor(443)('receiver.test', {}, (err, address) => (expect(err).toBeNull(), expect(address).toBe('127.0.0.1'), resolve())));
    // Live mode (the default): the same URLs are refused.
    const live = new OutboundPolicy({ allowLan: false, resolve: noDns });
    expect(() => live.checkWebhookUrl('http://127.0.0.1:9000/hook')).toThrow(/url must use https:\/\/ \(http:\/\/ needs serve --allow-lan-webhooks/);
    expect(() => live.checkWebhookUrl('https://127.0.0.1:9000/hook')).toThrow(/LAN targets need serve --allow-lan-webhooks/);
  });

  it.each(NEVER_SPELLINGS)('refuses %s even with LAN access', async (host) => {
    for (const policy of [strict, lan]) {
      const url = new URL(`https://${host}/latest/meta-data`);
      const err = await refusal(policy.resolve(url));
      expect(err).toBeInstanceOf(OutboundRefusedError);
      expect((err as Error).message).toMatch(/never allowed/);
      expect(() => policy.checkWebhookUrl(url.href)).toThrow(/never allowed/);
    }
  });

  it('refuses a name when any of its addresses is refused, and resolves public ones', async () => {
    const answers: Record<string, dns.LookupAddress[]> = {
      'mixed.example': [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.1', family: 4 },
      ],
      'meta.example': [{ address: 'fd00:ec2::254', family: 6 }],
      'public.example': [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }],
      'nat64.example': [{ address: '64:ff9b::5db8:d822', family: 6 }],
    };
    const policy = new OutboundPolicy({ allowLan: false, resolve: async (h) => answers[h] ?? [] });
    expect(await refusal(policy.resolve(new URL('https://mixed.example/')))).toBeInstanceOf(OutboundRefusedError);
    expect(await refusal(policy.resolve(new URL('https://meta.example/')))).toBeInstanceOf(OutboundRefusedError);
    expect(await refusal(policy.resolve(new URL('https://nothing.example/')))).toBeInstanceOf(OutboundRefusedError);
    await expect(policy.resolve(new URL('https://public.example/'))).resolves.toHaveLength(2);
    await expect(policy.resolve(new URL('https://nat64.example/'))).resolves.toHaveLength(1);
    // Webhook create: a refused answer is a clear error; an unresolvable name is checked again at delivery.
    await expect(policy.checkUrl('https://mixed.example/hook')).rejects.toThrow(/private address \(10\.0\.0\.1\)/);
    const offline = new OutboundPolicy({ allowLan: false, resolve: async () => Promise.reject(new Error('ENOTFOUND')) });
    await expect(offline.checkUrl('https://not-yet.example/hook')).resolves.toBeInstanceOf(URL);
  });

  it('classifies embedded IPv4 by the address it carries', () => {
    expect(classifyAddress('::ffff:127.0.0.1')).toMatchObject({ cls: 'lan', range: 'loopback' });
    expect(classifyAddress('64:ff9b::a00:1')).toMatchObject({ cls: 'lan', range: 'private' });
    expect(classifyAddress('64:ff9b::5db8:d822')).toMatchObject({ cls: 'public' });
    expect(classifyAddress('::7f00:1')).toMatchObject({ cls: 'refused', range: 'ipv4Compatible' });
    expect(classifyAddress('::1')).toMatchObject({ cls: 'lan', range: 'loopback' });
    expect(classifyAddress('100.100.100.200')).toMatchObject({ cls: 'refused', range: 'metadata' });
  });
});

describe('outbound URL policy: pinning, redirects, one error text', () => {
  /** Requests seen per listening address. */
  const hits: Record<string, string[]> = { '127.0.0.1': [], '127.0.0.2': [] };
  const servers: Array<http.Server | net.Server> = [];
  let port = 0;
  let closedPort = 0;
  let silentPort = 0;
  const sockets: net.Socket[] = [];

  const listen = (server: http.Server | net.Server, host: string, p = 0) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, host, () => resolve((server.address() as AddressInfo).port));
      servers.push(server);
    });

  beforeAll(async () => {
    const handler = (host: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
      hits[host]!.push(req.url!);
      if (req.url === '/redirect') return res.writeHead(302, { location: `http://127.0.0.1:${port}/target` }).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello from ${host}`);
    };
    // Two loopback addresses on one port: which one answered shows where the connection went.
    port = await listen(http.createServer(handler('127.0.0.2')), '127.0.0.2');
    await listen(http.createServer(handler('127.0.0.1')), '127.0.0.1', port);
    const probe = net.createServer();
    closedPort = await listen(probe, '127.0.0.1');
    await new Promise<void>((r) => probe.close(() => r()));
    silentPort = await listen(net.createServer((socket) => sockets.push(socket)), '127.0.0.1'); // accepts, never answers
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    for (const s of servers) {
      if (s instanceof http.Server) s.closeAllConnections();
      if (s.listening) await new Promise((r) => s.close(r));
    }
  });

  it('connects to the address it checked, not to a second DNS answer (rebinding)', async () => {
    let lookups = 0;
    const rebinding = async (): Promise<dns.LookupAddress[]> => [{ address: ++lookups === 1 ? '127.0.0.2' : '127.0.0.1', family: 4 }];
    const policy = new OutboundPolicy({ allowLan: true, resolve: rebinding });
    hits['127.0.0.1'] = [];
    hits['127.0.0.2'] = [];
    const res = await policy.fetch(new URL(`http://rebind.test:${port}/pinned`), { method: 'GET', timeoutMs: 5_000 });
    expect(await res.body.text()).toBe('hello from 127.0.0.2');
    expect(lookups).toBe(1);
    expect(hits).toEqual({ '127.0.0.2': ['/pinned'], '127.0.0.1': [] });
  });

  it('refuses a name whose first answer is loopback without LAN access: no connection at all', async () => {
    let lookups = 0;
    const rebinding = async (): Promise<dns.LookupAddress[]> => [{ address: ++lookups === 1 ? '127.0.0.1' : '93.184.216.34', family: 4 }];
    const policy = new OutboundPolicy({ allowLan: false, resolve: rebinding });
    hits['127.0.0.1'] = [];
    const err = await refusal(policy.fetch(new URL(`http://rebind.test:${port}/x`), { method: 'GET', timeoutMs: 5_000 }));
    expect(err).toBeInstanceOf(OutboundFetchError);
    expect((err as OutboundFetchError).reason).toMatch(/loopback/);
    expect(lookups).toBe(1);
    expect(hits['127.0.0.1']).toEqual([]);
  });

  it('long-lived agents check every new connection (lookupFor) and refuse a rebound answer', async () => {
    let lookups = 0;
    const policy = new OutboundPolicy({ allowLan: false, resolve: async () => [{ address: ++lookups === 1 ? '93.184.216.34' : '127.0.0.1', family: 4 }] });
    const lookup = policy.lookupFor(port);
    await new Promise<void>((resolve) => lookup('a.test', {}, (err, address) => (expect(err).toBeNull(), expect(address).toBe('93.184.216.34'), resolve())));
    await new Promise<void>((resolve) => lookup('a.test', {}, (err) => (expect(err).toBeInstanceOf(OutboundRefusedError), resolve())));
  });

  it('does not follow redirects', async () => {
    const policy = new OutboundPolicy({ allowLan: true });
    hits['127.0.0.1'] = [];
    const err = await refusal(policy.fetch(new URL(`http://127.0.0.1:${port}/redirect`), { method: 'GET', timeoutMs: 5_000 }));
    expect(err).toBeInstanceOf(OutboundFetchError);
    expect((err as OutboundFetchError).reason).toMatch(/HTTP 302/);
    expect(hits['127.0.0.1']).toEqual(['/redirect']);
  });

  it('gives one error text for a refused address, a closed port, a timeout and a non-2xx answer', async () => {
    const policy = new OutboundPolicy({ allowLan: true });
    const opts = { method: 'GET' as const, timeoutMs: 300 };
    const cases = {
      refused: `http://169.254.169.254/latest/meta-data`,
      closed: `http://127.0.0.1:${closedPort}/`,
      timeout: `http://127.0.0.1:${silentPort}/`,
      redirect: `http://127.0.0.1:${port}/redirect`,
      tls: `https://127.0.0.1:${port}/`,
    };
    const reasons: Record<string, string> = {};
    for (const [name, url] of Object.entries(cases)) {
      const err = await refusal(policy.fetch(new URL(url), opts));
      expect(err, name).toBeInstanceOf(OutboundFetchError);
      expect((err as Error).message, name).toBe(UNREACHABLE);
      reasons[name] = (err as OutboundFetchError).reason;
    }
    // The causes differ (they go to the log only).
    expect(new Set(Object.values(reasons)).size).toBe(Object.keys(cases).length);
  });
});
