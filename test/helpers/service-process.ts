/**
 * Runs the real `switchboard` CLI as a child process for end-to-end tests: `serve` until its
 * `API:`/`Sandbox:` lines appear, and one-shot commands such as `token create`.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'bin/switchboard.js');

export interface ServiceProcess {
  apiUrl: string;
  sandboxUrl: string | undefined;
  child: ChildProcess;
  /** Everything the process wrote to stderr so far (logs), for failure messages. */
  stderr(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `switchboard serve ARGS` and waits until it printed its URL lines (API, and Sandbox when `--sandbox`).
 * `opts.bin`: another checkout's bin/switchboard.js (run from that checkout); `opts.timeoutMs`: how long to wait
 * for the URL lines (30 000).
 */
export async function startServe(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  opts: { bin?: string; timeoutMs?: number } = {},
): Promise<ServiceProcess> {
  // SWITCHBOARD_CPU_PROF=DIR writes a V8 CPU profile of the service to DIR when it exits (profiling benchmarks).
  const profile = process.env.SWITCHBOARD_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SWITCHBOARD_CPU_PROF}`] : [];
  const entry = opts.bin ?? bin;
  const child = spawn(process.execPath, [...profile, entry, 'serve', ...args], {
    cwd: path.resolve(path.dirname(entry), '..'),
    env: { ...process.env, SWITCHBOARD_LOG_LEVEL: process.env.SWITCHBOARD_LOG_LEVEL ?? 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const wantSandbox = args.includes('--sandbox');
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const urls = await new Promise<{ api: string; sandbox?: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // not left running behind the failed test
      reject(new Error(`serve did not print its URLs in time; stderr:\n${err}`));
    }, opts.timeoutMs ?? 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const api = /^API: (\S+)$/m.exec(out)?.[1];
      const sandbox = /^Sandbox: (\S+)$/m.exec(out)?.[1];
      if (api && (!wantSandbox || sandbox)) {
        clearTimeout(timer);
        resolve({ api, sandbox });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before printing its URLs; stderr:\n${err}`));
    });
  });
  return {
    apiUrl: urls.api,
    sandboxUrl: urls.sandbox,
    child,
    stderr: () => err,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

export interface SandboxProcess {
  /** Admin API base, e.g. `http://127.0.0.1:PORT`. */
  url: string;
  /** What `serve --wa-url` takes: `ws://127.0.0.1:PORT/ws/chat`. */
  wsUrl: string;
  child: ChildProcess;
  /** The last 4 MiB the process wrote to stderr (its info-level log), for diagnostics and counts. */
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const STDERR_KEPT = 4 * 1024 * 1024;

/** Starts `switchboard sandbox --port 0 --seed --data-dir DIR` and waits for its `Sandbox:` line. */
export async function startSandboxProcess(dataDir: string): Promise<SandboxProcess> {
  // SWITCHBOARD_CPU_PROF=DIR profiles this process too (see startServe).
  const profile = process.env.SWITCHBOARD_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SWITCHBOARD_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, bin, 'sandbox', '--port', '0', '--seed', '--data-dir', dataDir], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Read stderr as it comes: the sandbox logs synchronously, and a full pipe would stop its event loop.
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    if (err.length > STDERR_KEPT) err = err.slice(err.length - STDERR_KEPT);
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^Sandbox: (\S+)$/m.exec(out);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`sandbox exited with ${code}`)));
  });
  return {
    url,
    wsUrl: `${url.replace(/^http/, 'ws')}/ws/chat`,
    child,
    stderr: () => err,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs a one-shot CLI command and returns its stdout, stderr and exit code. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], {
      cwd: root,
      env: { ...process.env, ...env },
    });
    return { stdout, stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; code?: number };
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? '', code: err.code ?? 1 };
  }
}
