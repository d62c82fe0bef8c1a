/**
 * Linking by phone code at protocol level with real parts only: an unmodified Baileys rc14 socket asks for a code
 * (`requestPairingCode`: `companion_hello`), the sandbox phone enters it through the admin API (`primary_hello`,
 * the companion's `companion_finish`, the key bundle opened with the real key agreement), and pairing finishes as
 * after a QR scan: Baileys checks the `pair-success` HMAC with the secret it derived itself, restarts (515) and
 * logs in with the new identity. A wrong code is refused by the phone (400) without harm to the waiting companion.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { startSandbox, type Sandbox } from '../../service/sandbox/index.ts';
import { connectClient, type TestClient } from './baileys-client.ts';

interface ApiResult<T = unknown> {
  status: number;
  body: T;
}
type ErrorBody = { message: string; statusCode: number; error: string };

async function api<T = unknown>(base: string, method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** Another code of the same shape (each character moved one place in Baileys' alphabet). */
function otherCode(code: string): string {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTVWXYZ';
  return [...code].map((c) => alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]).join('');
}

describe('sandbox: link a companion by phone code', () => {
  let root: string;
  let sandbox: Sandbox;
  const clients: TestClient[] = [];
  const records: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void records.push(JSON.parse(line)) });

  const connect = async (authFile: string) => {
    const client = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, join(root, authFile));
    clients.push(client);
    return client;
  };
  const linkCode = (phone: string, code: unknown) =>
    api<ErrorBody & { jid: string; lid: string; deviceId: number }>(sandbox.url, 'POST', `/accounts/${encodeURIComponent(phone)}/link-code`, {
      code,
    });

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-link-code-'));
    sandbox = await startSandbox({ dataDir: join(root, 'data'), logger });
    await sandbox.seedDemo();
  });

  afterAll(async () => {
    for (const c of clients) c.sock.end(undefined);
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses a wrong code (400) and links with the right one: 515, then a login with the new identity', async () => {
    const pairing = await connect('auth-a.json');
    await pairing.waitFor('connection.update', (u) => !!u.qr);
    const code = await pairing.sock.requestPairingCode('15550100');
    expect(code).toMatch(/^[1-9A-HJ-NP-TV-Z]{8}$/);

    const wrong = await linkCode('+15550100', otherCode(code));
    expect(wrong).toEqual({
      status: 400,
      body: { statusCode: 400, error: 'Bad Request', message: 'Wrong code: it does not match the code shown on the linking device' },
    });
    // The companion went through a full primary_hello → companion_finish round trip and is still waiting.
    expect(pairing.events.some((e) => e.name === 'connection.update' && (e.data as { isNewLogin?: boolean }).isNewLogin)).toBe(false);

    // Typed as a person would: lower case, with the dash the device shows.
    const typed = `${code.slice(0, 4)}-${code.slice(4)}`.toLowerCase();
    const linked = await linkCode('+1 555 0100', typed);
    expect(linked.status).toBe(200);
    expect(linked.body.jid).toBe(`15550100:${linked.body.deviceId}@s.whatsapp.net`);
    expect(linked.body.lid).toMatch(new RegExp(`^\\d{15}:${linked.body.deviceId}@lid$`));
    await pairing.waitFor('connection.update', (u) => u.isNewLogin === true);
    expect(await pairing.closed).toBe(515);
    const creds = pairing.sock.authState.creds;
    expect(creds.me?.id).toBe(linked.body.jid);
    expect(creds.account?.accountSignatureKey).toBeDefined();

    const client = await connect('auth-a.json');
    await client.waitFor('connection.update', (u) => u.connection === 'open');
    expect(client.sock.authState.creds.me?.lid).toBe(linked.body.lid);
    const devices = await api<Array<{ deviceId: number; online: boolean }>>(sandbox.url, 'GET', '/accounts/+15550100/devices');
    expect(devices.body).toContainEqual(expect.objectContaining({ deviceId: linked.body.deviceId, online: true }));

    // The code was used up with the pairing.
    expect((await linkCode('+15550100', code)).status).toBe(400);
  });

  it('answers 400 when no device waits for a code for that phone: never asked, other phone, or the device went away', async () => {
    const never = await linkCode('+15550101', 'ABCD-EFGH');
    expect(never).toEqual({
      status: 400,
      body: {
        statusCode: 400,
        error: 'Bad Request',
        message: 'No device is waiting for a code for this phone (the code expired or was never requested)',
      },
    });

    const waiting = await connect('auth-b.json');
    await waiting.waitFor('connection.update', (u) => !!u.qr);
    const code = await waiting.sock.requestPairingCode('15550102');
    // Entered on another phone than the one the device named.
    expect((await linkCode('+15550101', code)).status).toBe(400);
    // The device closes (its QR refs ran out, the app quit): the code has expired.
    waiting.sock.end(undefined);
    await waiting.closed;
    const expired = await linkCode('+15550102', code);
    expect(expired.status).toBe(400);
    expect(expired.body.message).toMatch(/expired/);
  });

  it('validates the code and the phone: 400 for a malformed code, 404 for an unknown account', async () => {
    for (const code of [undefined, 42, '', 'ABC-DEF', 'ABCD-EFGH-J', 'ABCD_EFGH', 'ÄBCD-EFGH']) {
      const res = await linkCode('+15550100', code);
      expect(res.status, JSON.stringify(code)).toBe(400);
      expect(res.body.message).toMatch(/^code is required/);
    }
    expect((await linkCode('+15559999', 'ABCD-EFGH')).body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Account not found' });
  });

  it('logged no errors', () => {
    expect(records.filter((r) => r.level >= 50).map((r) => r.msg)).toEqual([]);
  });
});
