/**
 * Search contract on both engines: SQLite FTS5 (service/db/search.ts) and PostgreSQL full-text search
 * (service/db/pg/repos/search.ts) give the same hits, in the same order, with the same snippets, for the query
 * syntax (words, "phrases", prefix*, -exclusion, accents, non-Latin scripts, captions and file names), the same
 * 400 refusals, the same filters, per-user scope, paging in both orders, relevance over the same window, the index
 * kept in step with edits, revokes, rollbacks and a stopped connection, and the backfill of unindexed messages.
 * A seeded random corpus and random queries compare the two beyond the hand-picked cases.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../service/db/messages.ts';
import { RELEVANCE_WINDOW, type SearchFilters } from '../../service/db/search.ts';
import { startStoreSearchBackfill } from '../../service/db/search-backfill.ts';
import { ServiceError } from '../../service/errors.ts';
import { incomingText } from '../helpers/messages.ts';
import type { Repos } from '../../service/db/store-api.ts';
import { CONNECTION, openEngines, type Engines } from './message-engines.ts';

const CHAT = '15550101@s.whatsapp.net';
const OTHER = '15550202@s.whatsapp.net';

let e: Engines;
beforeEach(async () => {
  e = await openEngines();
});
afterEach(async () => {
  await e.close();
});

const put = (m: StoredMessage, c = CONNECTION) => e.both((r) => r.messages.upsert(c, m));

/** Every page of a search (walking nextBefore), hits only: cursors are opaque and may differ between engines. */
async function allHits(r: Repos, q: string, f: Partial<SearchFilters>, order: 'recent' | 'relevance', limit = 7) {
  const hits: Array<{ messageId: string; snippet: string }> = [];
  let before: string | undefined;
  do {
    const page = await r.search.search(
      q,
      { connectionIds: [CONNECTION], ...f },
      { limit, order, ...(before && { before }) },
    );
    hits.push(...page.hits.map((h) => ({ messageId: h.messageId, snippet: h.snippet })));
    before = page.nextBefore ?? undefined;
  } while (before);
  return hits;
}

const ids = (q: string, f: Partial<SearchFilters> = {}, order: 'recent' | 'relevance' = 'recent') =>
  e.both(async (r) => (await allHits(r, q, f, order, 50)).map((h) => h.messageId.split('_').pop()));

async function status400(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).statusCode).toBe(400);
    return (err as Error).message;
  }
  throw new Error('expected a 400');
}

