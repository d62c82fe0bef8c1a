/**
 * Like WhatsApp's server, the sandbox stores the sender's ciphertext and redelivers those bytes: a phone's message
 * (1:1, or the sender-key distribution of a group message) is encrypted for each companion once, at send, and a
 * stanza delivered but not acknowledged arrives again unchanged — also after a sandbox restart, and for a row an
 * older sandbox queued without ciphertext (sealed at its first delivery, then kept). A retry receipt is answered
 * with the message encrypted again (a group message with a new skmsg). Delivery is paced, so a contact's live
 * messages cannot overtake its queued ones in the client (which handles offline stanzas in a queue of their own)
 * by more than a Signal chain may skip. Real parts: the unmodified Baileys rc14 client, the sandbox on 127.0.0.1
 * with a temp data dir, its SQLite file read directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { getBinaryNodeChildren, type BaileysEventMap, type BinaryNode } from '@whiskeysockets/baileys';
import { startSandbox, type Sandbox } from '../../service/sandbox/index.ts';
import { connectClient, muteLibsignalNoise, poll, type TestClient } from './baileys-client.ts';

async function api<T = unknown>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** `poll` with the description first, and a longer default (redelivery waits on reconnects). */
const pollFor = <T>(what: string, get: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000) => poll(get, what, timeoutMs);

muteLibsignalNoise();

const PHONE = '15550100';
const ALICE = '15550101';
const ALICE_JID = `${ALICE}@s.whatsapp.net`;

interface EncPart {
  type: string;
  bytes: Buffer;
  /** The `count` attribute (set on a retry's re-encryption). */
  count?: string;
}

/** The `<enc>` parts of every `<message>` stanza a client is sent: message id → one entry per delivery. */
function captureEncs(client: TestClient): Map<string, EncPart[][]> {
  const seen = new Map<string, EncPart[][]>();
  client.sock.ws.on('CB:message', (node: BinaryNode) => {
    const encs = getBinaryNodeChildren(node, 'enc').filter((e) => e.content instanceof Uint8Array);
    if (!node.attrs.id || !encs.length) return;
    const parts = encs.map((e) => ({
      type: e.attrs.type!,
      bytes: Buffer.from(e.content as Uint8Array),
      ...(e.attrs.count ? { count: e.attrs.count } : {}),
    }));
    seen.set(node.attrs.id, [...(seen.get(node.attrs.id) ?? []), parts]);
  });
  return seen;
}

