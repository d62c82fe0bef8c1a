/**
 * The settings as the whole service wires them (startService, real HTTP on loopback): the desktop's port fallback —
 * a configured port held by another program gives a free port, the same sentence in the log and in the health
 * answer, and nothing of the kind for headless serve (EADDRINUSE as before) — and the LAN switch saved from the API
 * applying at once to webhook URLs (http:// on loopback refused, then accepted) without a restart.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServiceConfig } from '../../service/config/service-config.ts';
import { startService, type RunningService } from '../../service/index.ts';
import { offlineServiceConfig } from './api-harness.ts';

const dirs: string[] = [];
const running: RunningService[] = [];
const servers: net.Server[] = [];
afterAll(async () => {
  for (const s of running) await s.close();
  for (const s of servers) await new Promise((r) => s.close(r));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Live mode pointed at a port nothing answers on: sessions never reach WhatsApp. */
function config(port: number): ServiceConfig {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-settings-svc-'));
  dirs.push(dataDir);
  return offlineServiceConfig(dataDir, { port, logLevel: 'info' });
}

async function holdPort(): Promise<number> {
  const server = net.createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

function capturedLogger() {
  let text = '';
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        text += chunk.toString();
        done();
      },
    }),
  );
  return { logger, text: () => text };
}

describe('the settings in the running service', { timeout: 60_000 }, () => {
  it('desktop: a taken port falls back to a free one, said in the log and the health answer', async () => {
    const taken = await holdPort();
    const log = capturedLogger();
    const service = await startService(config(taken), { logger: log.logger, portFallback: true, openKeychain: null });
    running.push(service);
    const port = Number(new URL(service.apiUrl).port);
    expect(port).not.toBe(taken);
    const message = `Port ${taken} is in use by another program, so the API listens on port ${port} for now. Free port ${taken}, or choose another port in Settings, then restart.`;
    expect(service.portFallback).toEqual({ requested: taken, port, message });
    const health = (await (await fetch(`${service.apiUrl}/`)).json()) as Record<string, unknown>;
    expect(health.portFallback).toEqual({ requested: taken, port, message });
    const line = log.text().split('\n').find((l) => l.includes('is in use by another program'));
    expect(JSON.parse(line!)).toMatchObject({ level: 40, msg: message, requestedPort: taken, port });
  });

  it('headless: a taken port stops the start (EADDRINUSE), and a free one has no fallback in the health answer', async () => {
    const taken = await holdPort();
    await expect(startService(config(taken), { logger: capturedLogger().logger, openKeychain: null })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    const service = await startService(config(0), { logger: capturedLogger().logger, portFallback: true, openKeychain: null });
    running.push(service);
    expect(service.portFallback).toBeUndefined();
    expect(await (await fetch(`${service.apiUrl}/`)).json()).not.toHaveProperty('portFallback');
  });

  it('a pinned port (the desktop after a crash) other than the saved one counts as waiting for a restart', async () => {
    const c = config(7600);
    fs.writeFileSync(path.join(c.dataDir, 'settings.json'), JSON.stringify({ port: 7600 }));
    const service = await startService(c, { logger: capturedLogger().logger, pinnedPort: 0, openKeychain: null });
    running.push(service);
    const res = await fetch(`${service.apiUrl}/settings`, { headers: { authorization: `Bearer ${await service.issueOwnerToken('t')}` } });
    expect(await res.json()).toMatchObject({ restartRequired: ['port'], settings: { port: { value: 7600, source: 'file' } } });
  });

  it("allowLanWebhooks saved by the owner applies at once to webhook URLs, and the owner's token is the desktop's", async () => {
    const service = await startService(config(0), { logger: capturedLogger().logger, openKeychain: null });
    running.push(service);
    const token = await service.issueOwnerToken('desktop'); // a fresh data dir: creates the local user `operator`
    const call = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${service.apiUrl}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const { body: connection } = await call('POST', '/connections', { name: 'lan' });
    const hook = { url: 'http://127.0.0.1:9/hook', events: ['message'] };
    const refused = await call('POST', `/connections/${connection.id as string}/webhooks`, hook);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/allowLanWebhooks/);

    const saved = await call('PATCH', '/settings', { allowLanWebhooks: true });
    expect(saved.status).toBe(200);
    expect(saved.body.restartRequired).toEqual([]);
    expect((await call('POST', `/connections/${connection.id as string}/webhooks`, hook)).status).toBe(201);

    // A second local user is not the owner.
    expect(await service.issueOwnerToken('again')).not.toBe(token);
    const other = await service.issueLocalToken('someone-else', 'x');
    const res = await fetch(`${service.apiUrl}/settings`, { headers: { authorization: `Bearer ${other}` } });
    expect(res.status).toBe(403);
  });
});
