/**
 * `npm run bench -- groups [--size 256] [--groups 3] [--sends 30] [--contacts 10] [--messages 1000] [--senders 64]
 *   [--rounds 3] [--warmup 300]`
 *
 * (a) Sending to big groups: `--groups` sandbox groups of `--size` participants (the account and `--size`−1 sandbox
 *     phones), created by the account's phone through the admin API; `POST /send` to each, one at a time, timed from
 *     the POST to its answer (the answer comes once WhatsApp's server acknowledged the message). The first send to a
 *     group (sender-key distribution: device list, prekeys and one `pkmsg` per member device) and the later ones
 *     (one `skmsg`) are reported apart.
 * (b) Incoming group messages: `--contacts` sandbox phones write `--messages` texts (round robin, `--senders` admin
 *     requests in flight) into a group; receivers are a bare Baileys rc14 socket (in-memory auth, own process) and
 *     the service (stored: the last `message` frame on the WebSocket, which leaves after the commit). Each receiver
 *     is in its own group with the same contacts (so both get the same stream, one at a time), rounds alternate,
 *     medians reported. Both get an unmeasured warm-up first (sender keys of every contact, JIT).
 *     Goal: stored ≥ 0.8 × bare, the same bar as 1:1 ingest.
 * The sandbox and the service run as their own processes (see lib.ts `startStack`).
 */
import type { BenchResult } from './index.ts';
import {
  cpuPercent,
  enc,
  flag,
  percentile,
  phones,
  pool,
  procSample,
  round,
  sleep,
  spawnBareClient,
  startStack,
  until,
  watchMessages,
  type JsonClient,
  type Stack,
} from './lib.ts';

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

async function createGroup(admin: JsonClient, creator: string, subject: string, participants: string[]): Promise<string> {
  const r = await admin('POST', '/groups', { creator, subject, participants });
  if (r.status !== 201) throw new Error(`create group: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

/** Waits until the service knows the group (it learns it from the creation notification). */
async function known(stack: Stack, id: string, groupId: string): Promise<void> {
  await until(`group ${groupId} at the service`, async () =>
    (await stack.api('GET', `/connections/${id}/groups/${enc(groupId)}`)).status === 200 ? true : undefined,
  60_000, 100);
}

async function groupSendLatency(stack: Stack, id: string, account: string, size: number, nGroups: number, sends: number) {
  const members = phones('300', size - 1);
  await stack.createAccounts(members);
  const first: number[] = [];
  const later: number[] = [];
  let pending = 0; // answers without the server's acknowledgement in time (ack 1)
  for (let g = 0; g < nGroups; g++) {
    const groupId = await createGroup(stack.admin, account, `bench ${size} #${g}`, members);
    await known(stack, id, groupId);
    for (let i = 0; i <= sends; i++) {
      const t0 = performance.now();
      const r = await stack.api('POST', `/connections/${id}/send`, { chatId: groupId, text: `bench ${g}/${i}`, skipPresence: true });
      const ms = performance.now() - t0;
      if (r.status !== 201) throw new Error(`group send: ${r.status} ${JSON.stringify(r.body)}`);
      if (r.body.ack < 2) pending++;
      (i === 0 ? first : later).push(ms);
    }
  }
  return { first: sorted(first), later: sorted(later), pending };
}

async function burst(admin: JsonClient, groupId: string, contacts: string[], total: number, senders: number, label: string) {
  await pool(total, senders, async (i) => {
    const r = await admin('POST', `/groups/${enc(groupId)}/messages`, { from: contacts[i % contacts.length]!, text: `${label} ${i}` });
    if (r.status !== 201) throw new Error(`sandbox group send: ${r.status} ${JSON.stringify(r.body)}`);
  });
}

