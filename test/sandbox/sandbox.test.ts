/**
 * End-to-end tests of the sandbox with real parts only: the unmodified Baileys rc14 client, the sandbox
 * on 127.0.0.1 with a temp data dir, and its admin HTTP API.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { WebSocket } from 'ws';
import { pino } from 'pino';
import { startSandbox, type Sandbox } from '../../service/sandbox/index.ts';
import { connectClient, muteLibsignalNoise, type TestClient } from './baileys-client.ts';

interface ApiResult<T = unknown> {
  status: number;
  body: T;
}

async function api<T = unknown>(base: string, method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface ReceivedMessage {
  id: string;
  from: string;
  to: string;
  text: string;
  timestamp: number;
}

async function pollMessages(base: string, pn: string, match: (m: ReceivedMessage) => boolean, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await api<ReceivedMessage[]>(base, 'GET', `/accounts/${encodeURIComponent(pn)}/messages`);
    const hit = body.find(match);
    if (hit) return hit;
    if (Date.now() > deadline) throw new Error(`message not received by ${pn}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

muteLibsignalNoise();

/** A pino logger for the sandbox that keeps its records, so tests can assert it logged no errors. */
function capturingLogger() {
  const records: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void records.push(JSON.parse(line)) });
  return { logger, errors: () => records.filter((r) => r.level >= 50).map((r) => r.msg) };
}

const noTimeouts = (client: TestClient) => client.logs.filter((l) => /timed out|Timed Out/i.test(l));

