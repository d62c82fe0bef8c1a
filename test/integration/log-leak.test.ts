/**
 * No API token reaches the logs, wherever a client puts it (issue 25 §7). A real `switchboard serve` runs as a
 * child process at `trace` (the most any deployment can enable), in both log formats; requests carry a live token
 * and a well-formed unknown one in every spelling a client might use: a path segment, `?token=`, `?access_token=`,
 * any other parameter name, `token[]=`, `to%00ken=`, percent-encoded (fully, partly, twice), headers other than
 * Authorization (`X-Api-Key`, `Cookie`, `Referer`), the WebSocket URL's `?token=`, and a request the HTTP parser
 * refuses (Fastify logs its client errors at trace, with the raw bytes Node hands it). Then the process's whole
 * stdout and stderr must hold no piece of either token in any encoding: as is, percent-encoded, hex, base64, or as
 * the byte list a Buffer becomes in JSON.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { generateToken } from '../../service/auth/api-tokens.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';

/** Every character as `%XX` (upper- or lowercase hex). */
const pctAll = (s: string, lower = false) =>
  [...Buffer.from(s)]
    .map((b) => `%${b.toString(16).padStart(2, '0')}`)
    .map((x) => (lower ? x : x.toUpperCase()))
    .join('');

/** The spellings of `token` a client may put in a URL (path and query), each a path under the API. */
function urlSpellings(token: string): string[] {
  const partly = token.replace(/[A-Z]/g, (c) => `%${c.charCodeAt(0).toString(16)}`).replace('_', '%5F'); // capitals and `_` only
  const twice = pctAll(token).replace(/%/g, '%25');
  return [
    `/connections/${token}`,
    `/connections/${pctAll(token)}`,
    `/connections/${token}/messages?limit=5`,
    `/nope/${token}`,
    `/connections?access_token=${token}`,
    `/connections?foo=${token}`,
    `/connections?token[]=${token}`,
    `/connections?token%5B%5D=${token}`,
    `/connections?to%00ken=${token}`,
    `/connections?token=${pctAll(token)}`,
    `/connections?foo=${pctAll(token, true)}`,
    `/connections?foo=${partly}`,
    `/connections?foo=${twice}`,
    `/connections?a=1&b=${token}&c=${pctAll(token)}`,
    `/connections?${token}`,
  ];
}

/** Pieces of `token` in every encoding a log line could carry them in. */
function fragments(token: string): string[] {
  const body = token.slice(3);
  const out: string[] = [token, body];
  for (let i = 0; i + 12 <= body.length; i += 6) {
    const piece = body.slice(i, i + 12);
    const bytes = Buffer.from(piece);
    out.push(
      piece,
      pctAll(piece),
      pctAll(piece, true),
      bytes.toString('hex'),
      bytes.toString('hex').toUpperCase(),
      [...bytes].join(','),
    );
  }
  for (const b64 of [Buffer.from(token).toString('base64'), Buffer.from(body).toString('base64')])
    out.push(b64.slice(4, 24));
  return out;
}

/** Sends raw bytes to the API's port and resolves with whatever came back once the server closed or 2 s passed. */
function rawRequest(apiUrl: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(apiUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), 2_000);
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.write(bytes);
  });
}

describe('no API token in any log line', { timeout: 120_000 }, () => {
  const dirs: string[] = [];
  const started: ServiceProcess[] = [];
  afterAll(async () => {
    for (const s of started) await s.stop('SIGKILL');
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it.each(['json', 'pretty'])(
    '%s logs at trace: every spelling of a token in URLs and headers is redacted',
    async (format) => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-log-leak-'));
      dirs.push(dataDir);
      const live = (await runCli(['token', 'create', '--user', 'leak', '--data-dir', dataDir])).stdout.trim();
      expect(live).toMatch(/^wh_/);
      const unknown = generateToken(); // well formed, never issued: a mistyped or revoked token is a secret too
      const service = await startServe(
        ['--port', '0', '--data-dir', dataDir, '--log-format', format, '--workers', '1'],
        {
          SWITCHBOARD_LOG_LEVEL: 'trace',
        },
      );
      started.push(service);
      let stdout = '';
      service.child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));

      let requests = 0;
      for (const token of [live, unknown]) {
        for (const spelling of urlSpellings(token)) {
          const res = await fetch(`${service.apiUrl}${spelling}`, { headers: { authorization: `Bearer ${live}` } });
          await res.arrayBuffer();
          expect(res.status, spelling).toBeLessThan(500);
          requests++;
        }
        // headers other than Authorization, on an authenticated and an unauthenticated request
        for (const auth of [`Bearer ${live}`, undefined]) {
          const res = await fetch(`${service.apiUrl}/connections`, {
            headers: {
              ...(auth && { authorization: auth }),
              'x-api-key': token,
              cookie: `session=${token}; other=${pctAll(token)}`,
              referer: `http://127.0.0.1/app?token=${token}`,
              'user-agent': `probe/${token}`,
            },
          });
          await res.arrayBuffer();
          requests++;
        }
        // the token in the Authorization header, well-formed, mangled and in other schemes
        for (const authorization of [
          `Bearer ${token}`,
          `Bearer ${token}x`,
          `Token ${token}`,
          `Basic ${Buffer.from(`u:${token}`).toString('base64')}`,
          token,
        ]) {
          const res = await fetch(`${service.apiUrl}/connections`, { headers: { authorization } });
          await res.arrayBuffer();
          requests++;
        }
        // the event stream's URL
        await new Promise<void>((resolve) => {
          const ws = new WebSocket(`${service.apiUrl.replace(/^http/, 'ws')}/ws?token=${token}&after=0`);
          ws.on('open', () => ws.close());
          ws.on('close', () => resolve());
          ws.on('error', () => resolve());
        });
        // a request Node's HTTP parser refuses (a header name with a space), the token in a header and the path
        const answer = await rawRequest(
          service.apiUrl,
          `GET /api/connections/${token} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: ${token}\r\nBad Header: ${token}\r\n\r\n`,
        );
        expect(answer).toMatch(/^HTTP\/1\.1 400/);
      }
      await service.stop('SIGTERM');

      const all = stdout + service.stderr();
      expect(stdout).toBe('');
      // The logs did record the requests (at trace: the client errors too), with the tokens redacted.
      expect(all.match(/request completed/g)?.length ?? 0).toBeGreaterThanOrEqual(requests - 4);
      expect(all).toMatch(/client error/);
      expect(all).toContain('[redacted]');
      for (const token of [live, unknown]) {
        for (const piece of fragments(token))
          expect(all, `a piece of the token (${piece}) is in the logs`).not.toContain(piece);
      }
    },
  );
});
