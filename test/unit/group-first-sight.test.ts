/**
 * The queries for groups first seen through a message (session-groups.ts `onSeen`, issue 25 §6), on a real SQLite
 * store and event log, with a stand-in for the socket's `groupMetadata` that the test answers by hand: one query per
 * group however many messages arrive, nothing waits for it, one query at a time and paced, a failed query asked
 * again after a backoff (doubled per failure) and not once per message, a refusal only when the group speaks again
 * after the backoff, nothing asked without a socket and the queue resumed by the next one. The end-to-end path
 * (real Baileys, the sandbox) is test/e2e/group-first-sight.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Boom } from '@hapi/boom';
import type { GroupMetadata, WASocket } from '@whiskeysockets/baileys';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../service/db/store.ts';
import { openDataPlane } from '../../service/data-plane.ts';
import { SessionContacts } from '../../service/engine/session-contacts.ts';
import { SessionGroups, type FirstSightPacing } from '../../service/engine/session-groups.ts';
import { waitFor } from '../helpers/wait.ts';

const CONNECTION = '11111111-2222-4333-8444-555555555555';
const OWN = '15550100@s.whatsapp.net';
const ALICE = '15550101@s.whatsapp.net';
const PACING: FirstSightPacing = { intervalMs: 60, retryMs: 150, maxRetryMs: 300 };
const groupJid = (n: number) => `12036300000000000${n}@g.us`;
const metaOf = (jid: string, subject: string, members = [OWN, ALICE]): GroupMetadata => ({
  id: jid,
  subject,
  desc: `About ${subject}`,
  owner: ALICE,
  participants: members.map((id) => ({ id, admin: null })),
});

/** A query the test answers: `resolve(meta)` or `reject(err)`. */
interface Query {
  jid: string;
  at: number;
  resolve(meta: GroupMetadata): void;
  reject(err: unknown): void;
}

