/**
 * The service's own process in the desktop app: the entry file that `main/` starts with Electron's
 * `utilityProcess.fork`, so Baileys, SQLite and the HTTP server never run on the thread that drives the window,
 * tray and menus. It never imports `electron`, and nothing imports it: the shell shares only the message protocol
 * (main/host-protocol.ts). Its settings come from the same places as `switchboard serve`'s (the environment main
 * passes, the data dir's settings.json, the OS keychain for the Stripe key; docs/settings.md), with two desktop
 * rules: when the configured API port (7575 by default) is taken it listens on a free one and says so, and
 * `SWITCHBOARD_PINNED_PORT` (set by the supervisor after a crash) pins the port the window knows.
 *
 * Importing it does nothing: the service starts only when this file is the process's entry — a utility process
 * (Electron's `process.parentPort`), or `node main/service-host.ts` with an IPC channel (`child_process.fork`, how
 * the supervisor's tests run it where Electron is absent). A test worker that imports it, which has an IPC channel
 * of its own, starts nothing.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadServiceConfig } from '../service/config/load-config.ts';
import { startService, type RunningService } from '../service/index.ts';
import { PINNED_PORT_VARIABLE, type HostToMain, type MainToHost } from './host-protocol.ts';

/** Electron's parent port of a utility process (typed here so this file needs no Electron types). */
interface ParentPort {
  on(event: 'message', listener: (e: { data: unknown }) => void): void;
  postMessage(message: unknown): void;
}

interface Channel {
  send(message: HostToMain): void;
  onMessage(listener: (message: MainToHost) => void): void;
}

function parentChannel(): Channel {
  const parentPort = (process as { parentPort?: ParentPort }).parentPort;
  if (parentPort) {
    return {
      send: (m) => parentPort.postMessage(m),
      onMessage: (l) => parentPort.on('message', (e) => l(e.data as MainToHost)),
    };
  }
  if (process.send) {
    return {
      send: (m) => process.send!(m),
      onMessage: (l) => process.on('message', (m) => l(m as MainToHost)),
    };
  }
  throw new Error('service-host must be started by the desktop app (utilityProcess) or child_process.fork');
}

async function main(): Promise<void> {
  const channel = parentChannel();
  let service: RunningService | undefined;
  let stopping = false;

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await service?.close().catch(() => undefined);
    process.exit(code);
  };

  channel.onMessage((message) => {
    if (message.type === 'stop') void stop(0);
    else if (message.type === 'issue-operator-token') {
      const { requestId } = message;
      const issued = service ? service.issueOwnerToken('desktop') : Promise.reject(new Error('the service is not running'));
      void issued.then(
        (token) => channel.send({ type: 'token', requestId, token }),
        (err: unknown) => channel.send({ type: 'token', requestId, error: err instanceof Error ? err.message : String(err) }),
      );
    }
  });
  process.on('SIGTERM', () => void stop(0));

  try {
    const pinned = process.env[PINNED_PORT_VARIABLE];
    delete process.env[PINNED_PORT_VARIABLE]; // not a setting: the settings API must not see it
    const config = await loadServiceConfig({}, process.env);
    service = await startService(config, {
      settingsSources: { flags: {}, env: process.env },
      portFallback: true,
      ...(pinned && { pinnedPort: Number(pinned) }),
      restart: () => channel.send({ type: 'restart-request' }),
    });
    channel.send({ type: 'ready', apiUrl: service.apiUrl, sandbox: config.sandbox });
  } catch (err) {
    channel.send({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
}

/** Whether this file is the process's entry: Electron's utility process, or the script `node` was started with. */
function isEntry(): boolean {
  if ((process as { parentPort?: ParentPort }).parentPort) return true;
  const script = process.argv[1];
  if (!script) return false;
  try {
    return fs.realpathSync(script) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  main().catch((err: unknown) => {
    // Started by hand without a channel to main: say so (no unhandled rejection).
    console.error(`Switchboard service host: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