describe('sandbox with a real Baileys client', () => {
  let root: string;
  let dataDir: string;
  let authFile: string;
  let sandbox: Sandbox;
  let client: TestClient | undefined;
  const logs = capturingLogger();

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
    dataDir = join(root, 'data');
    authFile = join(root, 'auth.json');
    sandbox = await startSandbox({ dataDir, logger: logs.logger });
    await sandbox.seedDemo();
    await sandbox.seedDemo(); // idempotent
  });

  afterAll(async () => {
    await client?.end();
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('seeds three demo accounts once', async () => {
    const { status, body } = await api<Array<{ phoneNumber: string; pushName: string; jid: string; lid: string }>>(
      sandbox.url,
      'GET',
      '/accounts',
    );
    expect(status).toBe(200);
    expect(body.map((a) => a.phoneNumber)).toEqual(['+15550100', '+15550101', '+15550102']);
    expect(body[0]).toMatchObject({ pushName: 'Sandbox Phone', jid: '15550100@s.whatsapp.net' });
    expect(body[0]!.lid).toMatch(/^\d{15}@lid$/);
  });

  it('pairs: QR → scan → 515 → reconnect → open (fast) with history sync', async () => {
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile);
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    expect(qr).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#2@/);

    const started = Date.now();
    const scan = await api<{ jid: string; lid: string; deviceId: number }>(
      sandbox.url,
      'POST',
      '/accounts/+15550100/scan',
      {
        qr,
      },
    );
    expect(scan.status).toBe(200);
    expect(scan.body.jid).toBe(`15550100:${scan.body.deviceId}@s.whatsapp.net`);
    expect(scan.body.lid).toMatch(new RegExp(`^\\d{15}:${scan.body.deviceId}@lid$`));
    expect(await pairing.closed).toBe(515);
    expect(pairing.sock.authState.creds.me?.id).toBe(scan.body.jid);

    client = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile);
    await client.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
    const scanToOpenMs = Date.now() - started;
    console.log(`scan → open: ${scanToOpenMs} ms`);
    expect(scanToOpenMs).toBeLessThan(2_000);
    expect(client.sock.authState.creds.me?.lid).toBe(scan.body.lid);

    const history = await client.waitFor('messaging-history.set', (h) => h.chats.length > 0, 5_000);
    const chatIds = history.chats.map((c) => c.id).sort();
    // the two contacts and the seeded group "Sandbox Team" (9 direct messages, 4 in the group)
    expect(chatIds).toEqual([expect.stringMatching(/^120363\d{12}@g\.us$/), '15550101@s.whatsapp.net', '15550102@s.whatsapp.net']);
    expect(history.chats.find((c) => c.id?.endsWith('@g.us'))?.name).toBe('Sandbox Team');
    expect(history.messages).toHaveLength(13);
    const alice = history.contacts.find((c) => c.id === '15550101@s.whatsapp.net');
    expect(alice?.name).toBe('Alice Sandbox');
    const texts = history.messages.map((m) => m.message?.conversation);
    expect(texts).toContain('Can you bring the charger?');
    const fromMe = history.messages.find((m) => m.message?.conversation === 'Perfect, see you there.');
    expect(fromMe?.key.fromMe).toBe(true);
    const bob = history.chats.find((c) => c.id === '15550102@s.whatsapp.net');
    expect(bob?.unreadCount).toBe(1);
    // phoneNumberToLidMappings were stored, so the client needs no LID lookups for the contacts
    const bobLid = await client.sock.signalRepository.lidMapping.getLIDForPN('15550102@s.whatsapp.net');
    expect(bobLid).toMatch(/^\d{15}@lid$/);
    console.log(`scan → history: ${Date.now() - started} ms`);

    // the phone's push name arrived with the history message
    await client.waitFor('creds.update', () => client!.sock.authState.creds.me?.name === 'Sandbox Phone');
    expect(noTimeouts(client)).toEqual([]);
  });

  it('delivers contact → client texts as notify upserts with pushName (pkmsg then msg)', async () => {
    const c = client!;
    const ids: string[] = [];
    for (const text of ['Hello from Alice 👋', 'Second message from Alice']) {
      const sent = await api<{ id: string }>(sandbox.url, 'POST', '/accounts/15550101/messages', {
        to: '+15550100',
        text,
      });
      expect(sent.status).toBe(201);
      ids.push(sent.body.id);
      const upsert = await c.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === sent.body.id));
      expect(upsert.type).toBe('notify');
      const msg = upsert.messages.find((m) => m.key.id === sent.body.id)!;
      expect(msg.message?.conversation).toBe(text);
      expect(msg.pushName).toBe('Alice Sandbox');
      expect(msg.key.fromMe).toBe(false);
      expect(msg.key.remoteJid).toBe('15550101@s.whatsapp.net');
    }
    // the phone sending to a contact shows up on its own companion as fromMe
    const own = await api<{ id: string }>(sandbox.url, 'POST', '/accounts/15550100/messages', {
      to: '+15550102',
      text: 'Sent from the phone',
    });
    expect(own.status).toBe(201);
    const ownUpsert = await c.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === own.body.id));
    const ownMsg = ownUpsert.messages.find((m) => m.key.id === own.body.id)!;
    expect(ownMsg.key.fromMe).toBe(true);
    expect(ownMsg.key.remoteJid).toBe('15550102@s.whatsapp.net');
    expect(ownMsg.message?.conversation).toBe('Sent from the phone');
    expect(noTimeouts(c)).toEqual([]);
  });

  it('delivers client → contact texts decrypted to the contact phone, with a delivery receipt', async () => {
    const c = client!;
    for (const [to, pn, text] of [
      ['15550101@s.whatsapp.net', '+15550101', 'Hi Alice, from Baileys'],
      ['15550101@s.whatsapp.net', '+15550101', 'And a second one'],
      ['15550102@s.whatsapp.net', '+15550102', 'Hello Bob'],
    ] as const) {
      const sent = await c.sock.sendMessage(to, { text });
      const id = sent!.key.id!;
      const got = await pollMessages(sandbox.url, pn, (m) => m.id === id);
      expect(got).toMatchObject({ from: '+15550100', to: pn, text });
      // Baileys buffers events: a receipt arriving within ~100 ms of the send is merged into the own
      // message's `append` upsert (status 3) instead of a separate `messages.update`
      const delivered = await Promise.race([
        c
          .waitFor('messages.update', (us) => us.some((u) => u.key.id === id && u.update.status === 3))
          .then((us) => us.find((u) => u.key.id === id)!.key),
        c
          .waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === id && m.status === 3))
          .then((u) => u.messages.find((m) => m.key.id === id)!.key),
      ]);
      expect(delivered.remoteJid).toBe(to);
    }
    // a number that is not a sandbox account: the send completes and nothing breaks
    const stray = await c.sock.sendMessage('19998887777@s.whatsapp.net', { text: 'anyone there?' });
    expect(stray?.key.id).toBeTruthy();
    const ping = await api(sandbox.url, 'GET', '/');
    expect(ping.status).toBe(200);
    expect(noTimeouts(c)).toEqual([]);
  });

  it('rejects a bogus or stale QR with 400', async () => {
    const bogus = await api<{ message: string; statusCode: number; error: string }>(
      sandbox.url,
      'POST',
      '/accounts/15550100/scan',
      { qr: 'https://wa.me/settings/linked_devices#2@nope,AAAA,BBBB,CCCC,1' },
    );
    expect(bogus.status).toBe(400);
    expect(bogus.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    const key = Buffer.alloc(32, 1).toString('base64');
    const unknown = await api(sandbox.url, 'POST', '/accounts/15550100/scan', {
      qr: `https://wa.me/settings/linked_devices#2@unknownref,${key},${key},${key},1`,
    });
    expect(unknown.status).toBe(400);
  });

  it('after sandbox + client restart, logs in without QR and delivers what was sent meanwhile', async () => {
    await client!.end();
    const away = await api<{ id: string }>(sandbox.url, 'POST', '/accounts/+15550102/messages', {
      to: '15550100',
      text: 'Sent while you were away',
    });
    expect(away.status).toBe(201);
    const rootKey = sandbox.rootPublicKey;
    await sandbox.close();

    sandbox = await startSandbox({ dataDir, logger: logs.logger });
    expect(sandbox.rootPublicKey.equals(rootKey)).toBe(true);
    const started = Date.now();
    client = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile);
    await client.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
    console.log(`restart → open: ${Date.now() - started} ms`);
    expect(client.events.some((e) => e.name === 'connection.update' && 'qr' in e.data && !!e.data.qr)).toBe(false);

    const upsert = await client.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === away.body.id));
    expect(upsert.type).toBe('append');
    const msg = upsert.messages.find((m) => m.key.id === away.body.id)!;
    expect(msg.message?.conversation).toBe('Sent while you were away');
    expect(msg.pushName).toBe('Bob Sandbox');

    // sessions survived the restart in both directions
    const sent = await client.sock.sendMessage('15550102@s.whatsapp.net', { text: 'Back online' });
    await pollMessages(sandbox.url, '+15550102', (m) => m.id === sent!.key.id);
    const live = await api<{ id: string }>(sandbox.url, 'POST', '/accounts/15550102/messages', {
      to: '15550100',
      text: 'welcome back',
    });
    const liveUpsert = await client.waitFor('messages.upsert', (u) =>
      u.messages.some((m) => m.key.id === live.body.id),
    );
    expect(liveUpsert.type).toBe('notify');
    expect(noTimeouts(client)).toEqual([]);
  });

  it('fans out between two linked clients of different accounts, and unlinks on logout', async () => {
    const phone = client!;
    const pairing = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, join(root, 'alice.json'));
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    const scan = await api<{ deviceId: number }>(sandbox.url, 'POST', '/accounts/15550101/scan', { qr });
    expect(scan.status).toBe(200);
    expect(await pairing.closed).toBe(515);
    const alice = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, join(root, 'alice.json'));
    try {
      await alice.waitFor('connection.update', (u) => u.connection === 'open', 5_000);
      const history = await alice.waitFor('messaging-history.set', (h) => h.chats.length > 0, 5_000);
      expect(history.chats.map((c) => c.id)).toContain('15550100@s.whatsapp.net');
      const historyTexts = history.messages.map((m) => m.message?.conversation ?? m.message?.extendedTextMessage?.text);
      expect(historyTexts).toContain('Hi Alice, from Baileys'); // sent by the other linked client earlier

      // client (Sandbox Phone) → Alice: her phone and her linked client both get it
      const sent = await phone.sock.sendMessage('15550101@s.whatsapp.net', { text: 'Hi Alice, both devices' });
      const id = sent!.key.id!;
      await pollMessages(sandbox.url, '+15550101', (m) => m.id === id);
      const relayed = await alice.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === id));
      const msg = relayed.messages.find((m) => m.key.id === id)!;
      expect(msg.message?.extendedTextMessage?.text ?? msg.message?.conversation).toBe('Hi Alice, both devices');
      expect(msg.key.fromMe).toBe(false);
      expect(msg.pushName).toBe('Sandbox Phone');

      // Alice's linked client → Sandbox Phone: the other client gets it live
      const back = await alice.sock.sendMessage('15550100@s.whatsapp.net', { text: 'Got it on my laptop' });
      const backId = back!.key.id!;
      await pollMessages(sandbox.url, '+15550100', (m) => m.id === backId);
      const incoming = await phone.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === backId));
      const incomingMsg = incoming.messages.find((m) => m.key.id === backId)?.message;
      expect(incomingMsg?.extendedTextMessage?.text ?? incomingMsg?.conversation).toBe('Got it on my laptop');

      const devices = await api<Array<{ deviceId: number; online: boolean }>>(
        sandbox.url,
        'GET',
        '/accounts/15550101/devices',
      );
      expect(devices.body).toEqual([expect.objectContaining({ deviceId: scan.body.deviceId, online: true })]);
      expect(noTimeouts(alice)).toEqual([]);

      await alice.sock.logout();
      expect(await alice.closed).toBe(401);
      const after = await api<unknown[]>(sandbox.url, 'GET', '/accounts/15550101/devices');
      expect(after.body).toEqual([]);
    } finally {
      await alice.end();
    }
    // the unlinked client is refused (401) instead of logged in
    const stale = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, join(root, 'alice.json'));
    expect(await stale.closed).toBe(401);
  });

  it('confines malformed input to the offending connection', async () => {
    const expectClosed = (payload: Buffer) =>
      new Promise<void>((resolve, reject) => {
        const ws = new WebSocket(sandbox.wsUrl);
        const timer = setTimeout(() => reject(new Error('server did not close the connection')), 3_000);
        ws.on('open', () => ws.send(payload));
        ws.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
        ws.on('error', () => undefined);
      });
    await expectClosed(Buffer.from('definitely not WhatsApp'));
    // valid intro, then a frame that is not a HandshakeMessage
    await expectClosed(
      Buffer.concat([Buffer.from([0x57, 0x41, 6, 3]), Buffer.from([0, 0, 4]), Buffer.from([0xff, 0xff, 0xff, 0xff])]),
    );
    // valid intro + ClientHello with a short key
    await expectClosed(Buffer.concat([Buffer.from([0x57, 0x41, 6, 3, 0, 0, 5, 0x12, 0x03, 0x0a, 0x01, 0x01])]));

    // the linked client is unaffected
    const sent = await api<{ id: string }>(sandbox.url, 'POST', '/accounts/15550102/messages', {
      to: '15550100',
      text: 'still here',
    });
    await client!.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === sent.body.id));
  });

  it('unlinks a companion from the phone (admin DELETE) and closes it with 401', async () => {
    const devices = await api<Array<{ deviceId: number; online: boolean }>>(
      sandbox.url,
      'GET',
      '/accounts/15550100/devices',
    );
    const online = devices.body.find((d) => d.online);
    expect(online).toBeDefined();
    const res = await fetch(`${sandbox.url}/accounts/15550100/devices/${online!.deviceId}`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await client!.closed).toBe(401);
    const again = await api(sandbox.url, 'DELETE', `/accounts/15550100/devices/${online!.deviceId}`);
    expect(again).toEqual({ status: 404, body: { message: 'Device not found', statusCode: 404, error: 'Not Found' } });
    client = undefined;
  });

  it('logged no errors', () => {
    expect(logs.errors()).toEqual([]);
  });
});

