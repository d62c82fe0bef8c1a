/**
 * WhatsApp-like durability across a service outage: the sandbox runs as its own process
 * (`switchboard sandbox`), the service points at it (`serve --sandbox --wa-url`), and a message a contact sends
 * while the service is down is accepted by the sandbox (201) and delivered once the service is back, with no scan.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startSandboxProcess, startServe, type SandboxProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';
import { jsonCall } from '../helpers/http.ts';

const ALICE_JID = '15550101@s.whatsapp.net';

describe('messages sent while the service is down', () => {
  let dir: string;
  let sandbox: SandboxProcess;
  let sandboxUrl: string;
  const services: ServiceProcess[] = [];
  let token: string;

  const serve = async () => {
    const s = await startServe(['--sandbox', '--wa-url', `${sandboxUrl.replace(/^http/, 'ws')}/ws/chat`, '--port', '0', '--data-dir', path.join(dir, 'service')]);
    services.push(s);
    return s;
  };
  const call = (base: string, method: string, route: string, body?: unknown, auth = true) =>
    jsonCall(base, method, route, body, auth ? token : undefined);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-offline-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox'));
    sandboxUrl = sandbox.url;
    const created = await runCli(['token', 'create', '--user', 'ops', '--data-dir', path.join(dir, 'service')]);
    token = created.stdout.trim();
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await sandbox?.stop('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('delivers them after the restart, in order, without a scan', { timeout: 90_000 }, async () => {
    let service = await serve();
    const c = await call(service.apiUrl, 'POST', '/connections', {});
    const qr = await waitFor('QR', async () => {
      const r = await call(service.apiUrl, 'GET', `/connections/${c.body.id}/qr?format=text`);
      return r.status === 200 ? (r.body.value as string) : undefined;
    });
    expect((await call(sandboxUrl, 'POST', '/accounts/%2B15550100/scan', { qr }, false)).status).toBe(200);
    const status = async () => (await call(service.apiUrl, 'GET', `/connections/${c.body.id}`)).body.status as string;
    await waitFor('online', async () => ((await status()) === 'online' ? true : undefined));

    expect(await service.stop('SIGTERM')).toBe(0);
    const ids: string[] = [];
    for (const text of ['while you were away 1', 'while you were away 2']) {
      const sent = await call(sandboxUrl, 'POST', '/accounts/%2B15550101/messages', { to: '+15550100', text }, false);
      expect(sent.status).toBe(201);
      ids.push(sent.body.id);
    }

    service = await serve();
    await waitFor('online again', async () => ((await status()) === 'online' ? true : undefined), { timeoutMs: 30_000 });
    const page = await waitFor('the queued messages', async () => {
      const p = await call(service.apiUrl, 'GET', `/connections/${c.body.id}/chats/${ALICE_JID}/messages?limit=2`);
      return p.body.messages?.[0]?.text === 'while you were away 2' ? p.body : undefined;
    });
    expect(page.messages.map((m: { text: string }) => m.text)).toEqual(['while you were away 2', 'while you were away 1']);
    expect(page.messages.map((m: { id: string }) => m.id)).toEqual([`false_${ALICE_JID}_${ids[1]}`, `false_${ALICE_JID}_${ids[0]}`]);

    // They are unread, and were announced as events.
    const chats = await call(service.apiUrl, 'GET', `/connections/${c.body.id}/chats?unread_only=true`);
    expect(chats.body.find((x: { id: string }) => x.id === ALICE_JID)?.unread).toBeGreaterThanOrEqual(2);
  });
});
