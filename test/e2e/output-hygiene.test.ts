/**
 * No key material in any output, and readable logs. `switchboard serve --sandbox` runs as a child process at
 * debug level (the most its logs ever say): a connection is paired, messages go both ways, the connection is
 * deleted and the same phone pairs again (fresh Signal sessions on both sides, where libsignal closes the old ones
 * and prints their records through `console`), and messages go both ways again. Its whole stdout and stderr are
 * then scanned for `privKey`, `rootKey`, `chainKey` and base64 runs of key length (32 bytes → 43 chars + `=`,
 * 33 bytes → 44 chars). Stdout holds only the `API:`/`Sandbox:` lines. Then `--log-format pretty` gives
 * human-readable lines and `--log-format json` one JSON object per line, and by default a terminal (a pty through
 * util-linux `script`) gets readable lines too.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { effectiveLogFormat } from '../../service/config/logger.ts';
import { isLibsignalConsoleCall } from '../../service/config/console-filter.ts';
import { isRestartRequiredLog } from '../../service/engine/baileys-logger.ts';
import { decodeQrDataUrl } from '../helpers/qr.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const enc = encodeURIComponent;
const hasScript = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasScript) console.log('[output hygiene] terminal test skipped: needs util-linux script');

/** Base64 of 32 bytes (43 chars + one `=`) or 33 bytes (44 chars, no padding), mixed case like real key encodings. */
const KEY_B64 = /(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/]{43}=|[A-Za-z0-9+/]{44})(?![A-Za-z0-9+/=])/g;
const keyLike = (text: string) => [...text.matchAll(KEY_B64)].map((m) => m[0]).filter((s) => /[a-z]/.test(s) && /[A-Z]/.test(s));

