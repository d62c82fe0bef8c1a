/**
 * Fault: a send with an `Idempotency-Key` is interrupted after its message left — the connection's session thread is
 * killed, or the whole service with `kill -9` — while the server's ack is held back (sandbox `PUT /faults/message-acks`),
 * so the caller gets no answer or a 502 "outcome unknown". A retry with the same key answers the message that was
 * recorded (the one the contact received, same id) and sends nothing: the contact's phone has it once. A send killed
 * before its message was recorded (during its typing delay) runs again with its key, and arrives once.
 * (docs/api.md "Idempotent requests"; the plain kill -9 burst is kill-sends.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExternalSandboxRig, type ExternalSandboxRig } from '../helpers/external-sandbox.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

describe('a session thread killed during an idempotent send', { timeout: 120_000 }, () => {
  let s: SandboxService;
  let id: string;
  const run = Date.now().toString(36);
  const atAlice = async (text: string) =>
    ((await s.sandbox<Json[]>('GET', `/accounts/${enc(ALICE)}/messages`)).body as Json[]).filter(
      (m) => m.text === text,
    );
  const send = (text: string, key: string, skipPresence = true) =>
    s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text, skipPresence }, { 'idempotency-key': key });
  const killThread = async () => {
    const threads = s.service.sessionThreads!;
    const slot = threads.threads().find((t) => t.connections.includes(id));
    expect(slot).toBeDefined();
    await threads.kill(slot!.index);
  };
  const online = () =>
    waitFor(
      'online again',
      async () => ((await s.api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined),
      { timeoutMs: 60_000 },
    );

  beforeAll(async () => {
    // One session thread; sends with presence wait 3 s "typing" (the window the second test kills in).
    s = await startSandboxService({ config: { workers: 1 }, typingDelayMs: { min: 3_000, max: 3_000 } });
    id = await s.pair(PHONE);
  }, 60_000);
  afterAll(async () => {
    await s?.sandbox('PUT', '/faults/message-acks', { withhold: false });
    await s?.close();
  });

  it('after the message left: 502 outcome unknown, then the retry answers it and sends nothing', async () => {
    const text = `idem thread kill ${run}`;
    const key = `thread-kill-${run}`;
    expect((await s.sandbox('PUT', '/faults/message-acks', { withhold: true })).status).toBe(204);
    const pending = send(text, key);
    const [received] = await waitFor('the send at Alice', async () => {
      const got = await atAlice(text);
      return got.length > 0 ? got : undefined;
    });
    await killThread();
    const first = await pending;
    expect(first.status).toBe(502);
    expect(first.body.message).toMatch(/outcome is unknown/);
    expect((await s.sandbox('PUT', '/faults/message-acks', { withhold: false })).status).toBe(204);
    await online();

    const retry = await send(text, key);
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ text, fromMe: true, chatId: '15550101@s.whatsapp.net' });
    expect(keyIdOf(retry.body.id)).toBe(received.id);
    // That answer is now the key's answer.
    expect(await send(text, key)).toMatchObject({ status: 201, body: retry.body });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await atAlice(text)).map((m) => m.id)).toEqual([received.id]);
  });

  it('before the message was recorded (typing): 502, then the retry sends it, once', async () => {
    const text = `idem killed typing ${run}`;
    const key = `typing-kill-${run}`;
    const pending = send(text, key, false);
    // The typing indicator reached Alice's phone: the send is in its 3 s delay, nothing recorded yet.
    await waitFor('typing at Alice', async () => {
      const states = (await s.sandbox<Json[]>('GET', `/accounts/${enc(ALICE)}/chatstates`)).body as Json[];
      return states.some((c) => c.from === PHONE && c.state === 'composing') ? true : undefined;
    });
    await killThread();
    expect((await pending).status).toBe(502);
    await online();
    expect(await atAlice(text)).toEqual([]);

    const retry = await send(text, key, true);
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull(); // it ran
    await waitFor('the retry at Alice', async () => ((await atAlice(text)).length > 0 ? true : undefined));
    expect(await send(text, key, true)).toMatchObject({ status: 201, body: retry.body });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await atAlice(text)).map((m) => m.id)).toEqual([keyIdOf(retry.body.id)]);
  });
});

describe('kill -9 during an idempotent send', () => {
  let rig: ExternalSandboxRig;
  beforeAll(async () => {
    rig = await startExternalSandboxRig({ prefix: 'sb-fault-idem-', user: 'idem' });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it(
    'after the message left: the retry on the restarted service answers it and sends nothing',
    { timeout: 120_000 },
    async () => {
      const { sandbox, call } = rig;
      let service = await rig.serve();
      const c = await call(service.apiUrl, 'POST', '/connections', {});
      const id = c.body.id as string;
      const status = async () => (await call(service.apiUrl, 'GET', `/connections/${id}`)).body.status as string;
      const qr = await rig.qrText(service, id);
      expect((await call(sandbox.url, 'POST', '/accounts/%2B15550100/scan', { qr }, false)).status).toBe(200);
      await waitFor('online', async () => ((await status()) === 'online' ? true : undefined), { timeoutMs: 30_000 });

      const text = `idem kill -9 ${Date.now().toString(36)}`;
      const key = `process-kill-${text}`.replace(/ /g, '-');
      const send = (api: string) =>
        fetch(`${api}/connections/${id}/send`, {
          method: 'POST',
          headers: { authorization: `Bearer ${rig.token}`, 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ chatId: ALICE, text, skipPresence: true }),
        });
      const atAlice = async () =>
        ((await call(sandbox.url, 'GET', `/accounts/${enc(ALICE)}/messages`, undefined, false)).body as Json[]).filter(
          (m) => m.text === text,
        );

      expect((await call(sandbox.url, 'PUT', '/faults/message-acks', { withhold: true }, false)).status).toBe(204);
      const pending = send(service.apiUrl).then(
        (r) => r.status,
        () => 'no answer',
      );
      const [received] = await waitFor('the send at Alice', async () => {
        const got = await atAlice();
        return got.length > 0 ? got : undefined;
      });
      await service.stop('SIGKILL');
      expect(await pending).toBe('no answer');
      expect((await call(sandbox.url, 'PUT', '/faults/message-acks', { withhold: false }, false)).status).toBe(204);

      service = await rig.serve();
      await waitFor('online again', async () => ((await status()) === 'online' ? true : undefined), {
        timeoutMs: 30_000,
      });
      const retry = await send(service.apiUrl);
      const body = (await retry.json()) as Json;
      expect(retry.status, JSON.stringify(body)).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(body).toMatchObject({ text, fromMe: true });
      expect(keyIdOf(body.id as string)).toBe(received.id);
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await atAlice()).map((m) => m.id)).toEqual([received.id]);
    },
  );
});
