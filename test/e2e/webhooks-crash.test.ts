/**
 * Crash safety of the webhook outbox, Jepsen style. The sandbox runs as its own process so contacts keep sending
 * while the service is down; `serve --sandbox --wa-url` is SIGKILLed at random moments under a steady stream of
 * messages and restarted each time. Afterwards a checker reads the whole event log and the consumer's history:
 * every logged event reached the webhook at least once (by `webhook-id`), duplicates carry the same id and the
 * same body, every signature verified, and every message the sandbox accepted is in the log.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startSandboxProcess, startServe, type SandboxProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';
import { startConsumer, type Consumer } from '../integration/webhooks-consumer.ts';
import { jsonCall } from '../helpers/http.ts';

const KILLS = 3;

describe('webhook delivery survives kill -9', () => {
  let dir: string;
  let sandbox: SandboxProcess;
  let sandboxUrl: string;
  let consumer: Consumer;
  let token: string;
  const services: ServiceProcess[] = [];

  const serve = async () => {
    const s = await startServe([
      '--sandbox',
      '--wa-url',
      `${sandboxUrl.replace(/^http/, 'ws')}/ws/chat`,
      '--allow-lan-webhooks',
      '--webhook-retry-delays',
      '0,50,100,200,400',
      '--port',
      '0',
      '--data-dir',
      path.join(dir, 'service'),
    ]);
    services.push(s);
    return s;
  };
  const call = (base: string, method: string, route: string, body?: unknown, auth = true) =>
    jsonCall(base, method, route, body, auth ? token : undefined);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-wh-crash-'));
    consumer = await startConsumer();
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox'));
    sandboxUrl = sandbox.url;
    token = (await runCli(['token', 'create', '--user', 'crash', '--data-dir', path.join(dir, 'service')])).stdout.trim();
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await sandbox?.stop('SIGKILL');
    await consumer?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`delivers every logged event at least once across ${KILLS} SIGKILLs`, { timeout: 90_000 }, async () => {
    let service = await serve();
    const c = await call(service.apiUrl, 'POST', '/connections', {});
    const userId = c.body.userId as string;
    const hook = await call(service.apiUrl, 'POST', `/connections/${c.body.id}/webhooks`, { url: consumer.url('/crash'), events: ['*'] });
    consumer.secret('/crash', hook.body.signingSecret);
    // Events logged before the webhook existed have no outbox rows; everything after must be delivered.
    const startSeq = (await call(service.apiUrl, 'GET', '/events?limit=1')).body.lastSeq as number;
    const qr = await waitFor('QR', async () => {
      const r = await call(service.apiUrl, 'GET', `/connections/${c.body.id}/qr?format=text`);
      return r.status === 200 ? (r.body.value as string) : undefined;
    });
    expect((await call(sandboxUrl, 'POST', '/accounts/%2B15550100/scan', { qr }, false)).status).toBe(200);
    await waitFor('online', async () => ((await call(service.apiUrl, 'GET', `/connections/${c.body.id}`)).body.status === 'online' ? true : undefined));

    // A steady stream of contact messages (history: texts the sandbox acknowledged with 201).
    const accepted: string[] = [];
    let sending = true;
    const sender = (async () => {
      for (let i = 0; sending; i++) {
        const text = `crash-${i}`;
        const r = await call(sandboxUrl, 'POST', '/accounts/%2B15550101/messages', { to: '+15550100', text }, false).catch(() => undefined);
        if (r?.status === 201) accepted.push(text);
        await new Promise((res) => setTimeout(res, 20));
      }
    })();

    for (let k = 0; k < KILLS; k++) {
      await new Promise((res) => setTimeout(res, 600 + Math.random() * 1200));
      await service.stop('SIGKILL');
      await new Promise((res) => setTimeout(res, Math.random() * 300));
      const t = Date.now();
      service = await serve();
      console.log(`[crash] restart ${k + 1}: up in ${Date.now() - t} ms; ${accepted.length} sent, ${consumer.on('/crash').length} received`);
    }
    await new Promise((res) => setTimeout(res, 1000));
    sending = false;
    await sender;

    // Checker.
    const base = service.apiUrl;
    const readLog = async () => {
      const all: Array<{ seq: number; event: string; connectionId: string; payload: Record<string, unknown> }> = [];
      for (let after = 0; ; ) {
        const page = (await call(base, 'GET', `/events?after=${after}&limit=1000`)).body;
        all.push(...page.events);
        if (page.events.length < 1000) return all;
        after = page.nextAfter;
      }
    };
    const idOf = (seq: number) => `msg_${userId.replace(/-/g, '')}_${seq}`;
    let diagnosis = '';
    let lostByEngine: string[] = [];
    await waitFor(
      'every accepted message in the log and every event delivered',
      async () => {
        const log = await readLog();
        const bodies = new Set(log.filter((e) => e.event === 'message').map((e) => e.payload.body));
        const missing = accepted.filter((t) => !bodies.has(t));
        const seen = new Set(consumer.on('/crash').map((r) => r.id));
        const undelivered = log.filter((e) => e.seq > startSeq && e.connectionId === c.body.id && !seen.has(idOf(e.seq)));
        lostByEngine = missing;
        diagnosis = `undelivered events: ${JSON.stringify(undelivered.slice(0, 5))} (${undelivered.length})`;
        // Every message the sandbox accepted (201) must reach the log: the engine commits before it receipts.
        diagnosis += `; accepted but not logged: ${missing.slice(0, 10).join(', ')} (${missing.length})`;
        // A message stuck as an undecryptable placeholder is logged as `message.waiting` and never as `message`.
        const messageIds = new Set(log.filter((e) => e.event === 'message').map((e) => e.payload.id));
        const stillWaiting = log.filter((e) => e.event === 'message.waiting' && !messageIds.has(e.payload.id)).map((e) => e.payload.id);
        diagnosis += `; still waiting to decrypt: ${stillWaiting.slice(0, 5).join(', ')} (${stillWaiting.length})`;
        return undelivered.length === 0 && missing.length === 0 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    ).catch(async (err) => {
      // What the two sides logged about it: a delivered stanza the client refused (487: "key used already"), a
      // message Baileys could not handle.
      const notable = (text: string) => text.split('\n').filter((l) => /rejected a delivered|error in handling|decrypt|failed to store session events/i.test(l)).slice(0, 5);
      const logs = [...notable(sandbox.stderr()), ...services.flatMap((s) => notable(s.stderr()))];
      // Stored without its `message` event (a history chunk, a failed event append), or not stored at all.
      const stored = new Map<string, unknown>();
      for (let before: string | null = null, pages = 0; pages < 20; pages++) {
        const route: string = `/connections/${c.body.id}/chats/15550101@s.whatsapp.net/messages?limit=500${before ? `&before=${encodeURIComponent(before)}` : ''}`;
        const page = (await call(base, 'GET', route)).body as { messages?: Array<Record<string, unknown>>; nextBefore?: string | null };
        for (const m of page.messages ?? []) if (typeof m.text === 'string') stored.set(m.text, { id: m.id, ack: m.ack, timestamp: m.timestamp });
        if (!page.nextBefore) break;
        before = page.nextBefore;
      }
      // SWITCHBOARD_TEST_KEEP_LOGS=<path prefix>: both sides' whole logs of a failed run, for the hunt (run with
      // SWITCHBOARD_LOG_LEVEL=info or debug).
      const keep = process.env.SWITCHBOARD_TEST_KEEP_LOGS;
      if (keep) fs.writeFileSync(`${keep}-${process.pid}.txt`, [sandbox.stderr(), ...services.map((s) => s.stderr())].join('\n=====\n'));
      const storedMissing = lostByEngine.map((t) => `${t}: ${stored.has(t) ? `stored ${JSON.stringify(stored.get(t))}` : 'not stored'}`);
      throw new Error(
        `${String(err)}: ${diagnosis}; in the messages table: ${storedMissing.slice(0, 5).join(', ')}; logged: ${logs.join(' | ').slice(0, 3000) || 'nothing notable'}`,
      );
    });

    const log = await readLog();
    const received = consumer.on('/crash');
    expect(received.every((r) => r.error === undefined && r.verified)).toBe(true);
    const byId = new Map<string, string>();
    for (const r of received) {
      const prev = byId.get(r.id);
      if (prev !== undefined) expect(r.body).toBe(prev); // a duplicate is the same event under the same webhook-id
      byId.set(r.id, r.body);
    }
    const logIds = new Set(log.map((e) => idOf(e.seq)));
    expect(lostByEngine).toEqual([]); // no message the sandbox accepted was lost
    expect([...byId.keys()].every((id) => logIds.has(id))).toBe(true); // nothing invented
    for (const e of log.filter((x) => x.seq > startSeq)) {
      const body = JSON.parse(byId.get(idOf(e.seq))!) as { event: string; payload: unknown };
      expect(body.event).toBe(e.event);
      expect(body.payload).toEqual(e.payload);
    }
    const duplicates = received.length - byId.size;
    console.log(`[measure] crash test: ${KILLS} kills, ${accepted.length} messages sent, ${log.length} events, ${received.length} deliveries (${duplicates} duplicates)`);
    expect(accepted.length).toBeGreaterThan(50);
  });
});
