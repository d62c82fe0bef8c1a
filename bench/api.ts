/**
 * `npm run bench -- api [--concurrency 16] [--seconds 5]`
 *
 * REST throughput and latency with request loops (undici, keep-alive, `--concurrency` requests in flight, each
 * worker sending its next request as soon as the previous answered — no autocannon in the dependencies), 1 s warm-up
 * then `--seconds` measured, against `switchboard serve` (child process, `--rate-limit 0`, sandbox in its own process)
 * with one linked connection whose chat with +15550101 holds a 2,000-message history, among 63 chats:
 *   - ceiling: a Fastify hello-world route (`GET /` → `{ hello: 'world' }`) in a child process, same run;
 *   - `GET /api/connections/:id/chats/:chatId/messages?limit=50`;
 *   - `GET /api/connections/:id/chats` (a page of 50 chats);
 *   - `POST /api/connections/:id/send` `{ chatId, text, skipPresence: true }` (a real Baileys send to the sandbox).
 * Each row also reports the CPU time the serving process spent per request (user + system, from /proc, warm-up
 * included: the machine's other load does not inflate it the way it does req/s) and the load average.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import type { BenchResult } from './index.ts';
import { enc, flag, procSample, requestLoop, round, startStack } from './lib.ts';

const HELLO = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write('PORT ' + app.server.address().port + '\\n');
`;

async function startHello() {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const child = spawn(process.execPath, ['--input-type=module', '-e', HELLO], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`hello-world exited with ${code}`)));
  });
  return {
    child,
    url: `http://127.0.0.1:${port}/`,
    stop: () => new Promise<void>((r) => (child.exitCode !== null ? r() : (child.once('exit', () => r()), child.kill('SIGTERM')))),
  };
}

export async function run(args: string[]): Promise<BenchResult> {
  const concurrency = flag(args, 'concurrency', 16);
  const seconds = flag(args, 'seconds', 5);
  const stack = await startStack();
  const hello = await startHello();
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 30_000, pipelining: 1 });
  try {
    const phone = '+15550100';
    await stack.admin('POST', `/accounts/${enc(phone)}/history`, { with: '+15550101', count: 2_000 });
    for (let i = 0; i < 60; i++) {
      await stack.admin('POST', `/accounts/${enc(phone)}/history`, { with: `+1555030${String(i).padStart(4, '0')}`, count: 2 });
    }
    const id = await stack.pair(phone);
    const chatId = '15550101@s.whatsapp.net';
    await new Promise((r) => setTimeout(r, 1_000)); // later history chunks
    const auth = { authorization: `Bearer ${stack.token}` };
    /** The request loop, with the serving process's CPU time per request and the load average when it started. */
    const loop = async (server: ChildProcess, fn: (i: number) => Promise<void>) => {
      const loadAverage = round(os.loadavg()[0]!, 1);
      let calls = 0;
      const before = procSample(server.pid!);
      const result = await requestLoop({ concurrency, durationMs: seconds * 1000, warmupMs: 1_000, fn: (i) => (calls++, fn(i)) });
      const cpuUsPerRequest = Math.round(((procSample(server.pid!).cpuMs - before.cpuMs) * 1000) / calls);
      return { ...result, cpuUsPerRequest, loadAverage };
    };
    const expect = async (p: ReturnType<typeof request>, status: number) => {
      const res = await p;
      await res.body.dump();
      if (res.statusCode !== status) throw new Error(`status ${res.statusCode}`);
    };

    const service = stack.service.child;
    const ceiling = await loop(hello.child, () => expect(request(hello.url, { dispatcher: agent }), 200));
    const messagesUrl = `${stack.service.apiUrl}/connections/${id}/chats/${chatId}/messages?limit=50`;
    const get = await loop(service, () => expect(request(messagesUrl, { dispatcher: agent, headers: auth }), 200));
    const chatsUrl = `${stack.service.apiUrl}/connections/${id}/chats?limit=50`;
    const chats = await loop(service, () => expect(request(chatsUrl, { dispatcher: agent, headers: auth }), 200));
    const sendUrl = `${stack.service.apiUrl}/connections/${id}/send`;
    const send = await loop(service, (i) =>
      expect(
        request(sendUrl, {
          method: 'POST',
          dispatcher: agent,
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ chatId, text: `api bench ${i}`, skipPresence: true }),
        }),
        201,
      ),
    );
    const rows = [
      { case: 'Fastify hello world (ceiling, child process)', ...ceiling },
      { case: 'GET …/chats/:chatId/messages?limit=50', ...get },
      { case: 'GET …/chats?limit=50', ...chats },
      { case: 'POST …/send (skipPresence)', ...send },
    ];
    const markdown = [
      `### REST API: ${concurrency} requests in flight (undici keep-alive loops), ${seconds} s measured after 1 s warm-up`,
      '',
      '| route | requests | req/s | vs ceiling | p50 ms | p99 ms | max ms | errors | server CPU µs/req | load avg |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.case} | ${r.requests} | **${r.perSec}** | ${(r.perSec / ceiling.perSec).toFixed(2)}× | ${r.p50} | ${r.p99} | ${r.max} | ${r.errors} | ${r.cpuUsPerRequest} | ${r.loadAverage} |`,
      ),
    ].join('\n');
    return { name: 'api', markdown, data: { concurrency, seconds, rows } };
  } finally {
    await agent.close();
    await hello.stop();
    await stack.close();
  }
}
