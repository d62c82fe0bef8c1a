/**
 * Fault: the server accepts the WebSocket and then never answers the Noise handshake. Baileys runs with
 * connectTimeoutMs 0 (see session-lifecycle.ts CONNECT_TIMEOUT_MS), so the session's own connect timeout must end the
 * attempt: status `reconnecting` with the 408 "Timed Out" reason, then a new attempt, and again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineServiceConfig } from '../integration/api-harness.ts';
import { issueToken } from '../../service/auth/api-tokens.ts';
import { openDataPlane } from '../../service/data-plane.ts';
import { startService, type RunningService } from '../../service/index.ts';
import { waitFor } from '../helpers/wait.ts';

describe('a server that never answers the handshake', () => {
  let dataDir: string;
  let silent: WebSocketServer;
  let service: RunningService;
  let token: string;
  let connects = 0;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-silent-'));
    silent = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    silent.on('connection', () => connects++); // accepts, then says nothing
    await new Promise((resolve) => silent.once('listening', resolve));
    const setup = openDataPlane({ dataDir, role: 'tool' });
    token = issueToken(setup.store.tokens, setup.store.users.ensure('silent').id, 'test').token;
    setup.close();
    const config = offlineServiceConfig(dataDir, { waUrl: `ws://127.0.0.1:${(silent.address() as AddressInfo).port}/ws/chat` });
    service = await startService(config, { connectTimeoutMs: 300 });
  });

  afterAll(async () => {
    await service?.close();
    for (const c of silent?.clients ?? []) c.terminate();
    await new Promise((resolve) => silent?.close(resolve));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('times the attempt out, reports it and tries again', { timeout: 15_000 }, async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await fetch(`${service.apiUrl}/connections`, { method: 'POST', headers, body: '{}' });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    type Event = { event: string; connectionId: string; payload: { status: string; reason: string | null } };
    const event = await waitFor(
      'reconnecting after the timeout',
      async () => {
        const page = (await (await fetch(`${service.apiUrl}/events?after=0&limit=100`, { headers })).json()) as {
          events: Event[];
        };
        return page.events.find(
          (e) => e.event === 'session.status' && e.connectionId === id && e.payload.status === 'reconnecting',
        );
      },
      { timeoutMs: 10_000 },
    );
    expect(event.payload.reason).toMatch(/Timed Out.*408/);
    await waitFor('a second attempt', () => (connects >= 2 ? true : undefined), { timeoutMs: 10_000 });
  });
});
