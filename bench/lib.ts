/**
 * Shared pieces of the end-to-end benchmarks: flags, percentiles, /proc sampling, a fixed-concurrency request
 * loop (undici, keep-alive — no autocannon in the dependencies), and a "stack": `switchboard sandbox` and
 * `switchboard serve --sandbox --wa-url` as separate child processes with an API token, JSON clients for the API
 * and the sandbox admin API, and pairing of connections to sandbox accounts. Loopback only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import type { StoredMessage } from '../service/db/messages.ts';
import { storedText } from '../test/helpers/messages.ts';
import { runCli, startSandboxProcess, startServe, type SandboxProcess, type ServiceProcess } from '../test/helpers/service-process.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON of several shapes
export type Json = any;

export function flag(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : fallback;
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a non-negative number`);
  return v;
}

export function list(args: string[], name: string, fallback: number[]): number[] {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]!.split(',').map(Number) : fallback;
}

export const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const mib = (kb: number) => round(kb / 1024, 1);

/** Polls `fn` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

const CLK_TCK = 100; // `getconf CLK_TCK` on Linux

/** RSS (VmRSS, KiB) and CPU time (utime + stime, ms) of a process, from /proc. */
export function procSample(pid: number): { rssKb: number; cpuMs: number; at: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3 (state)
  const ticks = Number(fields[11]) + Number(fields[12]); // utime (14) + stime (15)
  return { rssKb, cpuMs: (ticks * 1000) / CLK_TCK, at: performance.now() };
}

/** CPU use between two samples, in % of one core. */
export const cpuPercent = (a: { cpuMs: number; at: number }, b: { cpuMs: number; at: number }) => round(((b.cpuMs - a.cpuMs) / (b.at - a.at)) * 100, 1);

/**
 * Runs `fn` from `concurrency` workers back to back for `durationMs` (after `warmupMs` unmeasured);
 * returns latencies (ms, sorted) of the measured requests and the achieved rate.
 */
