/**
 * The README's walkthrough, run as written: its first ```sh block after "### Walkthrough" is extracted from
 * README.md and run by bash, in one piece, against `switchboard serve --sandbox` (a child process), with API,
 * SANDBOX and TOKEN from the environment as a reader sets them. It must pair (waiting for the QR and for `online`
 * by itself), read the synced history, receive Alice's message and deliver the reply to Alice's phone.
 * Needs curl and jq (.ci/run installs them); skipped, with the reason printed, without them.
 *
 * The "Going live" block runs the same way, against the sandbox: nothing may reach WhatsApp, and its API calls are
 * the same in both modes. Its token line runs as written (`token create` without --sandbox, into the data dir the
 * service uses), and the test plays the phone: it types the code the block prints into the sandbox phone
 * (`POST /accounts/:phone/link-code`), as the README tells the reader to do on theirs.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';

const has = (cmd: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const tools = has('curl') && has('jq') && has('bash');
if (!tools) console.log('[walkthrough] skipped: needs bash, curl and jq (apt-get install curl jq)');

/** The first ```sh block after the heading that starts with `heading` in README.md. */
export function readmeBlock(readme: string, heading: string): string {
  const at = readme.indexOf(`\n${heading}`);
  if (at < 0) throw new Error(`no "${heading}" heading in README.md`);
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!m) throw new Error(`no \`\`\`sh block after "${heading}" in README.md`);
  return m[1]!;
}

/** The walkthrough's shell block from README.md. */
export const walkthroughBlock = (readme: string): string => readmeBlock(readme, '### Walkthrough');

describe.skipIf(!tools)('README walkthrough runs as written', { timeout: 120_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-walkthrough-'));
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('pairs, reads, receives and replies', async () => {
    const block = walkthroughBlock(fs.readFileSync('README.md', 'utf8'));
    expect(block).toContain('until');
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir, '--typing-delay-ms', '0']);
    const token = (await runCli(['token', 'create', '--user', 'me', '--data-dir', dataDir])).stdout.trim();
    const child = spawn('bash', ['-c', block], {
      env: { ...process.env, API: service.apiUrl, SANDBOX: service.sandboxUrl, TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, `stderr:\n${err}\nstdout:\n${out}`).toBe(0);
    expect(out).toContain('data:image/png;base64,');
    expect(out).toContain('"online"');
    expect(out).toContain('"pushName":"Sandbox Phone"');
    expect(out).toContain('Alice Sandbox');
    // Step 7: Alice's phone has the reply, decrypted.
    expect(out).toContain('Yes, here!');
  });
});

describe.skipIf(!tools)('README "Going live" block runs as written (against the sandbox)', { timeout: 120_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-golive-'));
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates a token and a connection, prints a phone code, and is online once the code is typed on the phone', async () => {
    const block = readmeBlock(fs.readFileSync('README.md', 'utf8'), '## Going live');
    expect(block).toContain('npm run --silent cli -- token create --user me)'); // the live token line, as written
    expect(block).not.toContain('--sandbox');
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir, '--typing-delay-ms', '0']);
    const phone = '+15550100'; // the sandbox's account to pair
    const env: NodeJS.ProcessEnv = { ...process.env, API: service.apiUrl, PHONE: phone, SWITCHBOARD_DATA_DIR: dataDir };
    delete env.TOKEN;
    const child = spawn('bash', ['-c', block], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let typed: Promise<Response> | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const code = /^([0-9A-Z]{4}-[0-9A-Z]{4})$/m.exec(out)?.[1];
      // The reader types the code on the phone: here, the sandbox phone.
      if (code && !typed) {
        typed = fetch(`${service!.sandboxUrl}/accounts/${encodeURIComponent(phone)}/link-code`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ code }),
        });
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, `stderr:\n${err}\nstdout:\n${out}`).toBe(0);
    expect((await typed)?.status).toBe(200);
    expect(out).toContain('"id":"15550100@s.whatsapp.net","pushName":"Sandbox Phone"');
  });

  it('stops before doing anything, saying what to set, when PHONE is not set', () => {
    const block = readmeBlock(fs.readFileSync('README.md', 'utf8'), '## Going live');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-golive-nophone-'));
    const env: NodeJS.ProcessEnv = { ...process.env, PHONE: '', API: 'http://127.0.0.1:9/api', SWITCHBOARD_DATA_DIR: dir };
    delete env.TOKEN;
    const res = spawnSync('bash', ['-c', block], { env, encoding: 'utf8' });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain('PHONE: set PHONE to your number first, e.g. export PHONE=+');
    expect(fs.readdirSync(dir)).toEqual([]); // no token was created
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
