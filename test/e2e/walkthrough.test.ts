/**
 * The README's walkthrough, run as written: its first ```sh block after "### Walkthrough" is extracted from
 * README.md and run by bash, in one piece, against `switchboard serve --sandbox` (a child process), with API,
 * SANDBOX and TOKEN from the environment as a reader sets them. It must pair (waiting for the QR and for `online`
 * by itself), read the synced history, receive Alice's message and deliver the reply to Alice's phone.
 * Needs curl and jq (.ci/run installs them); skipped, with the reason printed, without them.
 */
import { execFileSync, spawn } from 'node:child_process';
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

/** The walkthrough's shell block from README.md. */
export function walkthroughBlock(readme: string): string {
  const section = readme.slice(readme.indexOf('### Walkthrough'));
  const m = /```sh\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('no ```sh block after "### Walkthrough" in README.md');
  return m[1]!;
}

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
