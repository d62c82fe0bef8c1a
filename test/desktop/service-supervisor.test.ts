/**
 * The desktop app's service process and its supervisor (issue 18 item 1), run where Electron is absent: the real
 * host entry (main/service-host.ts) started with `child_process.fork` instead of Electron's `utilityProcess.fork`
 * (the same message protocol over Node's IPC channel), and the real supervisor of main/. A service process killed
 * with SIGKILL comes back by itself on the same port, with its data and the operator's token intact.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceSupervisor, type HostProcess, type SupervisorNotice } from '../../main/service-supervisor.ts';
import type { HostToMain } from '../../main/service-host.ts';
import { waitFor } from '../helpers/wait.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-supervisor-'));
const pids: number[] = [];

function forkHost(env: Record<string, string>): HostProcess {
  const child = fork(path.resolve('main/service-host.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      SWITCHBOARD_SANDBOX: '1',
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_LOG_LEVEL: 'warn',
      SWITCHBOARD_PORT: '0', // not the desktop's 7575: tests run side by side
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

    // Same port, same data, same token.
    const listed = await fetch(`${apiUrl}/connections/${id}`, { headers: auth });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { name: string }).name).toBe('desk');

    await supervisor.stop();
    await expect(fetch(`${apiUrl}/`)).rejects.toThrow();
    expect(notices.filter((n) => n.kind === 'crashed')).toHaveLength(1); // a requested stop is no crash
  });
});