describe('sandbox admin API validation', () => {
  let root: string;
  let sandbox: Sandbox;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-api-'));
    sandbox = await startSandbox({ dataDir: root, logger: pino({ level: 'error' }) });
    await sandbox.seedDemo();
  });

  afterAll(async () => {
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('serves health info with the root key', async () => {
    const { status, body } = await api<{ rootPublicKey: string; wsUrl: string }>(sandbox.url, 'GET', '/');
    expect(status).toBe(200);
    expect(body.rootPublicKey).toBe(sandbox.rootPublicKey.toString('hex'));
    expect(body.wsUrl).toBe(sandbox.wsUrl);
  });

  it('creates accounts, normalising phone numbers, and refuses duplicates', async () => {
    const created = await api(sandbox.url, 'POST', '/accounts', { phoneNumber: '+1 555 0199', pushName: 'Carol' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ phoneNumber: '+15550199', jid: '15550199@s.whatsapp.net', pushName: 'Carol' });
    const dup = await api(sandbox.url, 'POST', '/accounts', { phoneNumber: '15550199', pushName: 'Carol again' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ message: 'Account already exists', statusCode: 409, error: 'Conflict' });
  });

  it('names the offending field in 400s', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/accounts', {}, 'phoneNumber'],
      ['POST', '/accounts', { phoneNumber: 'abc', pushName: 'x' }, 'phoneNumber'],
      ['POST', '/accounts', { phoneNumber: '+15550198' }, 'pushName'],
      ['POST', '/accounts/15550100/messages', { to: '+15550101' }, 'text'],
      ['POST', '/accounts/15550100/messages', { text: 'hi' }, 'to'],
      ['POST', '/accounts/15550100/scan', {}, 'qr'],
      ['POST', '/accounts/15550100/scan', { qr: 'not a qr' }, 'qr'],
      ['POST', '/accounts', '{not json', 'JSON'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await api<{ message: string; statusCode: number; error: string }>(sandbox.url, method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.statusCode).toBe(400);
      expect(res.body.error).toBe('Bad Request');
      expect(res.body.message).toContain(field);
    }
  });

  it('answers 404 Account not found for unknown accounts', async () => {
    const cases: Array<[string, string, unknown]> = [
      ['GET', '/accounts/+15559999/messages', undefined],
      ['POST', '/accounts/+15559999/messages', { to: '+15550100', text: 'x' }],
      ['POST', '/accounts/15550100/messages', { to: '+15559999', text: 'x' }],
      ['POST', '/accounts/15559999/scan', { qr: 'x' }],
    ];
    for (const [method, path, body] of cases) {
      const res = await api(sandbox.url, method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ message: 'Account not found', statusCode: 404, error: 'Not Found' });
    }
  });

  it('records phone-to-phone messages as received, oldest first, with URL-encoded numbers', async () => {
    const sent = await api<{ id: string }>(
      sandbox.url,
      'POST',
      `/accounts/${encodeURIComponent('+1 555 0101')}/messages`,
      {
        to: '+1 555 0102',
        text: 'Hi Bob, Alice here',
      },
    );
    expect(sent.status).toBe(201);
    const got = await api<ReceivedMessage[]>(
      sandbox.url,
      'GET',
      `/accounts/${encodeURIComponent('+1 555 0102')}/messages`,
    );
    expect(got.status).toBe(200);
    const last = got.body[got.body.length - 1]!;
    expect(last).toMatchObject({ id: sent.body.id, from: '+15550101', to: '+15550102', text: 'Hi Bob, Alice here' });
    const ts = got.body.map((m) => m.timestamp);
    expect([...ts].sort((a, b) => a - b)).toEqual(ts);
    const seeded = await api<ReceivedMessage[]>(sandbox.url, 'GET', '/accounts/15550100/messages');
    expect(seeded.body.map((m) => m.text)).toContain('Can you bring the charger?');
  });
});

