/**
 * Sessions on worker threads (`serve --workers N`, issue 16): the real service in sandbox mode with a pool of two
 * session threads. Connections are spread over the threads, receive and send through the same API, and their
 * events reach the WebSocket stream gap-free. Fault: the thread running a connection dies in the middle of a burst
 * of incoming messages; the connection starts again on the pool, every message the sandbox accepted (201) ends up
 * stored exactly once, and the event stream stays gap-free and free of duplicates.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const SECOND = '+15550170';
const BURST = 120;

describe('sessions on worker threads', () => {
  let s: SandboxService;
  let first: string;
  let second: string;

  const threadOf = (connectionId: string) => s.service.sessionThreads!.threads().find((t) => t.connections.includes(connectionId));
  const status = async (id: string) => (await s.api('GET', `/connections/${id}`)).body.status as string;
  /** Texts of the connection's chat with Alice (newest first pages, read until `count` or the end). */
  const storedTexts = async (id: string) => {
    const texts: string[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await s.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=200${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      expect(page.status).toBe(200);
      for (const m of page.body.messages as Array<{ text: string | null }>) if (m.text) texts.push(m.text);
      before = page.body.nextBefore ?? undefined;
      if (!before || page.body.messages.length === 0) return texts;
    }
  };

  beforeAll(async () => {
    s = await startSandboxService({ config: { workers: 2 } });
    expect((await s.sandbox('POST', '/accounts', { phoneNumber: SECOND, pushName: 'Second' })).status).toBe(201);
    first = await s.pair(PHONE);
    second = await s.pair(SECOND);
  }, 120_000);

  afterAll(async () => s?.close());

  it('spreads connections over the threads and serves them through the same API', { timeout: 60_000 }, async () => {
    const threads = s.service.sessionThreads!.threads();
    expect(threads).toHaveLength(2);
    expect(threadOf(first)).toBeDefined();
    expect(threadOf(second)).toBeDefined();
    expect(threadOf(first)!.index).not.toBe(threadOf(second)!.index);

    // Incoming on each connection: stored and streamed.
    for (const to of [PHONE, SECOND]) {
      expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to, text: `hello ${to}` })).status).toBe(201);
    }
    await s.frame('first incoming', (f) => f.connectionId === first && JSON.stringify(f.payload).includes(`hello ${PHONE}`));
    await s.frame('second incoming', (f) => f.connectionId === second && JSON.stringify(f.payload).includes(`hello ${SECOND}`));

    // Outgoing: answered with the stored message, received by the contact.
    const sent = await s.api('POST', `/connections/${second}/send`, { chatId: ALICE, text: 'from a thread', skipPresence: true });
    expect(sent.status).toBe(201);
    expect(sent.body.text).toBe('from a thread');
    await waitFor('at Alice', async () => {
      const msgs = (await s.sandbox('GET', `/accounts/${enc(ALICE)}/messages`)).body as Array<{ text: string }>;
      return msgs.some((m) => m.text === 'from a thread') ? true : undefined;
    });
    // Errors keep their status codes across the thread boundary.
    const unknown = await s.api('POST', `/connections/${second}/messages/nope/react`, { chatId: ALICE, emoji: '👍' });
    expect([400, 404]).toContain(unknown.status);
    const profile = await s.api('GET', `/connections/${second}`);
    expect(profile.body.status).toBe('online');
  });

  it('a webhook added on the main thread gets the events of a session thread that had none', { timeout: 60_000 }, async () => {
    // The thread has written events for this connection already (its webhook targets were looked up: none).
    const bodies: string[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const hook = await s.api('POST', `/connections/${second}/webhooks`, { url, events: ['message'] });
      expect(hook.status).toBe(201);
      expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: SECOND, text: 'after the webhook' })).status).toBe(201);
      await waitFor('the webhook delivery', async () => (bodies.some((b) => b.includes('after the webhook')) ? true : undefined), { timeoutMs: 30_000 });
      expect((await s.api('DELETE', `/webhooks/${hook.body.id}`)).status).toBe(200);
      // After the delete the thread writes no delivery for it (it would break the batch's foreign key).
      expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: SECOND, text: 'after the delete' })).status).toBe(201);
      await s.frame('message after the delete', (f) => f.event === 'message' && (f.payload as { body?: string }).body === 'after the delete');
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('a thread that dies: its connection restarts on the pool and nothing accepted is lost', { timeout: 120_000 }, async () => {
    const run = Date.now().toString(36);
    const texts = Array.from({ length: BURST }, (_, i) => `burst ${run} #${i}`);
    const accepted: string[] = [];
    const victim = threadOf(first)!;
    let killed = false;
    // Eight sends in flight at a time, so the thread is ingesting when it dies.
    let next = 0;
    const sender = async () => {
      while (next < texts.length) {
        const i = next++;
        const r = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: texts[i] });
        if (r.status === 201) accepted.push(texts[i]!);
        if (i === BURST / 3 && !killed) {
          killed = true;
          await s.service.sessionThreads!.kill(victim.index);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    expect(killed).toBe(true);
    expect(accepted.length).toBe(BURST);

    await waitFor('back online on the pool', async () => ((await status(first)) === 'online' && threadOf(first) ? true : undefined), {
      timeoutMs: 60_000,
    });
    // The thread was replaced, and the other connection kept its thread.
    expect(s.service.sessionThreads!.threads().every((t) => t.threadId !== victim.threadId)).toBe(true);
    expect(await status(second)).toBe('online');

    let missing: string[] = [];
    const stored = await waitFor(
      'every accepted message stored',
      async () => {
        const t = await storedTexts(first);
        missing = accepted.filter((x) => !t.includes(x));
        return missing.length === 0 ? t : undefined;
      },
      { timeoutMs: 60_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message} (missing: ${missing.join(', ')})`);
    });
    // Exactly once each.
    for (const text of accepted) expect(stored.filter((t) => t === text)).toHaveLength(1);

    // The stream: strictly consecutive seqs (the helper's socket takes every event of the user).
    const seqs = s.frames.map((f) => f.seq);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1]! + 1);
    // And it announced every burst message (a commit is visible to readers before its fsync, and its events are
    // published after it: the last frames may still be on their way when the rows are read).
    const streamedAll = () => {
      const streamed = new Set(s.frames.filter((f) => f.event === 'message' && f.connectionId === first).map((f) => (f.payload as { body?: string }).body));
      return accepted.every((text) => streamed.has(text)) ? true : undefined;
    };
    await waitFor('every accepted message streamed', async () => streamedAll(), { timeoutMs: 10_000 });
  });
});
