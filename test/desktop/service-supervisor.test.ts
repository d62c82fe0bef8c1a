/**
 * The desktop app's service process and its supervisor (issue 18 item 1), run where Electron is absent: the real
 * host entry (main/service-host.ts) started with `child_process.fork` instead of Electron's `utilityProcess.fork`
 * (the same message protocol over Node's IPC channel), and the real supervisor of main/. A service process killed
 * with SIGKILL comes back by itself on the same port, with its data and the operator's token intact. A port saved
 * in Settings applies after `POST /api/settings/restart` (the service asks the supervisor, which starts it afresh
 * on the new port), and a saved port another program holds gives a free one with the fallback notice.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceSupervisor, type HostProcess, type SupervisorNotice } from '../../main/service-supervisor.ts';
import type { HostToMain } from '../../main/host-protocol.ts';
import { waitFor } from '../helpers/wait.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-supervisor-'));
// Not the desktop's 7575 (tests run side by side): a free port, from the settings file the host reads.
fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ port: 0 }));
const pids: number[] = [];

function forkHost(env: Record<string, string>, dir = dataDir): HostProcess {
  const child = fork(path.resolve('main/service-host.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      SWITCHBOARD_SANDBOX: '1',
      SWITCHBOARD_DATA_DIR: dir,
      SWITCHBOARD_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  pids.push(child.pid!);
  return {
    postMessage: (m) => child.send(m),
    onMessage: (l) => child.on('message', (m) => l(m as HostToMain)),
    onExit: (l) => (child.exitCode !== null ? l(child.exitCode) : child.once('exit', (code) => l(code))),
    kill: () => child.kill('SIGKILL'),
  };
}

describe('the desktop service process under its supervisor', { timeout: 60_000 }, () => {
  const notices: SupervisorNotice[] = [];
  const supervisor = new ServiceSupervisor({
    fork: forkHost,
    onNotice: (n) => notices.push(n),
    restartDelaysMs: [200],
  });

  afterAll(async () => {
    await supervisor.stop();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts the service off the main process, issues the operator token, and survives a killed service process', async () => {
    const apiUrl = await supervisor.start();
    expect(apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
    expect(pids).toHaveLength(1);
    expect(pids[0]).not.toBe(process.pid);

    const token = await supervisor.issueOperatorToken();
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await fetch(`${apiUrl}/connections`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: 'desk' }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };

    process.kill(pids[0]!, 'SIGKILL');
    await waitFor('the restarted service', () => (notices.some((n) => n.kind === 'restarted') ? true : undefined), {
      timeoutMs: 30_000,
    });
    expect(notices[0]).toMatchObject({ kind: 'crashed' });
    expect(notices.find((n) => n.kind === 'restarted')).toEqual({ kind: 'restarted', apiUrl });
    expect(pids).toHaveLength(2);

    // Same port (kept, so nothing waits for a restart: the configured port is 0, any free one), same data, same token.
    const view = await fetch(`${apiUrl}/settings`, { headers: auth });
    expect(await view.json()).toMatchObject({ restartRequired: [] });
    const listed = await fetch(`${apiUrl}/connections/${id}`, { headers: auth });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { name: string }).name).toBe('desk');

    await supervisor.stop();
    await expect(fetch(`${apiUrl}/`)).rejects.toThrow();
    expect(notices.filter((n) => n.kind === 'crashed')).toHaveLength(1); // a requested stop is no crash
  });
});

describe('settings saved from the console apply after a restart of the service process', { timeout: 90_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-supervisor-settings-'));
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ port: 0 }));
  const notices: SupervisorNotice[] = [];
  const supervisor = new ServiceSupervisor({ fork: (env) => forkHost(env, dir), onNotice: (n) => notices.push(n), restartDelaysMs: [200] });
  const holder = net.createServer();

  afterAll(async () => {
    await supervisor.stop();
    await new Promise((r) => holder.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const freePort = async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((r) => probe.close(r));
    return port;
  };

  /** PATCHes `port`, asks for the restart through the API, and resolves with the restarted service's API URL. */
  async function saveAndRestart(apiUrl: string, token: string, port: number): Promise<string> {
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const saved = await fetch(`${apiUrl}/settings`, { method: 'PATCH', headers: auth, body: JSON.stringify({ port }) });
    expect(saved.status).toBe(200);
    expect(await saved.json()).toMatchObject({ restartRequired: ['port'], canRestart: true });
    const before = notices.length;
    const restart = await fetch(`${apiUrl}/settings/restart`, { method: 'POST', headers: { authorization: auth.authorization } });
    expect(restart.status).toBe(202);
    const notice = await waitFor('the restarted service', () => notices.slice(before).find((n) => n.kind === 'restarted'), {
      timeoutMs: 60_000,
    });
    expect(notices.slice(before).some((n) => n.kind === 'crashed')).toBe(false); // a requested restart is no crash
    return (notice as { apiUrl: string }).apiUrl;
  }

  it('moves to the saved port, and falls back with a notice when another program holds it', async () => {
    const first = await supervisor.start();
    const token = await supervisor.issueOperatorToken();

    const wanted = await freePort();
    const moved = await saveAndRestart(first, token, wanted);
    expect(new URL(moved).port).toBe(String(wanted));
    expect(supervisor.apiUrl).toBe(moved);
    const view = await fetch(`${moved}/settings`, { headers: { authorization: `Bearer ${token}` } });
    expect(await view.json()).toMatchObject({ restartRequired: [], settings: { port: { value: wanted, source: 'file' } } });

    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const taken = (holder.address() as net.AddressInfo).port;
    const fallen = await saveAndRestart(moved, token, taken);
    expect(new URL(fallen).port).not.toBe(String(taken));
    const health = (await (await fetch(`${fallen}/`)).json()) as { portFallback?: { requested: number; message: string } };
    expect(health.portFallback).toMatchObject({ requested: taken, message: expect.stringContaining(`Port ${taken} is in use`) });
  });
});
