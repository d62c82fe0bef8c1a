/**
 * A typed client generated from the served OpenAPI document runs the README walkthrough (issue 25 item 5): the
 * `openapi-typescript` CLI is pointed at `GET /api/openapi.json` of a running service (sandbox mode, real Baileys),
 * its output is used through `openapi-fetch` with the base URL the document's `servers` entry gives, the client
 * code is type-checked with `tsc` against the generated types (a path, parameter or body the document does not
 * have fails to compile), and then run: create a connection, wait for the QR (503 while booting), the sandbox phone
 * scans it, wait for `online`, `/me`, chats and the synced history, a contact writes, the reply is sent, and the
 * contact's phone has it. Everything in a temporary directory that links this checkout's node_modules.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';

/**
 * The README walkthrough as a client of the generated types (type-checked, then imported). What only the sandbox
 * does (scan, a contact writing, what the contact received) comes in as `phone`; the rest is the typed client.
 */
const WALKTHROUGH = `
import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

export interface Phone {
  scan(qr: string): Promise<void>;
  aliceWrites(text: string): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function walkthrough(baseUrl: string, token: string, phone: Phone) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${token}\` } });
  const seen: string[] = [];

  // 1. Create a connection.
  const created = await client.POST('/connections', { body: { name: 'demo' } });
  if (!created.data) throw new Error(\`create: \${created.response.status} \${created.error?.message}\`);
  const id: string = created.data.id;
  seen.push(\`created \${created.response.status} \${created.data.status}\`);
  const path = { id };

  // 2. The QR code: 503 "Worker is booting…" until the connection has booted.
  let png: string | undefined;
  for (let i = 0; i < 300 && !png; i++) {
    const qr = await client.GET('/connections/{id}/qr', { params: { path } });
    if (qr.data) png = qr.data.value;
    else if (qr.response.status === 503) {
      if (!seen.includes('qr 503')) seen.push('qr 503');
      await sleep(100);
    } else throw new Error(\`qr: \${qr.response.status} \${qr.error?.message}\`);
  }
  if (!png) throw new Error('no QR code');
  seen.push(png.slice(0, 22));
  const text = await client.GET('/connections/{id}/qr', { params: { path, query: { format: 'text' } } });
  if (!text.data) throw new Error(\`qr text: \${text.response.status}\`);

  // 3. Scan it with the sandbox phone; wait for online.
  await phone.scan(text.data.value);
  let status = '';
  for (let i = 0; i < 600 && status !== 'online'; i++) {
    const got = await client.GET('/connections/{id}', { params: { path } });
    status = got.data?.status ?? '';
    if (status !== 'online') await sleep(100);
  }
  seen.push(\`status \${status}\`);
  const me = await client.GET('/connections/{id}/me', { params: { path } });
  if (!me.data) throw new Error(\`me: \${me.response.status} \${me.error?.message}\`);

  // 4. Chats and the history synced at pairing.
  const chats = await client.GET('/connections/{id}/chats', { params: { path } });
  const history = await client.GET('/connections/{id}/chats/{chatId}/messages', {
    params: { path: { id, chatId: '${ALICE_JID}' }, query: { limit: 20 } },
  });
  if (!chats.data || !history.data) throw new Error('chats or messages failed');

  // 5. Alice writes to you; it arrives.
  await phone.aliceWrites('Hi, are you there?');
  let incoming = false;
  for (let i = 0; i < 300 && !incoming; i++) {
    const page = await client.GET('/connections/{id}/chats/{chatId}/messages', { params: { path: { id, chatId: '${ALICE_JID}' } } });
    incoming = page.data?.messages.some((m) => !m.fromMe && m.text === 'Hi, are you there?') ?? false;
    if (!incoming) await sleep(100);
  }

  // 6. Reply.
  const sent = await client.POST('/connections/{id}/send', { params: { path }, body: { chatId: '${ALICE}', text: 'Yes, here!' } });
  if (!sent.data) throw new Error(\`send: \${sent.response.status} \${sent.error?.message}\`);
  seen.push(\`sent \${sent.response.status}\`);

  // A typed error: an unknown connection is a 404 in the spec's error shape.
  const missing = await client.GET('/connections/{id}', { params: { path: { id: 'no-such-connection' } } });
  const notFound: { message: string; statusCode: number } | undefined = missing.error;

  return {
    id,
    seen,
    me: { id: me.data.id, pushName: me.data.pushName },
    chatIds: chats.data.map((c) => c.id),
    historyTexts: history.data.messages.map((m) => m.text),
    incoming,
    sent: { id: sent.data.id, type: sent.data.type, text: sent.data.text },
    notFound: notFound && { status: missing.response.status, message: notFound.message },
  };
}
`;