describe('groups first seen through a message', () => {
  let dir: string;
  let store: Store;
  let userId: string;
  let queries: Query[];
  let sock: WASocket | undefined;
  let groups: SessionGroups;

  const newSocket = () =>
    ({
      groupMetadata: (jid: string) =>
        new Promise<GroupMetadata>((resolve, reject) => queries.push({ jid, at: Date.now(), resolve, reject })),
      groupFetchAllParticipating: () => new Promise(() => undefined),
    }) as unknown as WASocket;
  const updates = () => store.events.after(userId, 0, 100).filter((e) => e.event === 'group.update');
  const chatName = (jid: string) =>
    store.chats.list(CONNECTION, { limit: 100, offset: 0, unreadOnly: false }).find((c) => c.id === jid)?.name;
  const settle = () => new Promise((r) => setTimeout(r, 20));
  const queryFor = (jid: string, nth = 1) =>
    waitFor(`query ${nth} of ${jid}`, () => queries.filter((q) => q.jid === jid)[nth - 1], {
      intervalMs: 5,
      timeoutMs: 5_000,
    });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-first-sight-'));
    const plane = openDataPlane({ dataDir: dir, role: 'tool' });
    store = plane.store;
    userId = store.users.create('alice').id;
    store.connections.insert({ id: CONNECTION, userId, name: null, workerId: 'local' });
    queries = [];
    sock = newSocket();
    // the cache already holds a group, so the connect lists nothing (`refresh` does not ask for every group)
    groups = new SessionGroups({
      store,
      events: plane.events,
      connectionId: CONNECTION,
      userId,
      log: pino({ level: 'silent' }),
      contacts: new SessionContacts(store, CONNECTION, () => ({ jid: OWN, lid: null, name: 'Me' })),
      socket: () => sock,
      isCurrent: (s) => s === sock,
      pacing: PACING,
    });
    groups.cache.set(metaOf(groupJid(9), 'Known'));
  });
  afterEach(() => {
    groups.forgetSeen();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('asks once per group however many messages arrive, without waiting for the answer', async () => {
    const g = groupJid(1);
    for (let i = 0; i < 5; i++) groups.onSeen([g, 'status@broadcast', ALICE, groupJid(9)]); // returns at once
    const q = await queryFor(g);
    groups.onSeen([g]);
    await settle();
    expect(queries.map((x) => x.jid)).toEqual([g]); // not the known group, not the 1:1 chat, not again
    expect(chatName(g)).toBeUndefined();

    q.resolve(metaOf(g, 'Quiet corner'));
    await waitFor('the chat named', () => chatName(g) ?? undefined, { intervalMs: 5 });
    expect(chatName(g)).toBe('Quiet corner');
    expect(groups.cache.get(g)?.participants).toHaveLength(2);
    expect(updates().map((e) => e.payload)).toEqual([
      { groupId: g, subject: 'Quiet corner', description: 'About Quiet corner', by: null },
    ]);

    groups.onSeen([g, g]);
    await settle();
    expect(queries).toHaveLength(1);
    expect(updates()).toHaveLength(1);
  });

  it('asks one group at a time, at most one query per interval', async () => {
    const jids = [1, 2, 3].map(groupJid);
    groups.onSeen(jids);
    const first = await queryFor(jids[0]!);
    await new Promise((r) => setTimeout(r, PACING.intervalMs * 2));
    expect(queries).toHaveLength(1); // the next waits for this answer
    first.resolve(metaOf(jids[0]!, 'One'));
    const second = await queryFor(jids[1]!);
    second.resolve(metaOf(jids[1]!, 'Two'));
    const third = await queryFor(jids[2]!);
    third.resolve(metaOf(jids[2]!, 'Three'));
    await waitFor('three names', () => (chatName(jids[2]!) ? true : undefined), { intervalMs: 5 });
    // a slow answer does not make the next query come sooner than the interval after it started
    expect(second.at - first.at).toBeGreaterThanOrEqual(PACING.intervalMs * 2);
    expect(third.at - second.at).toBeGreaterThanOrEqual(PACING.intervalMs - 2);
    expect(updates().map((e) => (e.payload as { subject: string }).subject)).toEqual(['One', 'Two', 'Three']);
  });

  it('a failed query is asked again after a backoff that doubles, not once per message', async () => {
    const g = groupJid(1);
    groups.onSeen([g]);
    (await queryFor(g)).reject(new Boom('Timed Out', { statusCode: 408 }));
    const failedAt = Date.now();
    for (let i = 0; i < 10; i++) groups.onSeen([g]);
    await settle();
    expect(queries).toHaveLength(1);

    const second = await queryFor(g, 2); // by itself, after the backoff
    expect(second.at - failedAt).toBeGreaterThanOrEqual(PACING.retryMs - 5);
    second.reject(new Error('connection closed'));
    const secondFailedAt = Date.now();
    const third = await queryFor(g, 3);
    expect(third.at - secondFailedAt).toBeGreaterThanOrEqual(PACING.retryMs * 2 - 5);
    third.resolve(metaOf(g, 'At last'));
    await waitFor('the chat named', () => chatName(g) ?? undefined, { intervalMs: 5 });
    expect(updates()).toHaveLength(1);
  });

  it('a refusal is asked again only when the group speaks after the backoff', async () => {
    const g = groupJid(1);
    groups.onSeen([g]);
    (await queryFor(g)).reject(new Boom('item-not-found', { data: 404 }));
    await new Promise((r) => setTimeout(r, PACING.retryMs + 50));
    expect(queries).toHaveLength(1); // not asked again by itself
    groups.onSeen([g]);
    const again = await queryFor(g, 2);
    // an answer that does not list the account counts as a refusal too
    again.resolve(metaOf(g, 'Not mine', [ALICE]));
    await settle();
    groups.onSeen([g]);
    await settle();
    expect(queries).toHaveLength(2);
    expect(chatName(g)).toBeUndefined();
    expect(updates()).toEqual([]);
  });

  it('asks nothing without a socket; the next socket takes the queue up', async () => {
    const g = groupJid(1);
    sock = undefined;
    groups.onSeen([g]);
    await settle();
    expect(queries).toEqual([]);
    sock = newSocket();
    groups.refresh(sock);
    (await queryFor(g)).resolve(metaOf(g, 'After reconnect'));
    await waitFor('the chat named', () => chatName(g) ?? undefined, { intervalMs: 5 });

    // an answer that arrives after its socket was replaced is dropped, and the group asked on the new socket
    const h = groupJid(2);
    groups.onSeen([h]);
    const stale = await queryFor(h);
    sock = newSocket();
    stale.resolve(metaOf(h, 'Stale'));
    groups.refresh(sock);
    (await queryFor(h, 2)).resolve(metaOf(h, 'Fresh'));
    await waitFor('the chat named', () => chatName(h) ?? undefined, { intervalMs: 5 });
    expect(chatName(h)).toBe('Fresh');
  });
});