export async function run(args: string[]): Promise<BenchResult> {
  const size = flag(args, 'size', 256);
  const nGroups = flag(args, 'groups', 3);
  const sends = flag(args, 'sends', 30);
  const nContacts = flag(args, 'contacts', 10);
  const total = flag(args, 'messages', 1000);
  const senders = flag(args, 'senders', 64);
  const rounds = flag(args, 'rounds', 3);
  const warmup = flag(args, 'warmup', 300);
  const timeoutMs = 180_000;
  const stack = await startStack();
  try {
    const [account, bareReceiver] = phones('901', 2) as [string, string];
    const contacts = phones('400', nContacts);
    await stack.createAccounts([account, bareReceiver, ...contacts]);
    const rootKey = (await stack.admin('GET', '/')).body.rootPublicKey as string;
    const id = await stack.pair(account);

    // (a) sends to big groups
    const latency = await groupSendLatency(stack, id, account, size, nGroups, sends);

    // (b) incoming group messages: one group per receiver, same contacts
    const bare = await spawnBareClient(stack.sandbox.wsUrl, rootKey, stack.sandbox.url, bareReceiver);
    const frames = await watchMessages(stack.service.apiUrl, stack.token);
    const bareGroup = await createGroup(stack.admin, contacts[0]!, 'bench ingest (bare)', [...contacts.slice(1), bareReceiver]);
    const ourGroup = await createGroup(stack.admin, contacts[0]!, 'bench ingest (service)', [...contacts.slice(1), account]);
    await known(stack, id, ourGroup);
    const warm = Math.max(nContacts, warmup);
    const bareStart = bare.received();
    await burst(stack.admin, bareGroup, contacts, warm, senders, 'warmup');
    await burst(stack.admin, ourGroup, contacts, warm, senders, 'warmup');
    await bare.reach(bareStart + warm, 60_000);
    await frames.reach(warm, 60_000);
    await sleep(500);

    type Row = { round: number; case: string; perSec: number; recvMs: number; cpuMsPerMsg: number; receiverCpu: number; sandboxCpu: number };
    const rows: Row[] = [];
    const measure = async (label: string, pid: number, groupId: string, seen: () => number, reach: (n: number, t: number) => Promise<number>) => {
      const before = seen();
      const s0 = procSample(stack.sandbox.child.pid!);
      const p0 = procSample(pid);
      const t0 = performance.now();
      const done = reach(before + total, timeoutMs);
      await burst(stack.admin, groupId, contacts, total, senders, label);
      const tEnd = await done;
      const p1 = procSample(pid);
      const s1 = procSample(stack.sandbox.child.pid!);
      return {
        perSec: Math.round((total / (tEnd - t0)) * 1000),
        recvMs: round(tEnd - t0, 0),
        cpuMsPerMsg: round((p1.cpuMs - p0.cpuMs) / total, 2),
        receiverCpu: cpuPercent(p0, p1),
        sandboxCpu: cpuPercent(s0, s1),
      };
    };
    for (let r = 1; r <= rounds; r++) {
      rows.push({ round: r, case: 'bare Baileys rc14 (in-memory auth, own process)', ...(await measure('bare', bare.pid, bareGroup, bare.received, bare.reach)) });
      await sleep(500);
      rows.push({ round: r, case: 'Switchboard, stored', ...(await measure('stored', stack.service.child.pid!, ourGroup, frames.total, frames.reach)) });
      await sleep(500);
    }
    await bare.stop();
    frames.close();

    const med = (xs: number[]) => percentile(sorted(xs), 50);
    const cases = [...new Set(rows.map((r) => r.case))];
    const summary = cases.map((c) => {
      const rs = rows.filter((r) => r.case === c);
      return {
        case: c,
        perSec: med(rs.map((r) => r.perSec)),
        all: rs.map((r) => r.perSec),
        cpuMsPerMsg: med(rs.map((r) => r.cpuMsPerMsg)),
        receiverCpu: med(rs.map((r) => r.receiverCpu)),
      };
    });
    const bare0 = summary[0]!;
    const ratio = (n: number) => round(n / bare0.perSec, 2);
    const ms = (n: number) => round(n, 0);
    const markdown = [
      `### Groups (a): POST /send to a group of ${size} participants → answer (server ack), ${nGroups} groups × (1 first + ${sends} later) sends, one at a time`,
      '',
      '| send | n | p50 ms | p99 ms | max ms |',
      '|---|---:|---:|---:|---:|',
      `| first send to a group (sender-key distribution to ${size - 1} devices) | ${latency.first.length} | ${ms(percentile(latency.first, 50))} | ${ms(percentile(latency.first, 99))} | ${ms(latency.first.at(-1)!)} |`,
      `| later sends (one skmsg) | ${latency.later.length} | ${ms(percentile(latency.later, 50))} | ${ms(percentile(latency.later, 99))} | ${ms(latency.later.at(-1)!)} |`,
      '',
      `Answers without the server's acknowledgement within 10 s of the message leaving (ack 1): ${latency.pending}.`,
      '',
      `### Groups (b): ${nContacts} members write ${total} texts per burst into a group, ${senders} admin sends in flight, ${rounds} alternating rounds`,
      '',
      '| receiver | msg/s (median) | each round | vs bare | receiver CPU | CPU ms/msg | CPU efficiency vs bare |',
      '|---|---:|---|---:|---:|---:|---:|',
      ...summary.map(
        (r) =>
          `| ${r.case} | **${r.perSec}** | ${r.all.join(', ')} | **${ratio(r.perSec)}×** | ${r.receiverCpu} % | ${r.cpuMsPerMsg} | ${round(bare0.cpuMsPerMsg / r.cpuMsPerMsg, 2)}× |`,
      ),
      '',
      'msg/s: burst size ÷ (first admin send → last message stored / received). Goal: stored ≥ 0.8 × bare. When no receiver is at',
      "100 % CPU the sandbox's send rate limits both and the CPU efficiency column is the fairer comparison.",
    ].join('\n');
    return {
      name: 'groups',
      markdown,
      data: {
        size,
        groups: nGroups,
        sends,
        firstSendMs: latency.first.map(ms),
        pendingAnswers: latency.pending,
        laterSendMs: { p50: ms(percentile(latency.later, 50)), p99: ms(percentile(latency.later, 99)), max: ms(latency.later.at(-1)!) },
        ingest: { contacts: nContacts, messages: total, senders, rounds, summary: summary.map((r) => ({ ...r, vsBare: ratio(r.perSec) })), rows },
      },
    };
  } finally {
    await stack.close();
  }
}
