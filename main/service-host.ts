/**
 * The service's own process in the desktop app: the entry that `main/` starts with Electron's
 * `utilityProcess.fork`, so Baileys, SQLite and the HTTP server never run on the thread that drives the window,
 * tray and menus. It never imports `electron`. Its settings come from the same places as `switchboard serve`'s
 * (the environment main passes, the data dir's settings.json, the OS keychain for the Stripe key; docs/settings.md),
 * with two desktop rules: when the configured API port (7575 by default) is taken it listens on a free one and
 * says so, and `SWITCHBOARD_PINNED_PORT` (set by the supervisor after a crash) pins the port the window knows.
 * It speaks a small message protocol with main:
 *
 * - host → main: `{ type: 'ready', apiUrl, sandbox }` once the API listens; `{ type: 'fatal', message }` when it
 *   cannot start (then it exits 1); `{ type: 'token', requestId, token }` answering a token request;
 *   `{ type: 'restart-request' }` when the owner asked for a restart (`POST /api/settings/restart`).
 * - main → host: `{ type: 'issue-operator-token', requestId }` issues an API token for the machine's owner (the
 *   local user `operator` on a fresh data dir); `{ type: 'stop' }` closes the service cleanly and exits 0.
 *
 * The channel is Electron's `process.parentPort` in a utility process, and the IPC channel of
 * `child_process.fork` under plain Node (how the supervisor's tests run it where Electron is absent).
 */
import { loadServiceConfig } from '../service/config/load-config.ts';
import { startService, type RunningService } from '../service/index.ts';

export type HostToMain =
  | { type: 'ready'; apiUrl: string; sandbox: boolean }
  | { type: 'fatal'; message: string }
  | { type: 'token'; requestId: number; token?: string; error?: string }
  | { type: 'restart-request' };

/** The variable the supervisor sets to keep the API on the port the window uses (after a crash). */
export const PINNED_PORT_VARIABLE = 'SWITCHBOARD_PINNED_PORT';
export type MainToHost = { type: 'issue-operator-token'; requestId: number } | { type: 'stop' };

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
      try {
        if (!service) throw new Error('the service is not running');
        channel.send({
          type: 'token',
          requestId: message.requestId,
          token: service.issueOwnerToken('desktop'),
        });
      } catch (err) {
        channel.send({
          type: 'token',
          requestId: message.requestId,
          error: err instanceof Error ? err.message : String(err),
        });
      }
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

void main();