export async function requestLoop(opts: { concurrency: number; durationMs: number; warmupMs?: number; fn: (i: number) => Promise<void> }) {
  let i = 0;
  let errors = 0;
  const latencies: number[] = [];
  const warmupEnd = performance.now() + (opts.warmupMs ?? 0);
  const end = warmupEnd + opts.durationMs;
  let firstError: unknown;
  const worker = async () => {
    while (performance.now() < end) {
      const started = performance.now();
      try {
        await opts.fn(i++);
        if (started >= warmupEnd) latencies.push(performance.now() - started);
      } catch (err) {
        errors++;
        firstError ??= err;
        await sleep(10);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const measuredMs = performance.now() - Math.max(t0, warmupEnd);
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    firstError: firstError === undefined ? undefined : String(firstError),
    perSec: Math.round((latencies.length / measuredMs) * 1000),
    p50: round(percentile(latencies, 50)),
    p99: round(percentile(latencies, 99)),
    max: round(latencies.at(-1) ?? NaN),
  };
}

/** Runs `fn(0…n-1)` with at most `concurrency` in flight. */
export async function pool<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

export interface JsonClient {
  (method: string, route: string, body?: unknown): Promise<{ status: number; body: Json }>;
}

const setupAgent = new Agent({ connections: 32, keepAliveTimeout: 10_000 });

export function jsonClient(base: string, headers: Record<string, string> = {}): JsonClient {
  return async (method, route, body) => {
    const res = await request(`${base}${route}`, {
      method: method as 'GET',
      dispatcher: setupAgent,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let parsed: Json = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.statusCode, body: parsed };
  };
}

export const enc = (phone: string) => encodeURIComponent(phone);

export interface Stack {
  dir: string;
  sandbox: SandboxProcess;
  admin: JsonClient;
  service: ServiceProcess;
  serviceDir: string;
  token: string;
  api: JsonClient;
  /** Creates sandbox accounts (ignores 409: already there). */
  createAccounts(phones: string[]): Promise<void>;
  /** Creates a connection and pairs it with sandbox phone `phone`; resolves with its id once `online`. */
  pair(phone: string): Promise<string>;
  /** Stops the service (SIGTERM) and starts it again on the same data dir (and sandbox). */
  restartService(): Promise<void>;
  close(): Promise<void>;
}

/** Sandbox and service as two child processes (the sandbox's Signal work must not share the service's event loop). */
export async function startStack(serveArgs: string[] = []): Promise<Stack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  const sandbox = await startSandboxProcess(path.join(dir, 'sandbox'));
  const serviceDir = path.join(dir, 'service');
  const args = ['--sandbox', '--wa-url', sandbox.wsUrl, '--allow-lan-webhooks', '--typing-delay-ms', '0', '--rate-limit', '0', '--wa-query-pace', '0', '--port', '0', '--data-dir', serviceDir, '--log-level', 'warn', ...serveArgs];
  let service: ServiceProcess;
  try {
    service = await startServe(args);
  } catch (err) {
    await sandbox.stop('SIGKILL');
    throw err;
  }
  const token = (await runCli(['token', 'create', '--user', 'bench', '--data-dir', serviceDir])).stdout.trim();
  const admin = jsonClient(sandbox.url);
  const stack: Stack = {
    dir,
    sandbox,
    admin,
    service,
    serviceDir,
    token,
    api: jsonClient(service.apiUrl, { authorization: `Bearer ${token}` }),
    async createAccounts(phones) {
      await pool(phones.length, 8, async (i) => {
        const r = await admin('POST', '/accounts', { phoneNumber: phones[i], pushName: `Bench ${phones[i]}` });
        if (r.status !== 201 && r.status !== 409) throw new Error(`create account ${phones[i]}: ${r.status} ${JSON.stringify(r.body)}`);
      });
    },
    async pair(phone) {
      const created = await stack.api('POST', '/connections', { name: `bench ${phone}` });
      if (created.status !== 201) throw new Error(`create connection: ${created.status} ${JSON.stringify(created.body)}`);
      const id = created.body.id as string;
      const qr = await until('a QR code', async () => {
        const r = await stack.api('GET', `/connections/${id}/qr?format=text`);
        return r.status === 200 ? (r.body.value as string) : undefined;
      }, 60_000, 100);
      const scan = await admin('POST', `/accounts/${enc(phone)}/scan`, { qr });
      if (scan.status !== 200) throw new Error(`scan ${phone}: ${scan.status} ${JSON.stringify(scan.body)}`);
      await until(`connection ${id} online`, async () => ((await stack.api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), 120_000, 100);
      return id;
    },
    async restartService() {
      await stack.service.stop('SIGTERM');
      stack.service = await startServe(args);
      stack.api = jsonClient(stack.service.apiUrl, { authorization: `Bearer ${token}` });
    },
    async close() {
      await stack.service.stop('SIGTERM');
      await sandbox.stop('SIGTERM');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

/**
 * A count that can be awaited: `set(n)` / `add(n)` change it, `reach(n, timeoutMs)` resolves with
 * performance.now() once it is ≥ n (or rejects after timeoutMs, naming `what`).
 */
export function awaitableCount(what: string) {
  let count = 0;
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const w of [...waiters]) w();
  };
  return {
    value: () => count,
    set(n: number) {
      count = n;
      changed();
    },
    add(n = 1) {
      count += n;
      changed();
    },
    reach: (n: number, timeoutMs: number) =>
      new Promise<number>((resolve, reject) => {
        const check = () => {
          if (count < n) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(performance.now());
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`saw ${count} of ${n} ${what} in ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** Counts `message` frames per connection on the service's WebSocket. */
export async function watchMessages(apiUrl: string, token: string) {
  const counts = new Map<string, number>();
  const total = awaitableCount('message frames');
  const ws = new WebSocket(`${apiUrl.replace(/^http/, 'ws')}/ws?token=${token}&events=message`);
  ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as { event: string; connectionId: string };
    if (f.event !== 'message') return;
    counts.set(f.connectionId, (counts.get(f.connectionId) ?? 0) + 1);
    total.add();
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  return {
    counts,
    total: total.value,
    /** Resolves with performance.now() once `total` frames were seen since creation (or rejects after timeoutMs). */
    reach: total.reach,
    close: () => ws.close(),
  };
}

/** Phone numbers `+1555<prefix><i>` (i zero-padded to 4 digits). */
export const phones = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `+1555${prefix}${String(i).padStart(4, '0')}`);

/** A bare Baileys client in a child process (see bench/bare-client.ts), paired with `phone`. */
export async function spawnBareClient(wsUrl: string, rootKeyHex: string, adminUrl: string, phone: string) {
  const { fork } = await import('node:child_process');
  const file = path.join(path.dirname(new URL(import.meta.url).pathname), 'bare-client.ts');
  const child = fork(file, [wsUrl, rootKeyHex, adminUrl, phone], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const count = awaitableCount('messages at the bare client');
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bare client did not become ready')), 60_000);
    child.on('message', (m: { ready?: boolean; count?: number }) => {
      if (m.ready) {
        clearTimeout(timer);
        resolve();
      }
      if (m.count !== undefined) count.set(m.count);
    });
    child.once('exit', (code) => reject(new Error(`bare client exited with ${code}`)));
  });
  return {
    pid: child.pid!,
    received: count.value,
    reach: count.reach,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.disconnect();
      setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
      await exited;
    },
  };
}

/**
 * A text message of a seeded bench corpus: every third one is the account's own (ack 3, read), the others are the
 * contact's (`chatId`). `timestamp` in Unix seconds.
 */
export function benchTextMessage(chatId: string, keyId: string, i: number, timestamp: number, text: string): StoredMessage {
  const fromMe = i % 3 === 0;
  return storedText(chatId, keyId, timestamp, text, fromMe, { senderPushName: fromMe ? '' : 'Bench Contact', ack: fromMe ? 3 : null });
}
