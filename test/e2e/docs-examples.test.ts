/**
 * The worked examples of docs/ run as written (issue 25 item 8), like the README's walkthrough
 * (walkthrough.test.ts): the real service in-process in sandbox mode with the sandbox phone paired, and for each page
 * one bash process — a reader's terminal — with the walkthrough's variables set (`API`, `AUTH`, `TOKEN`, `ID`,
 * `SANDBOX`, and `SWITCHBOARD_DATA_DIR` so the CLI's `token`/`user` commands reach the service's data dir). Each
 * ```sh block of the page is pasted in turn (variables carry over between the blocks of a page). A block passes when
 * bash wrote nothing on stderr (no curl, jq or shell error) and every error body it printed (`"statusCode":NNN`) is
 * one the block shows as expected; each page's key outputs are checked too. On events.md the test runs the page's
 * Node consumer between the blocks, as the page tells the reader to, and checks the signatures it verified, and the
 * page's raw-HMAC `verify` against the service's own signing.
 * Needs bash, curl and jq; skipped, with the reason printed, without them.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningSecret, secretKey, signatureHeaders } from '../../service/webhooks/signing.ts';
import { startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const has = (cmd: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const tools = has('curl') && has('jq') && has('bash');
if (!tools) console.log('[docs-examples] skipped: needs bash, curl and jq (apt-get install curl jq)');

const root = path.resolve('.');

/** Pages whose examples run here, in this order (later pages see what earlier ones left). */
const RUN = ['api.md', 'events.md', 'auth.md', 'billing.md', 'sandbox.md', 'settings.md', 'cli.md', 'architecture.md'];
/** Pages whose examples cannot run next to a running service, and why. */
const NOT_RUN: Record<string, string> = {
  'console.md': 'opens a browser',
  'desktop.md': 'starts the Electron app',
  'development.md': 'installs, tests and benchmarks the checkout',
  'durability.md': 'kills the service',
  'performance.md': 'runs the benchmarks (minutes)',
  'scaling.md': 'starts services',
};

/** The fenced blocks of a page in order, with their language. */
function blocks(page: string): Array<{ lang: string; text: string }> {
  const text = fs.readFileSync(path.join(root, 'docs', page), 'utf8');
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
}

/** The shell blocks a reader pastes into the running service's shell (not those that start a service). */
const shellBlocks = (page: string) =>
  blocks(page)
    .filter((b) => b.lang === 'sh' && !/^npm run serve/m.test(b.text))
    .map((b) => b.text);

/** A reader's terminal: one bash process; `paste` runs a block and resolves with what it printed. */
class Terminal {
  readonly #bash: ChildProcess;
  #out = '';
  #err = '';

  constructor(env: NodeJS.ProcessEnv, cwd: string) {
    this.#bash = spawn('bash', ['--noprofile', '--norc'], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#bash.stdout!.on('data', (d: Buffer) => (this.#out += d.toString()));
    this.#bash.stderr!.on('data', (d: Buffer) => (this.#err += d.toString()));
  }

