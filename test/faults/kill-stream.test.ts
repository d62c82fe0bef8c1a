/**
 * Fault: `kill -9` three times while the service drains a backlog, under a steady 200 msg/s stream from a contact.
 * The sandbox runs as its own process and keeps every message in its outbox until the client's receipt for it
 * arrives; like WhatsApp, it stores the sender's ciphertext once and redelivers the same bytes, so a stanza the
 * service read but did not acknowledge before a kill decrypts (or is recognised as already stored) after the
 * restart instead of being encrypted again further along the Signal chain; and it paces delivery by the client's
 * answers, so the stream's live messages cannot overtake the queued ones by more than a chain may skip. Afterwards:
 * every message the sandbox accepted (201) is stored exactly once, none is left `undecryptable`, and the sandbox's
 * queue for the device is empty — with no restart beyond the three that followed the kills. Each kill comes once the
 * restarted service stored a third of the queue it found.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExternalSandboxRig, type ExternalSandboxRig } from '../helpers/external-sandbox.ts';
import type { ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';

const RATE = 200; // messages per second offered by the contact's phone
const KILLS = 3;
const MAX_IN_FLIGHT = 64;
const BACKLOG_CAP = 5_000; // well above the 2,000 messages a Signal chain may skip ahead
const PHONE_PN = '15550100';
const ALICE_JID = '15550101@s.whatsapp.net';

describe('kill -9 mid-backlog under a 200 msg/s stream', () => {
  let rig: ExternalSandboxRig;
  const call: ExternalSandboxRig['call'] = (...args) => rig.call(...args);
  /** Read-only views of the two databases (WAL: readers see committed data only, and never block the writers). */
  const readOnly = (file: string) => new Database(file, { readonly: true, fileMustExist: true });

  beforeAll(async () => {
    rig = await startExternalSandboxRig({ prefix: 'sb-fault-stream-', user: 'stream', serveTimeoutMs: 120_000 });
  });

  afterAll(async () => rig?.close());

  it(
    'stores every accepted message exactly once, none undecryptable, and drains the backlog by itself',
    { timeout: 600_000 },
    async () => {
      const { sandbox, dir } = rig;
      let service: ServiceProcess = await rig.serve();
      const c = await call(service.apiUrl, 'POST', '/connections', {});
      const id = c.body.id as string;
      const status = async () => (await call(service.apiUrl, 'GET', `/connections/${id}`)).body.status as string;
      const qr = await rig.qrText(service, id);
      expect((await call(sandbox.url, 'POST', '/accounts/%2B15550100/scan', { qr }, false)).status).toBe(200);
      await waitFor('online', async () => ((await status()) === 'online' ? true : undefined), { timeoutMs: 60_000 });

      const sandboxDb = readOnly(path.join(dir, 'sandbox', 'sandbox-server', 'sandbox.db'));
      const serviceDb = readOnly(path.join(dir, 'service', 'switchboard.db'));
      /** Rows queued for the linked device of the phone (messages and anything else). */
      const backlogCount = sandboxDb.prepare('SELECT count(*) AS n FROM outbox WHERE pn = ? AND device_id <> 0');
      const backlog = () => (backlogCount.get(PHONE_PN) as { n: number }).n;
      const run = Date.now().toString(36);
      const ours = `stream ${run} #%`;
      /** Messages stored in the chat with the contact (an index-only count: this is polled). */
      const chatCount = serviceDb.prepare('SELECT count(*) AS n FROM messages WHERE connection_id = ? AND chat_id = ?');
      const history = await waitFor(
        'the seeded history stored',
        () => (chatCount.get(id, ALICE_JID) as { n: number }).n || undefined,
      );
      /** The stream's messages stored (the chat also holds the seeded history). */
      const storedCount = () => (chatCount.get(id, ALICE_JID) as { n: number }).n - history;
      const undecryptable = () =>
        (
          serviceDb
            .prepare(`SELECT count(*) AS n FROM messages WHERE connection_id = ? AND kind = 'undecryptable'`)
            .get(id) as { n: number }
        ).n;

      /** Baileys' decryption failures a service logged (its stderr), by error message: what a failure is about. */
      const decryptFailures = (s: ServiceProcess): Record<string, number> => {
        const out: Record<string, number> = {};
        for (const line of s.stderr().split('\n')) {
          if (!line.includes('"msg":"failed to decrypt message"')) continue;
          const message = String((JSON.parse(line) as { err?: { message?: string } }).err?.message ?? '?');
          out[message] = (out[message] ?? 0) + 1;
        }
        return out;
      };

      // The first backlog: the service is stopped (cleanly) while the stream starts.
      await service.stop('SIGTERM');

      // The contact's phone offers RATE msg/s while the device's queue holds fewer than BACKLOG_CAP rows: on a busy
      // machine a restart takes tens of seconds, and a backlog without bound would only lengthen the drain (on a quiet
      // one the cap is never reached).
      const accepted = new Map<string, string>(); // sandbox message id → text
      let launched = 0;
      let inFlight = 0;
      let refused = 0;
      let credit = 0;
      let pausedMs = 0;
      let capped = false;
      const streamStart = Date.now();
      let lastTick = streamStart;
      let streaming = true;
      const inFlightDone: Array<Promise<void>> = [];
      const capCheck = setInterval(() => (capped = backlog() >= BACKLOG_CAP), 100);
      const pacer = setInterval(() => {
        const now = Date.now();
        if (capped) pausedMs += now - lastTick;
        else credit = Math.min(credit + ((now - lastTick) * RATE) / 1000, MAX_IN_FLIGHT);
        lastTick = now;
        while (streaming && credit >= 1 && inFlight < MAX_IN_FLIGHT) {
          credit--;
          const text = `stream ${run} #${++launched}`;
          inFlight++;
          inFlightDone.push(
            call(sandbox.url, 'POST', '/accounts/%2B15550101/messages', { to: '+15550100', text }, false)
              .then((r) => {
                if (r.status === 201) accepted.set(r.body.id as string, text);
                else refused++;
              })
              .catch(() => void refused++)
              .finally(() => void inFlight--),
          );
        }
      }, 5);
      const stopStream = () => {
        streaming = false;
        clearInterval(pacer);
        clearInterval(capCheck);
      };

      try {
        const kills: string[] = [];
        await new Promise((r) => setTimeout(r, 2000));
        for (let k = 1; k <= KILLS; k++) {
          const storedBefore = storedCount();
          const restartAt = Date.now();
          service = await rig.serve();
          const upInMs = Date.now() - restartAt;
          const atRestart = backlog();
          // Mid-backlog: the restarted service stored a third of the queue (by then the sandbox has sent much more of it
          // than the service has taken in), and a good part is still queued.
          let draining = '';
          const atKill = await waitFor(
            `kill ${k}: a third of the backlog stored`,
            () => {
              const queued = backlog();
              const progress = storedCount() - storedBefore;
              draining = `${atRestart} queued at the restart, ${progress} stored since, ${queued} queued`;
              return progress >= Math.max(20, atRestart / 3) && queued >= 100 ? { queued, progress } : undefined;
            },
            { timeoutMs: 60_000, intervalMs: 10 },
          ).catch((err: unknown) => {
            throw new Error(
              `${String(err)}: ${draining}, ${undecryptable()} undecryptable; decryption failures ${JSON.stringify(decryptFailures(service))}`,
            );
          });
          await service.stop('SIGKILL');
          kills.push(
            `${atRestart} queued at the restart (up in ${upInMs} ms), ${atKill.progress} stored since, ${atKill.queued} queued, decryption failures ${JSON.stringify(decryptFailures(service))}`,
          );
          console.log(
            `[fault] stream: kill ${k} at ${((Date.now() - streamStart) / 1000).toFixed(1)} s, ${kills.at(-1)}; ${accepted.size} accepted`,
          );
          // Down for a moment while the stream goes on: the next backlog.
          await new Promise((r) => setTimeout(r, 2000 + Math.random() * 1000));
        }
        service = await rig.serve();
        // The stream goes on for a moment while this service drains the backlog, then stops.
        await new Promise((r) => setTimeout(r, 1500));
        stopStream();
        await Promise.all(inFlightDone);
        const seconds = (Date.now() - streamStart) / 1000;
        const offering = seconds - pausedMs / 1000;
        console.log(
          `[fault] stream: ${accepted.size} accepted in ${seconds.toFixed(1)} s (${(accepted.size / offering).toFixed(0)} msg/s over the ${offering.toFixed(1)} s not paused at the cap), ${refused} refused; kills at: ${kills.join('; ')}`,
        );
        expect(refused).toBe(0);

        // No operator restart: the third restart's service drains everything by itself.
        let diagnosis = '';
        const drainStart = Date.now();
        await waitFor(
          'every accepted message stored and the backlog drained',
          () => {
            const stored = storedCount();
            const queued = backlog();
            diagnosis = `${stored}/${accepted.size} stored, ${undecryptable()} undecryptable, ${queued} left in the sandbox outbox`;
            return stored >= accepted.size && queued === 0 ? true : undefined;
          },
          { timeoutMs: 120_000, intervalMs: 200 },
        ).catch((err: unknown) => {
          throw new Error(
            `${String(err)}: ${diagnosis}; decryption failures ${JSON.stringify(decryptFailures(service))}`,
          );
        });
        const drainedIn = (Date.now() - drainStart) / 1000;
        await waitFor('online', async () => ((await status()) === 'online' ? true : undefined), { timeoutMs: 60_000 });

        const rows = serviceDb
          .prepare('SELECT key_id, text, kind FROM messages WHERE connection_id = ? AND chat_id = ? AND text LIKE ?')
          .all(id, ALICE_JID, ours) as Array<{
          key_id: string;
          text: string;
          kind: string;
        }>;
        const keyIds = rows.map((r) => r.key_id);
        const left = backlog();
        const undecryptableLeft = undecryptable();
        const retryReceipts = sandbox
          .stderr()
          .split('\n')
          .filter((l) => l.includes('"msg":"retry receipt"')).length;
        console.log(
          `[fault] stream: decryption failures after the last restart ${JSON.stringify(decryptFailures(service))}`,
        );
        console.log(
          `[fault] stream: accepted ${accepted.size}, stored ${rows.length} (${new Set(keyIds).size} distinct), undecryptable ${undecryptableLeft}, left in the sandbox outbox ${left}; drained ${drainedIn.toFixed(1)} s after the stream stopped; ${retryReceipts} retry receipts`,
        );
        expect(new Set(keyIds).size).toBe(keyIds.length); // no message stored twice
        expect([...accepted.keys()].filter((k) => !keyIds.includes(k))).toEqual([]); // nothing lost
        expect(keyIds.filter((k) => !accepted.has(k))).toEqual([]); // nothing invented
        for (const r of rows) expect(r.text).toBe(accepted.get(r.key_id)); // each under its own id, decrypted right
        expect(undecryptableLeft).toBe(0);
        expect(left).toBe(0);

        // The connection works: a new message arrives live.
        expect(
          (
            await call(
              sandbox.url,
              'POST',
              '/accounts/%2B15550101/messages',
              { to: '+15550100', text: `stream ${run} after` },
              false,
            )
          ).status,
        ).toBe(201);
        await waitFor('a live message after the kills', async () => {
          const p = await call(service.apiUrl, 'GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=5`);
          return p.body.messages.some((m: { text: string }) => m.text === `stream ${run} after`) ? true : undefined;
        });
      } finally {
        stopStream();
        serviceDb.close();
        sandboxDb.close();
      }
    },
  );
});
