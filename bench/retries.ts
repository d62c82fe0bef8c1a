/**
 * `npm run bench -- retries [--messages 100] [--rounds 2]`
 *
 * Recovery from undecryptable messages: one linked connection; the contact's phone sends `--messages` texts whose
 * first delivery cannot be decrypted (sandbox `undecryptable: true`, as when the phone's session was out of step).
 * For each, the engine stores a placeholder (`undecryptable`), Baileys sends a retry receipt, the phone encrypts the
 * message again and the real message replaces the placeholder. We time the first send → every message stored as
 * its real text (no placeholder left), counted in the service's SQLite file (read-only, WAL). A control round sends
 * as many ordinary texts the same way. Rounds alternate (control, undecryptable, …). Sandbox and service are
 * separate child processes.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import type { BenchResult } from './index.ts';
import { enc, flag, pool, procSample, round, startStack, until } from './lib.ts';

const PHONE = '+15550100';
const CONTACT = '+15550101';
const CONTACT_JID = '15550101@s.whatsapp.net';

export async function run(args: string[]): Promise<BenchResult> {
  const messages = flag(args, 'messages', 100);
  const rounds = flag(args, 'rounds', 2);
  const stack = await startStack();
  const db = new Database(path.join(stack.serviceDir, 'switchboard.db'), { readonly: true, fileMustExist: true });
  try {
    const id = await stack.pair(PHONE);
    const count = db.prepare(
      `SELECT sum(kind <> 'undecryptable' AND text LIKE ?) AS real, sum(kind = 'undecryptable') AS waiting
       FROM messages WHERE connection_id = ? AND chat_id = ?`,
    );
    const rows: Array<{
      kind: string;
      messages: number;
      seconds: number;
      perSec: number;
      maxWaiting: number;
      serviceCpu: number;
    }> = [];
    const loadBefore = (await import('node:os')).loadavg()[0]!;
    for (let r = 0; r < rounds * 2; r++) {
      const undecryptable = r % 2 === 1;
      const tag = `retries ${r} ${Date.now().toString(36)}`;
      let maxWaiting = 0;
      const cpu0 = procSample(stack.service.child.pid!);
      const t0 = performance.now();
      await pool(messages, 16, async (i) => {
        const sent = await stack.admin('POST', `/accounts/${enc(CONTACT)}/messages`, {
          to: PHONE,
          text: `${tag} #${i}`,
          ...(undecryptable ? { undecryptable: true } : {}),
        });
        if (sent.status !== 201) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.body)}`);
      });
      await until(
        `${messages} ${undecryptable ? 'undecryptable' : 'ordinary'} messages stored as text`,
        () => {
          const c = count.get(`${tag} #%`, id, CONTACT_JID) as { real: number | null; waiting: number | null };
          maxWaiting = Math.max(maxWaiting, c.waiting ?? 0);
          return (c.real ?? 0) >= messages && !c.waiting ? true : undefined;
        },
        Math.max(120_000, messages * 2_000),
        20,
      );
      const seconds = (performance.now() - t0) / 1000;
      const cpu1 = procSample(stack.service.child.pid!);
      rows.push({
        kind: undecryptable ? 'undecryptable first' : 'ordinary (control)',
        messages,
        seconds: round(seconds),
        perSec: round(messages / seconds, 1),
        maxWaiting,
        serviceCpu: round(((cpu1.cpuMs - cpu0.cpuMs) / (cpu1.at - cpu0.at)) * 100, 1),
      });
      process.stderr.write(`retries: round ${r + 1}/${rounds * 2} (${rows.at(-1)!.kind}) ${rows.at(-1)!.seconds} s\n`);
    }
    const loadAfter = (await import('node:os')).loadavg()[0]!;
    /** Median seconds of a kind's rounds (the mean of the middle two for an even count), and its rate. */
    const median = (kind: string) => {
      const xs = rows
        .filter((x) => x.kind === kind)
        .map((x) => x.seconds)
        .sort((a, b) => a - b);
      const mid = xs.length / 2;
      const seconds = xs.length % 2 ? xs[Math.floor(mid)]! : (xs[mid - 1]! + xs[mid]!) / 2;
      return `${round(seconds)} s (${round(messages / seconds, 1)} msg/s)`;
    };
    const markdown = [
      `### Recovery from undecryptable messages (one connection, ${messages} messages per round, retry receipts)`,
      '',
      '| round | messages | first send → all stored as text | msg/s | most placeholders at once | service CPU (% of a core) |',
      '|---|---:|---:|---:|---:|---:|',
      ...rows.map(
        (x) => `| ${x.kind} | ${x.messages} | **${x.seconds} s** | ${x.perSec} | ${x.maxWaiting} | ${x.serviceCpu} |`,
      ),
      '',
      `Median: undecryptable ${median('undecryptable first')}, control ${median('ordinary (control)')}. ` +
        `Load average ${round(loadBefore, 1)} → ${round(loadAfter, 1)}.`,
    ].join('\n');
    return { name: 'retries', markdown, data: { messages, rounds: rows, loadBefore, loadAfter } };
  } finally {
    db.close();
    await stack.close();
  }
}