describe('a client generated from the served OpenAPI document runs the README walkthrough', { timeout: 180_000 }, () => {
  let s: SandboxService;
  let dir: string;
  let baseUrl: string;

  beforeAll(async () => {
    s = await startSandboxService({ typingDelayMs: { min: 0, max: 0 } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-typed-client-'));
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  });
  afterAll(async () => {
    await s?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('generates the types with openapi-typescript from the served document, at the base URL of its servers entry', async () => {
    const docUrl = `${s.apiUrl}/openapi.json`;
    const doc = (await (await fetch(docUrl)).json()) as { servers?: Array<{ url: string }> };
    expect(doc.servers?.length, 'the document names its server').toBeGreaterThan(0);
    // A relative server URL is relative to where the document is served (OpenAPI 3.1 §4.8.5).
    baseUrl = new URL(doc.servers![0]!.url, docUrl).toString();
    expect(baseUrl).toBe(s.apiUrl);
    await run(process.execPath, [path.join(root, 'node_modules/openapi-typescript/bin/cli.js'), docUrl, '--output', path.join(dir, 'api.ts')], {
      cwd: dir,
    });
    expect(fs.readFileSync(path.join(dir, 'api.ts'), 'utf8')).toContain('"/connections/{id}/qr"');
  });

  it('the walkthrough client type-checks against the generated types, and a wrong path does not', async () => {
    fs.writeFileSync(path.join(dir, 'walkthrough.ts'), WALKTHROUGH);
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          allowImportingTsExtensions: true,
          lib: ['ES2022', 'DOM'],
          types: [],
          skipLibCheck: true,
        },
        files: ['walkthrough.ts', 'wrong.ts'],
      }),
    );
    // The check has teeth: the path as the server registers it (the base in it) and a body field of the wrong type
    // do not compile (one tsc run for both files: only wrong.ts may have errors).
    fs.writeFileSync(
      path.join(dir, 'wrong.ts'),
      `import createClient from 'openapi-fetch';\nimport type { paths } from './api.ts';\nconst c = createClient<paths>();\n` +
        `export const a = c.GET('/api/connections/{id}', { params: { path: { id: 'x' } } });\n` +
        `export const b = c.POST('/connections', { body: { name: 42 } });\n`,
    );
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    const out = await run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { cwd: dir }).then(
      () => '',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    const errors = out.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errors.filter((l) => !l.startsWith('wrong.ts')), `the walkthrough client does not type-check:\n${out}`).toEqual([]);
    expect(errors.filter((l) => l.startsWith('wrong.ts(4,')).length, out).toBeGreaterThan(0);
    expect(errors.filter((l) => l.startsWith('wrong.ts(5,')).length, out).toBeGreaterThan(0);
  });

  it('runs: pairs, reads the history, receives and replies; the contact’s phone has the reply', async () => {
    const { walkthrough } = (await import(pathToFileURL(path.join(dir, 'walkthrough.ts')).href)) as {
      walkthrough(baseUrl: string, token: string, phone: { scan(qr: string): Promise<void>; aliceWrites(text: string): Promise<void> }): Promise<{
        seen: string[];
        me: { id: string; pushName: string };
        chatIds: string[];
        historyTexts: string[];
        incoming: boolean;
        sent: { id: string; type: string; text: string };
        notFound?: { status: number; message: string };
      }>;
    };
    const result = await walkthrough(baseUrl, s.token, {
      async scan(qr) {
        const res = await s.sandbox('POST', `/accounts/${enc(PHONE)}/scan`, { qr });
        if (res.status !== 200) throw new Error(`scan: ${res.status}`);
      },
      async aliceWrites(text) {
        const res = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text });
        if (res.status !== 201) throw new Error(`alice writes: ${res.status}`);
      },
    });
    expect(result.seen).toEqual(expect.arrayContaining(['created 201 starting', 'data:image/png;base64,', 'status online', 'sent 201']));
    expect(result.me).toEqual({ id: '15550100@s.whatsapp.net', pushName: 'Sandbox Phone' });
    expect(result.chatIds).toContain(ALICE_JID);
    expect(result.historyTexts.length).toBeGreaterThan(0);
    expect(result.incoming).toBe(true);
    expect(result.sent).toMatchObject({ type: 'text', text: 'Yes, here!' });
    expect(result.notFound).toEqual({ status: 404, message: 'Connection not found' });
    // 7. What Alice's phone received.
    await waitFor('the reply at the contact', async () => {
      const got = await s.sandbox('GET', `/accounts/${enc(ALICE)}/messages`);
      return (got.body as Array<{ text: string }>).some((m) => m.text === 'Yes, here!') ? true : undefined;
    });
  });
});