describe('search on both engines', () => {
  it('finds words, phrases, prefixes, without case or diacritics, in non-Latin scripts, captions and file names', async () => {
    await put(incomingText(CHAT, 'a', 100, 'The invoice for São Paulo is due'));
    await put(incomingText(CHAT, 'b', 101, 'invoice draft, do not pay'));
    await put(incomingText(CHAT, 'c', 102, 'Встреча в Москве завтра'));
    await put(incomingText(CHAT, 'd', 103, '明日は東京タワーに行きます'));
    await put({
      ...incomingText(CHAT, 'e', 104, 'holiday photo'),
      type: 'image',
      media: { url: '/x', mimetype: 'image/jpeg', filename: null, size: 1 },
    });
    await put({
      ...incomingText(CHAT, 'f', 105, ''),
      type: 'document',
      media: { url: '/y', mimetype: 'application/pdf', filename: 'Quarterly_Report-2026.pdf', size: 1 },
    });
    expect(await ids('invoice')).toEqual(['b', 'a']);
    expect(await ids('INVOICE -draft')).toEqual(['a']);
    expect(await ids('"is due"')).toEqual(['a']);
    expect(await ids('"due is"')).toEqual([]);
    expect(await ids('invo*')).toEqual(['b', 'a']);
    expect(await ids('"invoice fo"*')).toEqual(['a']);
    expect(await ids('sao paulo')).toEqual(['a']);
    expect(await ids('SÃO')).toEqual(['a']);
    expect(await ids('москве')).toEqual(['c']);
    expect(await ids('東京')).toEqual(['d']);
    expect(await ids('タワー')).toEqual(['d']);
    expect(await ids('photo')).toEqual(['e']);
    expect(await ids('quarterly report')).toEqual(['f']);
    expect(await ids('report-2026')).toEqual(['f']);
    expect(await ids('pdf -quarterly')).toEqual([]);
    const snippets = await e.both(async (r) => (await allHits(r, 'sao', {}, 'recent')).map((h) => h.snippet));
    expect(snippets).toEqual(['The invoice for «São» Paulo is due']);
    expect(await e.both(async (r) => (await allHits(r, '東京', {}, 'recent'))[0]!.snippet)).toBe(
      '明日は«東京»タワーに行きます',
    );
  });

  it('refuses bad syntax and bad cursors with the same 400 on both', async () => {
    await put(incomingText(CHAT, 'a', 100, 'lunch'));
    for (const q of [
      '',
      '  ?! ** ',
      '"open phrase',
      '-spam -"bulk mail"',
      'x'.repeat(501),
      Array.from({ length: 33 }, (_, i) => `w${i}`).join(' '),
    ]) {
      const messages = [];
      for (const r of [e.sqlite.store.read, e.postgres.store.read])
        messages.push(
          await status400(r.search.search(q, { connectionIds: [CONNECTION] }, { limit: 5, order: 'recent' })),
        );
      expect(messages[1]).toBe(messages[0]);
    }
    for (const [before, order] of [
      ['garbage', 'recent'],
      [Buffer.from('r5').toString('base64url'), 'relevance'],
      [Buffer.from('o5:1').toString('base64url'), 'recent'],
    ] as const) {
      const messages = [];
      for (const r of [e.sqlite.store.read, e.postgres.store.read])
        messages.push(
          await status400(r.search.search('lunch', { connectionIds: [CONNECTION] }, { limit: 5, order, before })),
        );
      expect(messages[1]).toBe(messages[0]);
    }
    // Syntax characters of either engine are plain words.
    await put(incomingText(CHAT, 'b', 101, "NEAR a OR b col x y it's & | ! <-> :* a:b"));
    for (const q of [
      'NEAR(a OR b) col:x ^y',
      "it's",
      '& | !',
      '<->',
      ':*',
      'a:b',
      "'",
      '\\',
      'b)*',
      '-a -b',
      'it -s',
    ]) {
      await e.both(async (r) => {
        try {
          return await allHits(r, q, {}, 'recent');
        } catch (err) {
          return { error: (err as Error).message };
        }
      });
    }
  });

  it('follows edits, revokes, rollbacks and a stopped connection', async () => {
    await put(incomingText(CHAT, 'a', 100, 'meet at the station'));
    expect(await ids('station')).toEqual(['a']);
    await e.both((r) => r.messages.edit(CONNECTION, `false_${CHAT}_a`, 'meet at the harbour', 200));
    expect(await ids('station')).toEqual([]);
    expect(await ids('harbour')).toEqual(['a']);
    await put(incomingText(CHAT, 'a', 100, 'meet at the airport'));
    expect(await ids('harbour')).toEqual([]);
    expect(await ids('airport')).toEqual(['a']);
    await e.both((r) => r.messages.revoke(CONNECTION, `false_${CHAT}_a`));
    expect(await ids('airport')).toEqual([]);
    // a rolled-back write leaves the index as it was
    await e.both(async (_r, _engine, store) => {
      const failed = store.tx(async (t) => {
        await t.messages.upsert(CONNECTION, incomingText(CHAT, 'z', 300, 'rolled back words'));
        throw new Error('abort');
      });
      return failed.catch((err: Error) => err.message);
    });
    expect(await ids('rolled')).toEqual([]);
    await put(incomingText(CHAT, 'b', 101, 'still here'));
    expect(await ids('still')).toEqual(['b']);
    // A later copy without the media keeps the stored media (and its file name stays searchable); another sender.
    const doc = {
      ...incomingText(CHAT, 'd', 102, 'see attached'),
      type: 'document' as const,
      media: { url: '/y', mimetype: 'application/pdf', filename: 'Budget-2027.pdf', size: 1 },
    };
    await put(doc);
    await put({ ...doc, media: null, text: 'see the attached budget' });
    expect(await ids('budget')).toEqual(['d']);
    expect(await ids('"budget 2027"')).toEqual(['d']);
    await put({ ...doc, media: null, text: '', senderJid: OTHER });
    expect(await ids('2027', { senderJid: CHAT })).toEqual(['d']); // a copy does not change the sender
    await put({ ...incomingText(CHAT, 'e', 103, ''), type: 'text' });
    await put({ ...incomingText(CHAT, 'e', 103, 'now with words') });
    await put({ ...incomingText(CHAT, 'e', 103, '  ') });
    expect(await ids('words')).toEqual([]);
    // The index's own methods: remove a row, bring it back from the message, and the chat's display name.
    await e.both((r) => r.search.remove(CONNECTION, `false_${CHAT}_b`));
    expect(await ids('still')).toEqual([]);
    await e.both((r) => r.search.reindex(CONNECTION, `false_${CHAT}_b`));
    await e.both((r) => r.search.reindex(CONNECTION, 'nope'));
    expect(await ids('still')).toEqual(['b']);
    await e.both(async (r) => {
      const names = [await r.search.chatName(CONNECTION, CHAT)];
      await r.contacts.upsert(CONNECTION, { jid: CHAT, pushName: 'Alice push' });
      names.push(await r.search.chatName(CONNECTION, CHAT));
      await r.chats.upsertMeta(CONNECTION, { id: CHAT, isGroup: false, name: 'Alice chat' });
      names.push(await r.search.chatName(CONNECTION, CHAT), await r.search.chatName(CONNECTION, OTHER));
      return names;
    });
    await e.setStatus('stopped');
    expect(await ids('still')).toEqual([]);
  });

  it('keeps the index in the group commit: a unit that throws takes its message and its index row with it', async () => {
    await e.both(async (_r, _engine, store) => {
      const kept = store.ingest(async (t) => t.messages.upsert(CONNECTION, incomingText(CHAT, 'a', 100, 'kept words')));
      const failed = store
        .ingest(async (t) => {
          await t.messages.upsert(CONNECTION, incomingText(CHAT, 'b', 101, 'dropped words'));
          throw new Error('unit failed');
        })
        .catch((err: Error) => err.message);
      return [await kept, await failed];
    });
    expect(await ids('words')).toEqual(['a']);
    expect(await e.both((r) => r.messages.get(CONNECTION, `false_${CHAT}_b`))).toBeUndefined();
  });

  it('filters by chat, sender, type, kind, direction, time, scopes to the given connections, and pages in both orders', async () => {
    const other = await e.addConnection('99999999-2222-4333-8444-555555555555');
    for (let i = 0; i < 30; i++) {
      const m = incomingText(
        i % 2 ? CHAT : OTHER,
        `k${i}`,
        1000 + Math.floor(i / 3),
        `lunch number ${i}${i === 7 ? ' lunch lunch lunch' : ''}`,
      );
      await put(i % 5 === 0 ? { ...m, fromMe: true, id: m.id.replace('false_', 'true_') } : m);
      if (i % 4 === 0) await put(incomingText(CHAT, `o${i}`, 1000 + i, `lunch elsewhere ${i}`), other);
    }
    expect((await ids('lunch', { chatId: CHAT })).length).toBe(15);
    expect((await ids('lunch', { senderJid: OTHER })).length).toBe(15);
    expect(await ids('lunch', { fromMe: true })).toEqual(['k25', 'k20', 'k15', 'k10', 'k5', 'k0']);
    expect(await ids('lunch', { type: 'image' })).toEqual([]);
    expect((await ids('lunch', { kind: 'text' })).length).toBe(30);
    expect(await ids('lunch', { since: 1005, until: 1006 })).toEqual(['k20', 'k19', 'k18', 'k17', 'k16', 'k15']);
    expect(await ids('lunch', { until: -1 })).toEqual([]);
    expect((await ids('elsewhere', { connectionIds: [other] })).length).toBe(8);
    expect(await ids('elsewhere')).toEqual([]);
    expect((await ids('lunch', { connectionIds: [CONNECTION, other] })).length).toBe(38);
    expect(await ids('lunch', { connectionIds: [] })).toEqual([]);
    expect((await ids('lunch', {}, 'relevance'))[0]).toBe('k7');
    for (const order of ['recent', 'relevance'] as const) {
      for (const limit of [1, 7, 30, 31]) {
        const hits = await e.both((r) => allHits(r, 'lunch', { chatId: CHAT }, order, limit));
        expect(new Set(hits.map((h) => h.messageId)).size).toBe(15);
      }
      await e.both((r) => allHits(r, 'lunch -number', { connectionIds: [CONNECTION, other] }, order, 3));
      await e.both((r) =>
        allHits(r, 'lunch', { connectionIds: [CONNECTION, other], fromMe: false, since: 1002 }, order, 4),
      );
    }
  });

  it(
    'ranks by relevance within the most recent RELEVANCE_WINDOW matches, the same window on every page',
    { timeout: 120_000 },
    async () => {
      await e.both((_r, _engine, store) =>
        store.tx(async (t) => {
          await t.messages.upsert(CONNECTION, incomingText(CHAT, 'oldest', 10, 'alpha alpha alpha'));
          for (let i = 0; i < RELEVANCE_WINDOW + 50; i++) {
            const text = `alpha and some other words ${i}${i % 97 === 0 ? ' alpha' : ''}`;
            await t.messages.upsert(CONNECTION, incomingText(CHAT, `k${i}`, 100 + i, text));
          }
        }),
      );
      const hits = await e.both(async (r) => {
        const seen: string[] = [];
        let before: string | undefined;
        do {
          const page = await r.search.search(
            'alpha',
            { connectionIds: [CONNECTION] },
            { limit: 500, order: 'relevance', ...(before && { before }) },
          );
          seen.push(...page.hits.map((h) => h.messageId));
          before = page.nextBefore ?? undefined;
          if (seen.length === 500)
            await r.messages.upsert(CONNECTION, incomingText(CHAT, 'late', 99_999, 'alpha alpha alpha alpha'));
        } while (before);
        return seen;
      });
      expect(new Set(hits).size).toBe(RELEVANCE_WINDOW); // the late arrival ranks first: one hit shifts to the next page
      expect(hits).not.toContain(`false_${CHAT}_oldest`);
      expect(hits).not.toContain(`false_${CHAT}_late`);
      expect(await ids('"alpha alpha"', {}, 'relevance')).toEqual(['late', 'oldest']);
      expect((await ids('alpha words', {}, 'relevance')).slice(0, 3)).toEqual(['k5044', 'k4947', 'k4850']);
    },
  );

  it('indexes stored messages left unindexed (the backfill marker) in resumable batches', async () => {
    for (let i = 1; i <= 25; i++) await put(incomingText(CHAT, `o${i}`, 1000 + i, `archived note ${i} Ångström`));
    // Forget the index, as a database from before it (or one copied without it) has none.
    await e.exec(
      `DELETE FROM message_search; INSERT INTO settings (key, value) SELECT 'search.backfill',
         json_object('after', -1, 'upTo', MAX(seq), 'done', 0, 'total', COUNT(*)) FROM messages`,
      `DELETE FROM message_search; INSERT INTO settings (key, value) SELECT 'search.backfill',
         json_build_object('after', -1, 'upTo', MAX(seq), 'done', 0, 'total', COUNT(*))::text FROM messages`,
    );
    expect(await ids('angstrom')).toEqual([]);
    const steps = await e.both(async (r) => {
      const out = [];
      for (let k = 0; k < 2; k++) out.push(await r.search.backfillStep(10));
      return out;
    });
    expect(steps).toEqual([
      { done: 10, total: 25, finished: false },
      { done: 20, total: 25, finished: false },
    ]);
    // The rest by the background build over each Store, as the service runs it.
    await e.both(async (_r, _engine, store) => {
      const logs: string[] = [];
      const logger = {
        info: (_: unknown, msg: string) => logs.push(msg),
        error: (_: unknown, msg: string) => logs.push(msg),
      };
      await startStoreSearchBackfill({ store, logger, batch: 10 }).done;
      return logs;
    });
    expect(await e.both((r) => r.search.backfillStep(10))).toBeUndefined();
    expect((await ids('angstrom')).length).toBe(25);
    expect(await ids('"note 1"')).toEqual(['o1']);
  });

  it('gives the same hits, order and snippets over a random corpus and random queries', async () => {
    let s = 12345;
    const rnd = (n: number) => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s % n);
    const words = [
      'alpha',
      'Beta',
      'gamma',
      'café',
      'CAFE',
      'naïve',
      'straße',
      'Ærø',
      'çà',
      'delta',
      'epsilon',
      'zeta',
      'eta',
      'theta',
      '東京',
      'Москва',
      'ﬁne',
      'x2',
      '42',
      'İstanbul',
      'e\u0301',
      'Ǆemal',
      '🥰',
      'ǅ',
      'ΆΣ',
      'über',
    ];
    const seps = [' ', ' ', ' ', ', ', '. ', ': ', ' - ', '\n', '...', '!', ' (', ') ', '_', "'"];
    const chats = [CHAT, OTHER, '120363000000000001@g.us'];
    for (let i = 0; i < 120; i++) {
      let text = '';
      const n = 1 + rnd(40);
      for (let k = 0; k < n; k++) text += words[rnd(words.length)]! + seps[rnd(seps.length)]!;
      const m = incomingText(chats[rnd(3)]!, `r${i}`, 5000 + rnd(60), text);
      await put(rnd(4) === 0 ? { ...m, fromMe: true, id: m.id.replace('false_', 'true_') } : m);
    }
    for (let q = 0; q < 60; q++) {
      const terms: string[] = [];
      const n = 1 + rnd(3);
      for (let k = 0; k < n; k++) {
        const w = words[rnd(words.length)]!;
        const kind = rnd(6);
        if (kind === 0) terms.push(`"${w} ${words[rnd(words.length)]}"`);
        else if (kind === 1) terms.push(`${w.slice(0, 1 + rnd(w.length))}*`);
        else if (kind === 2 && k > 0) terms.push(`-${w}`);
        else terms.push(w);
      }
      const query = terms.join(' ');
      for (const order of ['recent', 'relevance'] as const) {
        const f: Partial<SearchFilters> = rnd(3) === 0 ? { chatId: chats[rnd(3)]! } : {};
        const limit = 1 + rnd(20);
        const hits = await e.both(async (r) => {
          try {
            return await allHits(r, query, f, order, limit);
          } catch (err) {
            return { error: (err as Error).message };
          }
        });
        void hits;
      }
    }
  }, 120_000);
});