describe('sandbox port across restarts (reusePort)', () => {
  let root: string;
  const logger = pino({ level: 'silent' });
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-port-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const portOf = (s: Sandbox) => Number(new URL(s.url).port);

  it('keeps its port across restarts of one data dir; a taken port falls back to a free one, which is kept', async () => {
    const first = await startSandbox({ dataDir: root, logger, reusePort: true });
    const port = portOf(first);
    expect(first.portTaken).toBeUndefined();
    await first.close();

    const again = await startSandbox({ dataDir: root, logger, reusePort: true });
    expect(again.url).toBe(first.url);
    expect(again.wsUrl).toBe(first.wsUrl);
    expect(again.portTaken).toBeUndefined();
    await again.close();

    // Another program holds the port meanwhile: a free port, said so.
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    let moved: Sandbox | undefined;
    try {
      moved = await startSandbox({ dataDir: root, logger, reusePort: true });
      expect(moved.portTaken).toBe(port);
      expect(portOf(moved)).not.toBe(port);
      expect((await api(moved.url, 'GET', '/')).status).toBe(200);
    } finally {
      await moved?.close();
      await new Promise((resolve) => squatter.close(resolve));
    }
    // The new port is the one kept from then on.
    const after = await startSandbox({ dataDir: root, logger, reusePort: true });
    expect(after.url).toBe(moved!.url);
    expect(after.portTaken).toBeUndefined();
    await after.close();
  });
});
