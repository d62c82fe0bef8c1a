/**
 * The setup of the crash and outage tests: a sandbox in its own process (its state survives the service's death),
 * services started against it with `serve --sandbox --wa-url` in one data dir (so they can be killed and restarted),
 * an API token for them, a JSON client, and cleanup that kills whatever is left.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jsonCall } from './http.ts';
import { runCli, startSandboxProcess, startServe, type SandboxProcess, type ServiceProcess } from './service-process.ts';
import { waitFor } from './wait.ts';

export interface ExternalSandboxRig {
  /** Temp dir holding `sandbox/` and `service/`. */
  dir: string;
  sandbox: SandboxProcess;
  token: string;
  /** Starts a service on the rig's data dir (killed at `close`), with `extraArgs` after the rig's `serveArgs`. */
  serve(extraArgs?: string[]): Promise<ServiceProcess>;
  /** A JSON request; `auth` adds the rig's token (the sandbox admin API takes none). */
  call: (base: string, method: string, route: string, body?: unknown, auth?: boolean) => ReturnType<typeof jsonCall>;
  /** The current QR of a connection as text, once it has one. */
  qrText(service: ServiceProcess, connectionId: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * @param prefix temp dir name prefix; `user` the token's user; `serveArgs` extra `serve` flags.
 */
export async function startExternalSandboxRig(opts: {
  prefix: string;
  user: string;
  serveArgs?: string[];
  /** How long a `serve` may take to print its URLs (startServe's default: 30 s). */
  serveTimeoutMs?: number;
}): Promise<ExternalSandboxRig> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), opts.prefix));
  const sandbox = await startSandboxProcess(path.join(dir, 'sandbox'));
  const serviceDir = path.join(dir, 'service');
  const token = (await runCli(['token', 'create', '--user', opts.user, '--data-dir', serviceDir])).stdout.trim();
  const services: ServiceProcess[] = [];
  const call = (base: string, method: string, route: string, body?: unknown, auth = true) =>
    jsonCall(base, method, route, body, auth ? token : undefined);
  return {
    dir,
    sandbox,
    token,
    call,
    async serve(extraArgs = []) {
      const s = await startServe(
        ['--sandbox', '--wa-url', sandbox.wsUrl, ...(opts.serveArgs ?? []), ...extraArgs, '--port', '0', '--data-dir', serviceDir],
        {},
        { timeoutMs: opts.serveTimeoutMs },
      );
      services.push(s);
      return s;
    },
    qrText: (service, connectionId) =>
      waitFor('QR', async () => {
        const r = await call(service.apiUrl, 'GET', `/connections/${connectionId}/qr?format=text`);
        return r.status === 200 ? (r.body.value as string) : undefined;
      }),
    async close() {
      await Promise.all(services.map((s) => s.stop('SIGKILL')));
      await sandbox.stop('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
