/**
 * The message protocol between the desktop shell (main/index.ts, main/service-supervisor.ts) and the service's own
 * process (main/service-host.ts), and the one variable the supervisor sets for it. Types and constants only: it
 * imports nothing and does nothing when imported, so the Electron main process can share it without loading the
 * service (Baileys, SQLite, Fastify), which runs only in the service process.
 *
 * - host → main: `{ type: 'ready', apiUrl, sandbox }` once the API listens; `{ type: 'fatal', message }` when it
 *   cannot start (then it exits 1); `{ type: 'token', requestId, token }` answering a token request;
 *   `{ type: 'restart-request' }` when the owner asked for a restart (`POST /api/settings/restart`).
 * - main → host: `{ type: 'issue-operator-token', requestId }` issues an API token for the machine's owner (the
 *   local user `operator` on a fresh data dir); `{ type: 'stop' }` closes the service cleanly and exits 0.
 */

export type HostToMain =
  | { type: 'ready'; apiUrl: string; sandbox: boolean }
  | { type: 'fatal'; message: string }
  | { type: 'token'; requestId: number; token?: string; error?: string }
  | { type: 'restart-request' };

export type MainToHost = { type: 'issue-operator-token'; requestId: number } | { type: 'stop' };

/** The variable the supervisor sets to keep the API on the port the window uses (after a crash). */
export const PINNED_PORT_VARIABLE = 'SWITCHBOARD_PINNED_PORT';

/** The host's entry file, next to main/index.js in the build (what `utilityProcess.fork` starts). */
export const SERVICE_HOST_ENTRY = 'service-host.js';
