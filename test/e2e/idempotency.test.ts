/**
 * Idempotent requests (issue 25 item 5; docs/api.md "Idempotent requests") through the real service, real Baileys and
 * the sandbox: the same `Idempotency-Key` with the same request answers the first answer again and sends nothing a
 * second time (the contact's phone gets one message), also after a service restart; another request with the key is
 * a 422, a duplicate while the first still runs a 409, a malformed key a 400; a request refused before it did
 * anything (409 not online) leaves the key free. The kill tests are in test/faults/idempotent-sends.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';

describe('Idempotency-Key', { timeout: 90_000 }, () => {
  let s: SandboxService;
  let id: string;
  const run = Date.now().toString(36);
  const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);
  const atAlice = async (text: string) =>
    ((await s.sandbox<Json[]>('GET', `/accounts/${enc(ALICE)}/messages`)).body as Json[]).filter(
      (m) => m.text === text,
    );
  const send = (text: string, key?: string, extra: Json = {}) =>
    s.api(
      'POST',
      `/connections/${id}/send`,
      { chatId: ALICE, text, skipPresence: true, ...extra },
      key === undefined ? {} : { 'idempotency-key': key },
    );

  beforeAll(async () => {
    s = await startSandboxService();
    id = await s.pair(PHONE);
  });
  afterAll(() => s?.close());

  it('the same key and body: the first answer again, one message at the contact', async () => {
    const text = `idem once ${run}`;
    const key = `key-once-${run}`;
    const first = await send(text, key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    await waitFor('at Alice', async () => ((await atAlice(text)).length > 0 ? true : undefined));
    const second = await send(text, key);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    // Key order and whitespace do not make another request.
    const third = await s.api(
      'POST',
      `/connections/${id}/send`,
      { skipPresence: true, text, chatId: ALICE },
      { 'idempotency-key': key },
    );
    expect(third).toMatchObject({ status: 201, body: first.body });
    await new Promise((r) => setTimeout(r, 500));
    const received = await atAlice(text);
    expect(received.map((m) => m.id)).toEqual([keyIdOf(first.body.id)]);
    // Without a key, the same body is a new message.
    const again = await send(text);
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
  });

  it('the same key with another body or route: 422, nothing sent', async () => {
    const key = `key-other-${run}`;
    const first = await send(`idem first ${run}`, key);
    expect(first.status).toBe(201);
    const other = await send(`idem other ${run}`, key);
    expect(other.status).toBe(422);
    expect(other.body).toEqual({
      statusCode: 422,
      error: 'Unprocessable Entity',
      message: `This Idempotency-Key was already used for another request (POST /api/connections/:id/send with other parameters or another body) in the last 24 h; use a new key for a new request`,
    });
    const otherRoute = await s.api('POST', `/connections/${id}/typing`, { chatId: ALICE }, { 'idempotency-key': key });
    expect(otherRoute.status).toBe(422);
    expect(otherRoute.body.message).toContain('(POST /api/connections/:id/send)');
    await new Promise((r) => setTimeout(r, 500));
    expect(await atAlice(`idem other ${run}`)).toEqual([]);
  });

  it('a malformed key is a 400 and changes nothing', async () => {
    const cases: Array<[string, string]> = [
      ['x'.repeat(256), 'headers/idempotency-key must be at most 255 characters long'],
      ['has space', 'headers/idempotency-key must match pattern "^[!-~]+$"'],
      ['tab\there', 'headers/idempotency-key must match pattern "^[!-~]+$"'],
    ];
    for (const [key, message] of cases) {
      const res = await send(`idem bad key ${run}`, key);
      expect(res.status, key).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message });
    }
    expect((await send(`idem long key ${run}`, 'k'.repeat(255))).status).toBe(201);
    await new Promise((r) => setTimeout(r, 300));
    expect(await atAlice(`idem bad key ${run}`)).toEqual([]);
  });

  it('a duplicate while the first still runs is a 409; once answered, it gets that answer', async () => {
    const text = `idem concurrent ${run}`;
    const key = `key-concurrent-${run}`;
    // The server's ack is held back, so the first send waits for it (at most 10 s) while the duplicate comes in.
    expect((await s.sandbox('PUT', '/faults/message-acks', { withhold: true })).status).toBe(204);
    let first: Awaited<ReturnType<typeof send>>;
    try {
      const pending = send(text, key);
      await waitFor('the first send at Alice', async () => ((await atAlice(text)).length > 0 ? true : undefined));
      const duplicate = await send(text, key);
      expect(duplicate.status).toBe(409);
      expect(duplicate.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: 'A request with this Idempotency-Key is still in progress; retry once it has been answered',
      });
      expect((await s.sandbox('PUT', '/faults/message-acks', { withhold: false })).status).toBe(204);
      first = await pending;
    } finally {
      await s.sandbox('PUT', '/faults/message-acks', { withhold: false });
    }
    expect(first.status).toBe(201);
    const later = await send(text, key);
    expect(later).toMatchObject({ status: 201, body: first.body });
    expect((await atAlice(text)).length).toBe(1);
  });

  it('operations replay their first answer too (mark-read, react)', async () => {
    const key = `key-typing-${run}`;
    const a = await s.api('POST', `/connections/${id}/typing`, { chatId: ALICE }, { 'idempotency-key': key });
    const b = await s.api('POST', `/connections/${id}/typing`, { chatId: ALICE }, { 'idempotency-key': key });
    expect(a).toMatchObject({ status: 200, body: { success: true } });
    expect(b).toMatchObject({ status: 200, body: { success: true } });
    expect(b.headers.get('idempotent-replayed')).toBe('true');

    const target = await send(`idem react target ${run}`);
    const react = (emoji: string) =>
      s.api(
        'POST',
        `/connections/${id}/react`,
        { chatId: ALICE, messageId: target.body.id, emoji },
        { 'idempotency-key': `key-react-${run}` },
      );
    const r1 = await react('👍');
    expect(r1.status).toBe(201);
    const r2 = await react('👍');
    expect(r2).toMatchObject({ status: 201, body: r1.body });
    expect((await react('🎉')).status).toBe(422);
  });

  it('a request refused before it acted (409 not online) leaves the key free', async () => {
    const created = await s.api('POST', '/connections', { name: 'never linked' });
    const idle = created.body.id as string;
    const key = `key-offline-${run}`;
    const res = await s.api(
      'POST',
      `/connections/${idle}/send`,
      { chatId: ALICE, text: 'x', skipPresence: true },
      { 'idempotency-key': key },
    );
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/^Connection is not online/);
    // The key was released: the same key now runs a new request (another body is no 422).
    const again = await s.api(
      'POST',
      `/connections/${idle}/send`,
      { chatId: ALICE, text: 'y', skipPresence: true },
      { 'idempotency-key': key },
    );
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/^Connection is not online/);
    // Keys are per connection: the connected one takes the same key for its own request.
    expect((await send(`idem scoped ${run}`, key)).status).toBe(201);
    expect((await s.api('DELETE', `/connections/${idle}`)).status).toBe(200);
  });

  it('holds across a service restart: the first answer again, nothing sent twice', async () => {
    const text = `idem restart ${run}`;
    const key = `key-restart-${run}`;
    const first = await send(text, key);
    expect(first.status).toBe(201);
    await waitFor('at Alice', async () => ((await atAlice(text)).length > 0 ? true : undefined));
    await s.service.close();
    s = await startSandboxService({ dataDir: s.dataDir });
    await waitFor(
      'online after the restart',
      async () => ((await s.api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    const second = await send(text, key);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect((await send(`${text} changed`, key)).status).toBe(422);
    await new Promise((r) => setTimeout(r, 500));
    expect((await atAlice(text)).map((m) => m.id)).toEqual([keyIdOf(first.body.id)]);
  });
});