describe('output hygiene: no key material, readable logs', { timeout: 180_000 }, () => {
  const dirs: string[] = [];
  const started: ServiceProcess[] = [];
  afterAll(async () => {
    for (const s of started) await s.stop('SIGKILL');
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  const tmpDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-output-'));
    dirs.push(d);
    return d;
  };

  it('a full sandbox run (pair, messages both ways, re-pair, messages) prints no key material', async () => {
    const dataDir = tmpDir();
    const service = await startServe(['--sandbox', '--port', '0', '--data-dir', dataDir, '--log-format', 'json', '--typing-delay-ms', '0'], {
      SWITCHBOARD_LOG_LEVEL: 'debug',
    });
    started.push(service);
    let stdout = ''; // what stdout carries after the URL lines
    service.child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    const token = (await runCli(['token', 'create', '--user', 'keys', '--data-dir', dataDir])).stdout.trim();
    const call = async (base: string, method: string, route: string, body?: unknown, auth = true) => {
      const res = await fetch(`${base}${route}`, {
        method,
        headers: { ...(auth && { authorization: `Bearer ${token}` }), ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const api = (method: string, route: string, body?: unknown) => call(service.apiUrl, method, route, body);
    const sandbox = (method: string, route: string, body?: unknown) => call(service.sandboxUrl!, method, route, body, false);

    const pairAndTalk = async (round: number) => {
      const id = (await api('POST', '/connections', { name: `keys-${round}` })).body.id as string;
      const qr = await waitFor('QR', async () => {
        const res = await api('GET', `/connections/${id}/qr`);
        return res.status === 200 ? (res.body.value as string) : undefined;
      });
      expect((await sandbox('POST', `/accounts/${enc(PHONE)}/scan`, { qr: decodeQrDataUrl(qr) })).status).toBe(200);
      await waitFor('online', async () => ((await api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), { timeoutMs: 30_000 });
      const text = `round ${round} from Alice`;
      expect((await sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text })).status).toBe(201);
      const reply = `round ${round} reply`;
      expect((await api('POST', `/connections/${id}/send`, { chatId: ALICE, text: reply, skipPresence: true })).status).toBe(201);
      await waitFor('reply at Alice', async () => {
        const list = (await sandbox('GET', `/accounts/${enc(ALICE)}/messages`)).body as Array<{ text: string }>;
        return list.some((m) => m.text === reply) ? true : undefined;
      });
      return id;
    };

    const first = await pairAndTalk(1);
    expect((await api('DELETE', `/connections/${first}`)).status).toBeLessThan(300);
    await pairAndTalk(2);
    await service.stop('SIGTERM');

    const all = stdout + service.stderr();
    expect(stdout).toBe(''); // nothing after the API:/Sandbox: lines (startServe read those)
    for (const word of ['privKey', 'rootKey', 'chainKey', 'ephemeralKeyPair', 'baseKey"']) expect(all).not.toContain(word);
    expect(keyLike(all)).toEqual([]);
    // The JSON lines stay JSON (nothing from console mixed into them), and libsignal's messages, when it printed
    // any, appear as debug lines without their records.
    const lines = service.stderr().trim().split('\n');
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    const libsignal = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.component === 'libsignal');
    for (const l of libsignal) expect(l.level).toBe(20);
    console.log(`[output hygiene] libsignal console messages routed to debug: ${libsignal.length}`);
    // The normal 515 restart after pairing is logged at info, not as an error.
    expect(lines.filter((l) => l.includes('stream errored out') && l.includes('"level":50'))).toEqual([]);
    expect(lines.filter((l) => l.includes('"code":515') && l.includes('"msg":"socket closed"')).map((l) => (JSON.parse(l) as { level: number }).level)).toEqual([30, 30]);
  });

  it('--log-format pretty prints readable lines, json one object per line', async () => {
    const pretty = await startServe(['--port', '0', '--data-dir', tmpDir(), '--log-format', 'pretty'], { SWITCHBOARD_LOG_LEVEL: 'info' });
    started.push(pretty);
    await pretty.stop('SIGTERM');
    const prettyLines = pretty.stderr().trim().split('\n');
    expect(prettyLines.some((l) => / INFO.*switchboard ready/.test(l))).toBe(true);
    expect(prettyLines.some((l) => l.startsWith('{'))).toBe(false);

    const json = await startServe(['--port', '0', '--data-dir', tmpDir(), '--log-format', 'json'], { SWITCHBOARD_LOG_LEVEL: 'info' });
    started.push(json);
    await json.stop('SIGTERM');
    const jsonLines = json.stderr().trim().split('\n').map((l) => JSON.parse(l) as { msg: string; level: number });
    expect(jsonLines.some((l) => l.msg === 'switchboard ready' && l.level === 30)).toBe(true);

    const bad = await runCli(['serve', '--log-format', 'xml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected one of auto, json, pretty');
  });

  it.skipIf(!hasScript)('by default prints readable lines on a terminal (a pty), with the API line on stdout', async () => {
    // util-linux `script` gives serve a pseudo-terminal for stdout and stderr, as when a person runs it.
    const dataDir = tmpDir();
    const command = [process.execPath, 'bin/switchboard.js', 'serve', '--port', '0', '--data-dir', dataDir].map((a) => `'${a}'`).join(' ');
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      env: { ...process.env, SWITCHBOARD_LOG_LEVEL: 'info', NO_COLOR: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitFor('the ready line', () => (/switchboard ready/.test(out) ? true : undefined), { timeoutMs: 60_000 });
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
    const lines = out.split(/\r?\n/).filter((l) => l.trim() !== '');
    expect(lines).toContainEqual(expect.stringMatching(/^API: http:\/\/127\.0\.0\.1:\d+\/api$/));
    expect(lines.some((l) => / INFO.*switchboard ready/.test(l))).toBe(true);
    expect(lines.filter((l) => l.trimStart().startsWith('{"level"'))).toEqual([]);
  });

  it('auto format follows the terminal; the filters recognise what they drop or lower', () => {
    expect(effectiveLogFormat('auto', true)).toBe('pretty');
    expect(effectiveLogFormat('auto', false)).toBe('json');
    expect(effectiveLogFormat('json', true)).toBe('json');
    expect(isLibsignalConsoleCall(['Closing open session in favor of incoming prekey bundle'])).toBe(true);
    expect(isLibsignalConsoleCall(['Closing session:', { indexInfo: {} }])).toBe(true);
    expect(isLibsignalConsoleCall(['[console] built dist/console'])).toBe(false);
    expect(isRestartRequiredLog([{ fullErrorNode: { tag: 'stream:error', attrs: { code: '515' } } }, 'stream errored out'])).toBe(true);
    expect(isRestartRequiredLog([{ fullErrorNode: { tag: 'stream:error', attrs: { code: '401' } } }, 'stream errored out'])).toBe(false);
  });
});
