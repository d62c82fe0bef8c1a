/**
 * The linking QR of older Baileys (6.x): four fields `ref,noiseKey,identityKey,advSecret`, no
 * `https://wa.me/settings/linked_devices#` prefix and no platform id (`Socket/socket.js genPairQR` of 6.x). Phones
 * accept it as well as rc14's five-field form, so the sandbox's scan must too. The client is a real rc14 Baileys: the
 * pairing handshake that follows a scan (`pair-success` → `pair-device-sign` → 515) is the same in both versions;
 * only the QR it shows differs, so the test builds that QR from the client's own credentials as 6.x does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { startSandbox, type Sandbox } from '../../service/sandbox/index.ts';
import { connectClient, type TestClient } from './baileys-client.ts';

async function scan(
  sandbox: Sandbox,
  phone: string,
  qr: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sandbox.url}/accounts/${encodeURIComponent(phone)}/scan`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ qr }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The QR Baileys 6.x shows for `ref`: `[ref, noiseKey.public, signedIdentityKey.public, advSecretKey].join(',')`. */
function legacyQr(client: TestClient, ref: string): string {
  const { creds } = client.sock.authState;
  return [
    ref,
    Buffer.from(creds.noiseKey.public).toString('base64'),
    Buffer.from(creds.signedIdentityKey.public).toString('base64'),
    creds.advSecretKey,
  ].join(',');
}

describe('linking with the four-field QR of older Baileys', { timeout: 30_000 }, () => {
  let root: string;
  let sandbox: Sandbox;
  const clients: TestClient[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'legacy-qr-'));
    sandbox = await startSandbox({ dataDir: join(root, 'data'), logger: pino({ level: 'silent' }) });
    await sandbox.seedDemo();
  });

  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('the scan takes it and linking completes: pair-device-sign, 515, then a login without a QR', async () => {
    const authFile = join(root, 'auth.json');
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile);
    clients.push(pairing);
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    const ref = /#([^,]+),/.exec(qr!)![1]!;
    const legacy = legacyQr(pairing, ref);
    expect(legacy.split(',')).toHaveLength(4);
    expect(legacy).not.toContain('wa.me');

    const scanned = await scan(sandbox, '+15550101', legacy);
    expect(scanned).toMatchObject({
      status: 200,
      body: { jid: expect.stringMatching(/^15550101:\d+@s\.whatsapp\.net$/) },
    });
    // the client verified the HMAC made with the QR's adv secret and signed the device identity (pair-device-sign)
    expect(await pairing.closed).toBe(515);
    expect(pairing.sock.authState.creds.me?.id).toBe(scanned.body.jid);

    const client = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile);
    clients.push(client);
    await client.waitFor('connection.update', (u) => u.connection === 'open');
    expect(client.events.some((e) => e.name === 'connection.update' && !!(e.data as { qr?: string }).qr)).toBe(false);
    const devices = await fetch(`${sandbox.url}/accounts/15550101/devices`).then(
      (r) => r.json() as Promise<Array<{ deviceId: number; online: boolean }>>,
    );
    expect(devices).toEqual([expect.objectContaining({ deviceId: scanned.body.deviceId, online: true })]);
  });

  it('a four-field QR with keys that are not the waiting client’s is still refused', async () => {
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, join(root, 'other.json'));
    clients.push(pairing);
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    const ref = /#([^,]+),/.exec(qr!)![1]!;
    const key = Buffer.alloc(32, 7).toString('base64');
    expect((await scan(sandbox, '+15550102', [ref, key, key, key].join(','))).status).toBe(400);
    expect((await scan(sandbox, '+15550102', [ref, key, key].join(','))).status).toBe(400);
  });
});