describe('sandbox: the sender ciphertext is stored once and redelivered as is', () => {
  let root: string;
  let dataDir: string;
  let authFile: string;
  let sandbox: Sandbox;
  const clients: TestClient[] = [];
  const logger = pino({ level: 'error' });
  /** The group Alice creates in the first test (the phone is a member). */
  let groupJid = '';
  const outbox = (ids: string[]) => {
    const db = new Database(join(dataDir, 'sandbox.db'), { readonly: true, fileMustExist: true });
    try {
      return db
        .prepare(
          `SELECT msg_id, enc_type, ciphertext, sk_ciphertext, attrs FROM outbox WHERE pn = ? AND msg_id IN (${ids.map(() => '?').join(', ')})`,
        )
        .all(PHONE, ...ids) as Array<{
        msg_id: string;
        enc_type: string | null;
        ciphertext: Buffer | null;
        sk_ciphertext: Buffer | null;
        attrs: string;
      }>;
    } finally {
      db.close();
    }
  };
  const connect = async (extra: Parameters<typeof connectClient>[3] = {}) => {
    const c = await connectClient(sandbox.wsUrl, sandbox.rootPublicKey, authFile, extra);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sandbox-redelivery-'));
    dataDir = join(root, 'data');
    authFile = join(root, 'auth.json');
    sandbox = await startSandbox({ dataDir, logger });
    await sandbox.seedDemo();
    const pairing = await connect();
    const { qr } = await pairing.waitFor('connection.update', (u) => !!u.qr);
    expect((await api(sandbox.url, 'POST', `/accounts/${PHONE}/scan`, { qr })).status).toBe(200);
    expect(await pairing.closed).toBe(515);
    const client = await connect();
    await client.waitFor('messaging-history.set', (h) => h.chats.length > 0, 15_000);
    await client.end();
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await sandbox?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it(
    'seals 1:1 and group messages at send and redelivers the same bytes, across a sandbox restart',
    { timeout: 60_000 },
    async () => {
      // Sent while the client is away: Alice's texts, and her first message in a new group (with her sender key).
      const texts = ['sealed one', 'sealed two', 'sealed three'];
      const ids: string[] = [];
      for (const text of texts) {
        const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
          to: `+${PHONE}`,
          text,
        });
        expect(sent.status).toBe(201);
        ids.push(sent.body.id);
      }
      const group = await api<{ id: string }>(sandbox.url, 'POST', '/groups', {
        creator: `+${ALICE}`,
        subject: 'Sealed',
        participants: [`+${PHONE}`],
      });
      expect(group.status).toBe(201);
      groupJid = group.body.id;
      const inGroup = await api<{ id: string }>(
        sandbox.url,
        'POST',
        `/groups/${encodeURIComponent(groupJid)}/messages`,
        { from: `+${ALICE}`, text: 'sealed for the group' },
      );
      expect(inGroup.status).toBe(201);
      const all = [...ids, inGroup.body.id];

      // Encrypted at send: every row already holds the phone's ciphertext (the group row: its SKDM and the skmsg).
      const atSend = new Map(outbox(all).map((r) => [r.msg_id, r]));
      expect([...atSend.keys()].sort()).toEqual([...all].sort());
      for (const r of atSend.values()) {
        expect(['pkmsg', 'msg']).toContain(r.enc_type);
        expect(r.ciphertext?.length).toBeGreaterThan(0);
      }
      expect(atSend.get(inGroup.body.id)!.sk_ciphertext?.length).toBeGreaterThan(0);

      // An older sandbox queued its rows without ciphertext: the last text becomes such a row, across a restart.
      await sandbox.close();
      const rw = new Database(join(dataDir, 'sandbox.db'));
      rw.prepare('UPDATE outbox SET enc_type = NULL, ciphertext = NULL WHERE pn = ? AND msg_id = ?').run(PHONE, ids[2]);
      rw.close();
      sandbox = await startSandbox({ dataDir, logger });

      // First delivery to a client that reads the stanzas but ignores these chats: it acknowledges them with
      // error 500, sends no receipt and decrypts nothing, so everything stays queued.
      const first = await connect({ shouldIgnoreJid: (jid: string) => jid === ALICE_JID || jid === groupJid });
      const firstSeen = captureEncs(first);
      await pollFor('the first delivery', () => (all.every((id) => firstSeen.has(id)) ? true : undefined));
      await first.end();
      for (const id of [...ids.slice(0, 2), inGroup.body.id]) {
        const r = atSend.get(id)!;
        const parts = firstSeen.get(id)![0]!;
        expect(parts[0]).toEqual({ type: r.enc_type, bytes: r.ciphertext }); // the bytes sealed at send
        if (id === inGroup.body.id) expect(parts[1]).toEqual({ type: 'skmsg', bytes: r.sk_ciphertext });
      }
      // The old-style row was sealed at its first delivery, and the ciphertext kept.
      const sealedLate = outbox([ids[2]!])[0]!;
      expect(firstSeen.get(ids[2]!)![0]![0]).toEqual({ type: sealedLate.enc_type, bytes: sealedLate.ciphertext });

      // Redelivery: the same bytes, which the client decrypts; its receipts then empty the queue.
      const second = await connect();
      const secondSeen = captureEncs(second);
      for (const [i, id] of all.entries()) {
        const upsert = await second.waitFor(
          'messages.upsert',
          (u) => u.messages.some((m) => m.key.id === id && !!m.message),
          15_000,
        );
        const m = upsert.messages.find((x) => x.key.id === id)!;
        expect(m.message?.conversation ?? m.message?.extendedTextMessage?.text).toBe(
          i < texts.length ? texts[i] : 'sealed for the group',
        );
      }
      for (const id of all) expect(secondSeen.get(id)).toEqual(firstSeen.get(id)); // one delivery each, the same bytes
      await pollFor('the queue emptied by the receipts', () => (outbox(all).length === 0 ? true : undefined));
      await second.end();
    },
  );

  it(
    'answers the retry of a message the client had already decrypted (a crash before its receipt) with a new encryption',
    { timeout: 60_000 },
    async () => {
      // Sent while the client is away; the rows as queued.
      const groupText = 'group: decrypted, not acknowledged';
      const direct = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
        to: `+${PHONE}`,
        text: 'decrypted, not acknowledged',
      });
      const inGroup = await api<{ id: string }>(
        sandbox.url,
        'POST',
        `/groups/${encodeURIComponent(groupJid)}/messages`,
        { from: `+${ALICE}`, text: groupText },
      );
      expect([direct.status, inGroup.status]).toEqual([201, 201]);
      const ids = [direct.body.id, inGroup.body.id];
      const queued = (() => {
        const db = new Database(join(dataDir, 'sandbox.db'), { readonly: true, fileMustExist: true });
        try {
          return db.prepare(`SELECT * FROM outbox WHERE pn = ? AND msg_id IN (?, ?)`).all(PHONE, ...ids) as Array<
            Record<string, unknown>
          >;
        } finally {
          db.close();
        }
      })();
      expect(queued).toHaveLength(2);
      // The client decrypts them (its Signal state moves past them) and acknowledges them.
      const reader = await connect();
      for (const id of ids)
        await reader.waitFor('messages.upsert', (u) => u.messages.some((m) => m.key.id === id && !!m.message), 15_000);
      await pollFor('the receipts', () => (outbox(ids).length === 0 ? true : undefined));
      await reader.end();
      // Back in the queue as they were, as if the receipts had been lost in a crash. The same bytes cannot be decrypted
      // again (their keys are used): the 1:1 message (a pkmsg, as every message of a session the phone opened and never
      // heard back on) is recognised as a duplicate and acknowledged with error 487, which drops it; the group message's
      // skmsg fails with an old counter, so the client asks for a retry, and the phone encrypts it again with its
      // current sender key (the old skmsg's iteration is used up).
      await sandbox.close();
      const rw = new Database(join(dataDir, 'sandbox.db'));
      const cols = Object.keys(queued[0]!).filter((c) => c !== 'seq');
      const insert = rw.prepare(
        `INSERT INTO outbox (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`,
      );
      for (const row of queued) insert.run(Object.fromEntries(cols.map((c) => [c, row[c]])));
      rw.close();
      sandbox = await startSandbox({ dataDir, logger });
      const again = await connect();
      const seen = captureEncs(again);
      const upsert = await again.waitFor(
        'messages.upsert',
        (u) => u.messages.some((m) => m.key.id === inGroup.body.id && !!m.message),
        20_000,
      );
      expect(upsert.messages.find((x) => x.key.id === inGroup.body.id)!.message?.conversation).toBe(groupText);
      const deliveries = seen.get(inGroup.body.id)!;
      expect(deliveries).toHaveLength(2); // the stored bytes, then the retry's
      expect(deliveries[1]!.map((p) => p.type)).toEqual([expect.stringMatching(/^(pkmsg|msg)$/), 'skmsg']);
      expect(deliveries[1]![0]!.count).toBe('1');
      expect(deliveries[0]!.map((p) => p.type)).toEqual(['skmsg']); // the device had the sender key already
      expect(deliveries[1]![1]!.bytes.equals(deliveries[0]![0]!.bytes)).toBe(false); // a new skmsg
      await pollFor('the queue emptied', () => (outbox(ids).length === 0 ? true : undefined));
      expect(seen.get(direct.body.id)).toHaveLength(1); // the duplicate, delivered once and dropped
      const upserts = again.events
        .filter((e) => e.name === 'messages.upsert')
        .map((e) => e.data as BaileysEventMap['messages.upsert']);
      expect(upserts.some((u) => u.messages.some((m) => m.key.id === direct.body.id && !!m.message))).toBe(false);
      await again.end();
    },
  );

  it(
    "delivers a contact's live messages behind its queued ones: none meets the chain over 2,000 messages ahead",
    { timeout: 120_000 },
    async () => {
      // While the client is away, Alice sends twice as many as libsignal lets a chain skip (2,000 messages).
      const BACKLOG = 4_000;
      const queuedIds = new Array<string>(BACKLOG);
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < BACKLOG) {
            const i = next++;
            const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
              to: `+${PHONE}`,
              text: `queued ${i}`,
            });
            expect(sent.status).toBe(201);
            queuedIds[i] = sent.body.id;
          }
        }),
      );
      // The client comes back; while the queue is being delivered, Alice goes on sending.
      const client = await connect();
      const done = new Set<string>();
      const stubs: string[] = [];
      client.sock.ev.on('messages.upsert', (u) => {
        for (const m of u.messages) {
          if (m.message) done.add(m.key.id!);
          else if (m.messageStubType === 2) stubs.push(m.key.id!); // CIPHERTEXT: could not decrypt
        }
      });
      const live = new Promise<string[]>((resolve) => {
        client.sock.ws.once('CB:message', () => {
          const sends = Array.from({ length: 5 }, (_, i) =>
            api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
              to: `+${PHONE}`,
              text: `live ${i}`,
            }),
          );
          void Promise.all(sends).then((r) => resolve(r.map((x) => x.body.id)));
        });
      });
      const liveIds = await live;
      const all = [...queuedIds, ...liveIds];
      await pollFor(
        `all ${all.length} decrypted (${done.size} so far)`,
        () => (all.every((id) => done.has(id)) ? true : undefined),
        90_000,
      );
      expect(stubs.filter((id) => all.includes(id))).toEqual([]);
      await client.end();
    },
  );

  it('answers a retry receipt with the message encrypted again, kept for redelivery', { timeout: 60_000 }, async () => {
    const client = await connect();
    await client.waitFor('connection.update', (u) => u.connection === 'open', 15_000);
    const seen = captureEncs(client);
    const sent = await api<{ id: string }>(sandbox.url, 'POST', `/accounts/${ALICE}/messages`, {
      to: `+${PHONE}`,
      text: 'after a retry',
      undecryptable: true,
    });
    expect(sent.status).toBe(201);
    const upsert = await client.waitFor(
      'messages.upsert',
      (u) => u.messages.some((m) => m.key.id === sent.body.id && !!m.message?.conversation),
      15_000,
    );
    expect(upsert.messages.find((m) => m.key.id === sent.body.id)!.message!.conversation).toBe('after a retry');
    // the garbled first delivery, then the message encrypted again, marked with the retry's count
    const deliveries = seen.get(sent.body.id)!;
    expect(deliveries).toHaveLength(2);
    expect(deliveries[1]![0]!.count).toBe('1');
    expect(deliveries[1]![0]!.bytes.equals(deliveries[0]![0]!.bytes)).toBe(false);
    await pollFor('the retried row delivered', () => (outbox([sent.body.id]).length === 0 ? true : undefined));
    await client.end();
  });
});
