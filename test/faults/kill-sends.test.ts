/**
 * Fault: `kill -9` in the middle of a burst of concurrent `POST /connections/:id/send` calls (skipPresence). The sandbox
 * runs as its own process, so what the contact received survives the crash. Afterwards: every send that got a 2xx is
 * stored (once) and reached the contact exactly once; no text reached the contact twice (each call has a unique text),
 * whether or not its call was answered; and the connection comes back online and sends again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExternalSandboxRig, type ExternalSandboxRig } from '../helpers/external-sandbox.ts';
import { waitFor } from '../helpers/wait.ts';

const SENDS = 150;
const ALICE_JID = '15550101@s.whatsapp.net';

describe('kill -9 during concurrent sends', () => {
  let rig: ExternalSandboxRig;
  let sandbox: ExternalSandboxRig['sandbox'];
  const serve = () => rig.serve();
  const call: ExternalSandboxRig['call'] = (...args) => rig.call(...args);

  beforeAll(async () => {
    rig = await startExternalSandboxRig({ prefix: 'sb-fault-send-', user: 'sends' });
    ({ sandbox } = rig);
  });

  afterAll(async () => rig?.close());

  it('every answered send is stored and received exactly once; nothing is received twice', { timeout: 55_000 }, async () => {
    let service = await serve();
    const c = await call(service.apiUrl, 'POST', '/connections', {});
    const id = c.body.id as string;
    const status = async () => (await call(service.apiUrl, 'GET', `/connections/${id}`)).body.status as string;
    const qr = await rig.qrText(service, id);
    expect((await call(sandbox.url, 'POST', '/accounts/%2B15550100/scan', { qr }, false)).status).toBe(200);
    await waitFor('online', async () => ((await status()) === 'online' ? true : undefined), { timeoutMs: 30_000 });

    const run = `${Date.now().toString(36)}`;
    const texts = Array.from({ length: SENDS }, (_, i) => `kill-send ${run} #${i}`);
    const answered = new Map<string, string>(); // text → stored message id, for 2xx answers
    const statuses: Array<number | string> = [];
    const api = service.apiUrl;
    const sends = texts.map(async (text) => {
      try {
        const r = await call(api, 'POST', `/connections/${id}/send`, { chatId: '+15550101', text, skipPresence: true });
        statuses.push(r.status);
        if (r.status >= 200 && r.status < 300) answered.set(text, r.body.id as string);
      } catch {
        statuses.push('no answer'); // the process died under this request
      }
    });
    // Kill once part of the burst was answered, while the rest is in flight.
    await waitFor('some sends answered', () => (answered.size >= SENDS / 4 ? true : undefined), { timeoutMs: 30_000, intervalMs: 2 });
    await service.stop('SIGKILL');
    await Promise.all(sends);
    const answeredAtKill = answered.size;
    console.log(`[fault] sends: killed after ${answeredAtKill}/${SENDS} answered; statuses ${JSON.stringify(countBy(statuses))}`);
    expect(answeredAtKill).toBeLessThan(SENDS); // the kill interrupted the burst
    expect(statuses.filter((s) => typeof s === 'number' && s !== 201)).toEqual([]); // no error answers before the kill

    service = await serve();
    await waitFor('online again', async () => ((await status()) === 'online' ? true : undefined), { timeoutMs: 30_000 });

    // What the contact's phone received (give late deliveries a moment to settle).
    const received = async () =>
      ((await call(sandbox.url, 'GET', '/accounts/%2B15550101/messages', undefined, false)).body as Array<{ id: string; text: string | null }>).filter((m) =>
        m.text?.startsWith(`kill-send ${run} `),
      );
    await waitFor('every answered send at the contact', async () => {
      const got = new Set((await received()).map((m) => m.text));
      return [...answered.keys()].every((t) => got.has(t)) ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 1000));
    const atAlice = await received();
    const perText = countBy(atAlice.map((m) => m.text!));
    expect(Object.entries(perText).filter(([, n]) => n > 1)).toEqual([]); // no text on the wire twice
    expect(new Set(atAlice.map((m) => m.id)).size).toBe(atAlice.length);

    // Every answered send is stored (with the id it was answered with), exactly once.
    const stored: Array<{ id: string; text: string }> = [];
    for (let before: string | undefined; ; ) {
      const page = await call(service.apiUrl, 'GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=500${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      expect(page.status).toBe(200);
      stored.push(...page.body.messages);
      if (!page.body.nextBefore) break;
      before = page.body.nextBefore as string;
    }
    const storedOurs = stored.filter((m) => m.text.startsWith(`kill-send ${run} `));
    expect(Object.entries(countBy(storedOurs.map((m) => m.text))).filter(([, n]) => n > 1)).toEqual([]);
    const storedIds = new Map(storedOurs.map((m) => [m.text, m.id]));
    for (const [text, messageId] of answered) expect(storedIds.get(text), text).toBe(messageId);
    // Stored and received agree: the key id of each stored send is the id the contact received it under.
    const receivedIds = new Map(atAlice.map((m) => [m.text, m.id]));
    for (const [text, messageId] of answered) expect(messageId.endsWith(`_${receivedIds.get(text)}`), text).toBe(true);
    console.log(`[fault] sends: ${answered.size} answered, ${storedOurs.length} stored, ${atAlice.length} received after the restart`);

    // The connection works again.
    const again = await call(service.apiUrl, 'POST', `/connections/${id}/send`, { chatId: '+15550101', text: `kill-send ${run} after`, skipPresence: true });
    expect(again.status).toBe(201);
    await waitFor('the send after the restart at the contact', async () => ((await received()).some((m) => m.text === `kill-send ${run} after`) ? true : undefined));
  });
});

function countBy(values: Array<string | number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[String(v)] = (out[String(v)] ?? 0) + 1;
  return out;
}
