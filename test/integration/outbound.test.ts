/**
 * The outbound URL policy at the API (webhook create and update refuse every spelling of every refused address
 * class with a 400 that says why, and store nothing) and the dispatcher's connection pool per webhook (two hanging
 * consumers on a host do not hold up a healthy webhook on the same host and port). Real API, SQLite, dispatcher
 * and HTTP on loopback; nothing connects outside loopback.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../../service/webhooks/dispatcher.ts';
import { OutboundPolicy, UNREACHABLE } from '../../service/net/outbound.ts';
import { LAN_SPELLINGS, LOOPBACK_SPELLINGS, NEVER_SPELLINGS } from '../helpers/address-spellings.ts';
import { waitFor } from '../helpers/wait.ts';
import { startTestApi, type TestApi, type TestUser } from './api-harness.ts';

describe('outbound URL policy at webhook create/update', () => {
  let api: TestApi;
  let alice: TestUser;
  let connId: string;

  beforeAll(async () => {
    api = await startTestApi();
    alice = api.user('alice');
    connId = api.connection(alice.id, 'online').id;
  });
  afterAll(async () => api?.close());

  const create = (url: string) =>
    api.request<{ message: string; id?: string }>('POST', `/connections/${connId}/webhooks`, { token: alice.token, body: { url, events: ['message'] } });

  it.each([...LOOPBACK_SPELLINGS, ...LAN_SPELLINGS])('refuses https://%s/ without LAN access (400, nothing stored)', async (host) => {
    api.store.webhooks.setAllowLanSetting(false);
    const res = await create(`https://${host}/hook`);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^body\/url: url resolves to a (loopback|private|carrierGradeNat|uniqueLocal) address .*; LAN targets need serve --allow-lan-webhooks .*allowLanWebhooks setting\)$/);
    expect(api.store.webhooks.listByConnection(connId)).toEqual([]);
  });

  it.each(NEVER_SPELLINGS)('refuses https://%s/ even with LAN access', async (host) => {
    api.store.webhooks.setAllowLanSetting(true);
    const res = await create(`https://${host}/hook`);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^body\/url: url resolves to .* which is never allowed$/);
    expect(api.store.webhooks.listByConnection(connId)).toEqual([]);
  });

  it('refuses the same spellings on update, leaving the URL as it was', async () => {
    api.store.webhooks.setAllowLanSetting(false);
    const created = await create('https://93.184.216.34/hook');
    expect(created.status).toBe(201);
    const id = created.body.id!;
    await api.request('PUT', `/webhooks/${id}`, { token: alice.token, body: { active: false } }); // never delivered
    for (const host of ['[::127.0.0.1]', '[::ffff:7f00:1]', '0x7f.1', '[64:ff9b::10.0.0.1]', 'localhost.']) {
      const res = await api.request<{ message: string }>('PUT', `/webhooks/${id}`, { token: alice.token, body: { url: `https://${host}/x` } });
      expect(res.status, host).toBe(400);
    }
    expect(api.store.webhooks.get(id)!.url).toBe('https://93.184.216.34/hook');
    api.store.webhooks.delete(id);
  });
});

describe('a connection pool per webhook', () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher;
  let server: http.Server;
  let port = 0;
  /** Requests held open by the hanging paths. */
  const hanging: http.ServerResponse[] = [];
  const healthy: string[] = [];
  const closed = new Set<http.ServerResponse>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url!.startsWith('/hang')) {
          hanging.push(res); // never answered
          res.on('close', () => closed.add(res));
        }
        else {
          healthy.push(req.headers['webhook-id'] as string);
          res.writeHead(204).end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    api = await startTestApi();
    api.store.webhooks.setAllowLanSetting(true); // the consumers are on loopback
    dispatcher = new WebhookDispatcher({
      store: api.store,
      outbox: api.outbox,
      logger: api.app.log,
      policy: new OutboundPolicy({ allowLan: false, allowLanSetting: () => api.store.webhooks.allowLanSetting() }),
      retryDelaysMs: [0, 60_000],
      perWebhookConcurrency: 4,
      totalTimeoutMs: 120_000,
      pollMs: 100,
    });
    await dispatcher.start();
  });

  afterAll(async () => {
    await dispatcher?.close(100);
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await api?.close();
  });

  it('delivers to a healthy webhook while two others on the same host and port hang', async () => {
    const alice = api.user('alice');
    const hook = async (path: string) => {
      const conn = api.connection(alice.id, 'online');
      const res = await api.request<{ id: string }>('POST', `/connections/${conn.id}/webhooks`, {
        token: alice.token,
        body: { url: `http://127.0.0.1:${port}${path}`, events: ['*'] },
      });
      expect(res.status).toBe(201);
      return { conn: conn.id, id: res.body.id };
    };
    const a = await hook('/hang/a');
    const b = await hook('/hang/b');
    const ok = await hook('/ok');
    // Each hanging webhook fills its own concurrency (4) and has more queued behind it.
    for (let i = 0; i < 10; i++) {
      // stand-in payloads (`as never`: not a message's shape; delivery is under test)
      api.events.append(alice.id, a.conn, 'message', { i } as never);
      api.events.append(alice.id, b.conn, 'message', { i } as never);
    }
    await waitFor('both hanging webhooks at their concurrency limit', () => (hanging.length === 8 ? true : undefined));
    for (let i = 0; i < 5; i++) api.events.append(alice.id, ok.conn, 'message', { i } as never);
    // With one pool per host (8 sockets here) the healthy webhook would wait for the hanging ones' 120 s timeout.
    await waitFor('the healthy webhook delivered', () => (healthy.length === 5 ? true : undefined), { timeoutMs: 15_000 });
    expect(hanging).toHaveLength(8); // still hanging: the healthy deliveries did not wait for them
    await waitFor('outcomes recorded', async () => {
      const l = await api.request<Array<{ status: string }>>('GET', `/webhooks/${ok.id}/logs`, { token: alice.token });
      return l.body.length === 5 && l.body.every((d) => d.status === 'delivered') ? true : undefined;
    });

    // A deleted webhook's pool is destroyed: its held requests end, the other hanging webhook's stay.
    expect((await api.request('DELETE', `/webhooks/${a.id}`, { token: alice.token })).status).toBe(200);
    dispatcher.deleted(a.id); // what the service's webhook routes call on DELETE
    await waitFor("the deleted webhook's sockets closed", () => (closed.size === 4 ? true : undefined));
    expect([...closed].every((res) => res.req.url!.startsWith('/hang/a'))).toBe(true);
  });

  it('logs one text for the consumer whether the target is refused by the policy or its port is closed', async () => {
    const alice = api.user('alice');
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const closedPort = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const make = async (url: string) => {
      const conn = api.connection(alice.id, 'online');
      const res = await api.request<{ id: string }>('POST', `/connections/${conn.id}/webhooks`, { token: alice.token, body: { url, events: ['*'] } });
      expect(res.status).toBe(201);
      return { conn: conn.id, id: res.body.id };
    };
    const refused = await make(`http://127.0.0.1:${port}/ok-but-refused`);
    const closedHook = await make(`http://127.0.0.1:${closedPort}/x`);
    const before = healthy.length;
    // The operator turns LAN access off: the loopback webhook is refused at delivery, before any connection.
    api.store.webhooks.setAllowLanSetting(false);
    try {
      for (const h of [refused, closedHook]) api.events.append(alice.id, h.conn, 'message', {} as never);
      const errorOf = async (id: string) => {
        const l = await api.request<Array<{ lastError: string | null }>>('GET', `/webhooks/${id}/logs`, { token: alice.token });
        return l.body[0]?.lastError ?? undefined;
      };
      expect(await waitFor('the refused attempt', () => errorOf(refused.id))).toBe(UNREACHABLE);
      expect(await waitFor('the closed-port attempt', () => errorOf(closedHook.id))).toBe(UNREACHABLE);
      expect(healthy.length).toBe(before); // the refused one never reached the server
    } finally {
      api.store.webhooks.setAllowLanSetting(true);
    }
  });
});
