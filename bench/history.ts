/**
 * `npm run bench -- history [--sizes 10000,100000]`
 *
 * Pairing history sync: for each size a fresh sandbox account gets a conversation of that many messages
 * (`POST /accounts/:phone/history { with, count }`) before pairing; then a connection is paired with it and we time
 * scan → `online` and scan → every message stored (counted in the service's SQLite file, read-only, WAL), then the
 * first-page latency of `GET …/chats?limit=50` and `GET …/chats/:chatId/messages?limit=50` right after (first request
 * and p50 of the next 20). Sandbox and service are separate child processes.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import type { BenchResult } from './index.ts';
import { enc, list, percentile, phones, round, startStack, until } from './lib.ts';

export async function run(args: string[]): Promise<BenchResult> {
  const sizes = list(args, 'sizes', [10_000, 100_000]);
  const stack = await startStack();
  const db = new Database(path.join(stack.serviceDir, 'switchboard.db'), { readonly: true, fileMustExist: true });
  const countStmt = db.prepare('SELECT count(*) AS n FROM messages WHERE connection_id = ?');
  try {
    const accounts = phones('400', sizes.length);
    const peer = '+15550101';
    const peerJid = '15550101@s.whatsapp.net';
    await stack.createAccounts(accounts);
    const rows = [];
    for (const [i, size] of sizes.entries()) {
      const phone = accounts[i]!;
      const seeded = await stack.admin('POST', `/accounts/${enc(phone)}/history`, { with: peer, count: size });
      if (seeded.status !== 201) throw new Error(`history: ${seeded.status} ${JSON.stringify(seeded.body)}`);
      const created = await stack.api('POST', '/connections', { name: `history ${size}` });
      const id = created.body.id as string;
      const qr = await until('QR', async () => {
        const r = await stack.api('GET', `/connections/${id}/qr?format=text`);
        return r.status === 200 ? (r.body.value as string) : undefined;
      });
      const t0 = performance.now();
      const scan = await stack.admin('POST', `/accounts/${enc(phone)}/scan`, { qr });
      if (scan.status !== 200) throw new Error(`scan: ${scan.status}`);
      let onlineMs = NaN;
      const timeoutMs = Math.max(60_000, size * 2);
      await until(
        `${size} history messages stored`,
        async () => {
          if (Number.isNaN(onlineMs) && (await stack.api('GET', `/connections/${id}`)).body.status === 'online') onlineMs = performance.now() - t0;
          return (countStmt.get(id) as { n: number }).n >= size && !Number.isNaN(onlineMs) ? true : undefined;
        },
        timeoutMs,
        25,
      );
      const storedMs = performance.now() - t0;
      const timed = async (route: string) => {
        const s = performance.now();
        const r = await stack.api('GET', route);
        if (r.status !== 200) throw new Error(`${route}: ${r.status}`);
        return performance.now() - s;
      };
      const chatsRoute = `/connections/${id}/chats?limit=50`;
      const msgsRoute = `/connections/${id}/chats/${peerJid}/messages?limit=50`;
      const firstChats = await timed(chatsRoute);
      const firstMsgs = await timed(msgsRoute);
      const again = { chats: [] as number[], msgs: [] as number[] };
      for (let k = 0; k < 20; k++) {
        again.chats.push(await timed(chatsRoute));
        again.msgs.push(await timed(msgsRoute));
      }
      const p50 = (xs: number[]) => round(percentile(xs.sort((a, b) => a - b), 50));
      rows.push({
        messages: size,
        onlineMs: round(onlineMs, 0),
        storedMs: round(storedMs, 0),
        perSec: Math.round((size / storedMs) * 1000),
        firstChatsMs: round(firstChats),
        chatsP50Ms: p50(again.chats),
        firstMessagesMs: round(firstMsgs),
        messagesP50Ms: p50(again.msgs),
      });
      process.stderr.write(`history: ${size} done\n`);
    }
    const markdown = [
      '### History sync at pairing (one chat; sandbox and service in separate processes)',
      '',
      '| messages | scan → online | scan → all stored | stored msg/s | first `GET /chats?limit=50` | p50 next 20 | first `GET …/messages?limit=50` | p50 next 20 |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.messages.toLocaleString('en')} | ${r.onlineMs} ms | **${r.storedMs} ms** | ${r.perSec} | ${r.firstChatsMs} ms | ${r.chatsP50Ms} ms | ${r.firstMessagesMs} ms | ${r.messagesP50Ms} ms |`,
      ),
    ].join('\n');
    return { name: 'history', markdown, data: { rows } };
  } finally {
    db.close();
    await stack.close();
  }
}