  async paste(block: string): Promise<{ out: string; err: string }> {
    const marker = `__pasted_${Math.random().toString(36).slice(2)}__`;
    this.#bash.stdin!.write(`${block}\necho ${marker}\n`);
    await waitFor(`the block to finish:\n${block}`, () => (this.#out.includes(marker) ? true : undefined), { timeoutMs: 90_000 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // stderr of the last command
    const out = this.#out.slice(0, this.#out.indexOf(marker));
    const result = { out, err: this.#err };
    this.#out = this.#out.slice(this.#out.indexOf(marker) + marker.length + 1);
    this.#err = '';
    return result;
  }

  close(): void {
    this.#bash.stdin!.end();
    this.#bash.kill();
  }
}

/** Checks a pasted block's result as the module comment says, and returns its output. */
function passed(block: string, result: { out: string; err: string }): string {
  expect(result.err, `stderr of:\n${block}`).toBe('');
  for (const [status] of result.out.matchAll(/"statusCode":\d+/g)) {
    expect(block, `an error the block does not show as expected: ${status}\n${result.out}`).toContain(status);
  }
  return result.out;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

describe.skipIf(!tools)('docs/ worked examples run as written', { timeout: 240_000 }, () => {
  let s: SandboxService;
  let id: string;
  const dirs: string[] = [];
  const tmp = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-docs-'));
    dirs.push(dir);
    return dir;
  };
  const terminal = (cwd = tmp(), extra: NodeJS.ProcessEnv = {}) =>
    new Terminal(
      {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        API: s.apiUrl,
        SANDBOX: s.sandboxUrl,
        TOKEN: s.token,
        AUTH: `Authorization: Bearer ${s.token}`,
        ID: id,
        SWITCHBOARD_DATA_DIR: s.dataDir,
        ...extra,
      },
      cwd,
    );

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair('+15550100');
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('every page is either run here or says why not', () => {
    const pages = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'));
    expect([...RUN, ...Object.keys(NOT_RUN)].sort()).toEqual(pages.sort());
    for (const page of RUN) expect(shellBlocks(page).length, page).toBeGreaterThan(0);
  });

  it('api.md: reads, a quoted reply, a poll with a vote, message operations, groups, search and export', async () => {
    const cwd = tmp();
    const term = terminal(cwd);
    let out = '';
    try {
      for (const block of shellBlocks('api.md')) out += passed(block, await term.paste(block));
    } finally {
      term.close();
    }
    expect(out).toContain('"status":"online","phoneNumber":"+15550100"');
    expect(out).toMatch(/"text":"Noted\.","ack":[23],"quotedMessageId":"\w+_15550101@s\.whatsapp\.net_\w+"/);
    expect(out).toContain('{"name":"Sushi","votes":1,"voters":["15550101@s.whatsapp.net"]}');
    expect(out).toContain('{"chatId":"15550102@s.whatsapp.net","text":"See you at 6","isForwarded":true}');
    expect(out).toContain('{"kind":"revoked","text":""}');
    expect(out).toContain('["15550102@s.whatsapp.net"]');
    expect(out).toContain('{"phoneNumber":"+15550101","isAdmin":true}');
    expect(out).toContain('"text":"Hike on Saturday?"');
    expect(out).toContain('https://chat.whatsapp.com/');
    expect(out).toContain('{"chatName":"Bob Sandbox","snippet":"Can you bring the «charger»?"}');
    expect(fs.readFileSync(path.join(cwd, 'alice.html'), 'utf8')).toContain('<html');
    expect(fs.readFileSync(path.join(cwd, 'alice.zip')).subarray(0, 2).toString()).toBe('PK');
  });

  it('events.md: a webhook consumer verifies the signatures of a test event and a message; the raw HMAC check agrees', async () => {
    const [create, send, log] = shellBlocks('events.md');
    const [consumerJs, verifyJs] = blocks('events.md').filter((b) => b.lang === 'js').map((b) => b.text);
    const port = await freePort();
    // "a folder where npm install standardwebhooks was run": the checkout's node_modules, linked.
    const folder = tmp();
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(folder, 'node_modules'), 'dir');
    fs.writeFileSync(path.join(folder, 'consumer.mjs'), consumerJs!);
    fs.writeFileSync(path.join(folder, 'verify.mjs'), verifyJs!);
    const term = terminal(tmp(), { PORT: String(port) });
    let consumer: ChildProcess | undefined;
    try {
      const secret = passed(create!, await term.paste(create!)).trim();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      consumer = spawn(process.execPath, ['consumer.mjs'], {
        cwd: folder,
        env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret, PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let printed = '';
      consumer.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
      await waitFor('the consumer to listen', async () => {
        try {
          return (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' })).status === 401 ? true : undefined;
        } catch {
          return undefined;
        }
      });
      const logs = passed(send!, await term.paste(send!));
      expect(logs).toContain('{"eventType":"message","status":"delivered","attempts":1,"lastStatusCode":204}');
      expect(logs).toContain('{"eventType":"webhook.test","status":"delivered","attempts":1,"lastStatusCode":204}');
      expect(printed).toMatch(/^msg_\w+_\d+ webhook\.test \{"webhookId":"[\w-]+","message":"[^"]+"\}$/m);
      expect(printed).toMatch(/^msg_\w+_\d+ message \{"id":"false_15550101@s\.whatsapp\.net_\w+".*"body":"Webhook me"/m);
      // The consumer refused the unsigned probe above (401): it acts on verified bodies only.
      expect(passed(log!, await term.paste(log!))).toMatch(/"event":"message","body":/);
    } finally {
      consumer?.kill();
      term.close();
    }

    const { verify } = (await import(pathToFileURL(path.join(folder, 'verify.mjs')).href)) as {
      verify: (secret: string, headers: Record<string, string>, body: string) => boolean;
    };
    const secret = generateSigningSecret();
    const body = '{"event":"message","session":"s","payload":{}}';
    const headers = signatureHeaders(secretKey(secret), 'msg_u_1', body); // what the dispatcher sends
    expect(verify(secret, headers, body)).toBe(true);
    expect(verify(secret, headers, `${body} `)).toBe(false);
    expect(verify(generateSigningSecret(), headers, body)).toBe(false);
    expect(verify(secret, signatureHeaders(secretKey(secret), 'msg_u_1', body, Date.now() - 10 * 60_000), body)).toBe(false);
  });

  it.each([
    ['auth.md', [/^wh_[0-9A-Za-z]{49}$/m, /"name":"script"/, /\{"success":true\}/, /"message":"Invalid or revoked API token","statusCode":401/]],
    ['billing.md', [/\{"provider":"local","slots":100,"used":1,"available":99,"maxSlots":100\}/, /"slots":5,"status":"downgraded"/, /"canCreate":true,"slots":5/]],
    ['sandbox.md', [/\{"phoneNumber":"\+15550123","jid":"15550123@s\.whatsapp\.net"\}/, /\{"from":"\+15550100","text":"Welcome, Carol!"\}/]],
    ['settings.md', [/\{"value":"local","source":"default","lockedBy":null,"restart":true\}/, /\{"workerId":"desk-1","changed":\["workerId"\],"restartRequired":\["workerId"\]\}/, /\{"workerId":"local","restartRequired":\[\]\}/]],
    ['cli.md', [/^NAME\s+KIND\s+ID\s+STATUS\s+IDENTITY\s+CREATED$/m, /^me\s+local\s/m, /^ID\s+NAME\s+PREFIX\s+CREATED\s+LAST USED$/m]],
    ['architecture.md', [/\{"seq":\d+,"event":"message","body":"Trace me"\}/, /"text":"Trace me"/]],
  ] as const)('%s', async (page, expected) => {
    // The reader's shell is in the checkout: `npm run cli` needs its package.json (these pages write no files).
    const term = terminal(root);
    let out = '';
    try {
      for (const block of shellBlocks(page)) out += passed(block, await term.paste(block));
    } finally {
      term.close();
    }
    for (const pattern of expected) expect(out).toMatch(pattern);
  });
});
