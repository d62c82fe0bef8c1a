/**
 * Search, surroundings and export end to end (issue 15): the real service in sandbox mode, a connection paired
 * after a 2,000-message history was seeded (synced at pairing), messages received from a contact's phone (text in
 * several scripts, an image with a caption, a document with a file name, a location, an edit), then:
 * search syntax (words, phrase, prefix, exclusion, diacritics, Cyrillic and Japanese), filters, edits and revokes followed,
 * per-user scoping (403, and /search only sees the caller's connections), malformed queries (400);
 * `around=` paging both ways over the whole history; JSONL export equal to the messages API; the HTML transcript
 * rendered by Chromium (screenshot in test-results/screenshots/, docs/screenshots/ with UPDATE_SCREENSHOTS=1); the ZIP export holding the media with identical bytes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchChromium } from '../helpers/chromium.ts';
import { unzip } from '../helpers/zip.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type Json, type SandboxService } from '../helpers/sandbox-service.ts';
import { saveShot } from '../helpers/screenshots.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const CAROL = '+15550107';
const CAROL_JID = '15550107@s.whatsapp.net';
const HISTORY = 2000;

const pngBytes = () => pngBytesOf(16, 16);

const pdfBytes = () => Buffer.concat([Buffer.from('%PDF-1.4\n% search export test\n'), Buffer.alloc(5000, 9), Buffer.from('\n%%EOF\n')]);

describe('search, surroundings and export through the sandbox', () => {
  let s: SandboxService;
  let id: string;
  const image = pngBytes();
  const pdf = pdfBytes();
  const received: Record<string, string> = {};

  const search = (q: string, extra: Record<string, string> = {}, route = `/connections/${id}/search`) =>
    s.api('GET', `${route}?${new URLSearchParams({ q, ...extra })}`);
  const hits = async (q: string, extra: Record<string, string> = {}) => {
    const res = await search(q, extra);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.results as Json[]).map((r) => r.message.id as string);
  };
  const receive = async (name: string, body: Record<string, unknown>) => {
    const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, ...body });
    expect(sent.status).toBe(201);
    const messageId = `false_${ALICE_JID}_${sent.body.id}`;
    await s.frame(`message ${messageId}`, (f) => f.event === 'message' && f.payload.id === messageId);
    received[name] = messageId;
    return { messageId, keyId: sent.body.id as string };
  };

  beforeAll(async () => {
    s = await startSandboxService();
    const seeded = await s.sandbox('POST', `/accounts/${enc(PHONE)}/history`, { with: CAROL, count: HISTORY });
    expect(seeded.status).toBe(201);
    id = await s.pair(PHONE);
    await receive('invoice', { text: 'The invoice for São Paulo is attached below' });
    await receive('draft', { text: 'Invoice draft — please do not pay yet' });
    await receive('russian', { text: 'Встреча в Москве завтра утром' });
    await receive('japanese', { text: '明日は東京タワーに行きます' });
    await receive('caption', { image: { base64: image.toString('base64'), mimetype: 'image/png', caption: 'Sunset over the harbour' } });
    await receive('document', { document: { base64: pdf.toString('base64'), mimetype: 'application/pdf', filename: 'Quarterly_Report-2026.pdf' } });
    await receive('location', { location: { latitude: 48.8584, longitude: 2.2945, name: 'Tour Eiffel' } });
    await receive('html', { text: '<script>document.title="owned"</script> <b>not bold</b> & more' });
    // the whole history is stored before the paging tests run
    await waitFor('the synced history', async () => {
      const r = await s.api('GET', `/connections/${id}/search?q=${encodeURIComponent('"History message" "of 2000"')}&limit=1&chatId=${CAROL_JID}`);
      const all = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/export?format=jsonl`);
      return r.status === 200 && String(all.body).trim().split('\n').length === HISTORY ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
  }, 180_000);

  afterAll(async () => {
    await s?.close();
  });

  it('finds words, phrases, prefixes and exclusions, without case or diacritics, in Cyrillic and Japanese', async () => {
    expect(await hits('invoice')).toEqual([received.draft, received.invoice]);
    expect(await hits('INVOICE -draft')).toEqual([received.invoice]);
    expect(await hits('"attached below"')).toEqual([received.invoice]);
    expect(await hits('"below attached"')).toEqual([]);
    expect(await hits('invo*')).toEqual([received.draft, received.invoice]);
    expect(await hits('sao paulo')).toEqual([received.invoice]);
    expect(await hits('МОСКВЕ')).toEqual([received.russian]);
    expect(await hits('東京')).toEqual([received.japanese]);
    const res = await search('sao');
    expect(res.body.results[0]).toMatchObject({
      snippet: 'The invoice for «São» Paulo is attached below',
      chatName: expect.any(String),
      message: { id: received.invoice, chatId: ALICE_JID, type: 'text', text: 'The invoice for São Paulo is attached below' },
    });
    expect(res.body.nextBefore).toBeNull();
  });

  it('finds captions, document file names and location names, and filters by chat, type, direction and time', async () => {
    expect(await hits('harbour')).toEqual([received.caption]);
    expect(await hits('quarterly report')).toEqual([received.document]);
    expect(await hits('eiffel')).toEqual([received.location]);
    expect(await hits('invoice', { type: 'image' })).toEqual([]);
    expect(await hits('harbour', { type: 'image' })).toEqual([received.caption]);
    expect(await hits('invoice', { chatId: ALICE })).toEqual([received.draft, received.invoice]); // a phone number
    expect(await hits('invoice', { chatId: CAROL_JID })).toEqual([]);
    expect(await hits('invoice', { fromMe: 'true' })).toEqual([]);
    expect(await hits('invoice', { senderJid: ALICE_JID, fromMe: 'false' })).toEqual([received.draft, received.invoice]);
    expect(await hits('invoice', { until: '1' })).toEqual([]);
    // paging through 2,000 history hits with nextBefore, most recent first
    const seen: string[] = [];
    let before: string | null = null;
    do {
      const page: Json = await search('history', { chatId: CAROL_JID, limit: '100', ...(before && { before }) });
      expect(page.status).toBe(200);
      seen.push(...page.body.results.map((r: Json) => r.message.text));
      before = page.body.nextBefore;
    } while (before);
    expect(seen.length).toBe(HISTORY);
    expect(seen[0]).toBe(`History message ${HISTORY} of ${HISTORY}`);
    expect(seen.at(-1)).toBe(`History message 1 of ${HISTORY}`);
    const relevant = await search('"message 1234"', { order: 'relevance' });
    expect(relevant.body.results.map((r: Json) => r.message.text)).toEqual([`History message 1234 of ${HISTORY}`]);
  });

  it('follows an edit from the contact', async () => {
    const { messageId, keyId } = await receive('edited', { text: 'meet me at the lighthouse' });
    expect(await hits('lighthouse')).toEqual([messageId]);
    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/edits`, { to: PHONE, messageId: keyId, text: 'meet me at the windmill' })).status).toBe(201);
    await s.frame('the edit', (f) => f.event === 'message.edited' && f.payload.id === messageId);
    expect(await hits('lighthouse')).toEqual([]);
    expect(await hits('windmill')).toEqual([messageId]);
  });

  it('drops a message revoked for everyone from the results', async () => {
    const sent = await s.api('POST', `/connections/${id}/send`, { chatId: ALICE, text: 'the zeppelin leaves at noon' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(await hits('zeppelin')).toEqual([sent.body.id]);
    const revoked = await s.api('DELETE', `/connections/${id}/messages/${encodeURIComponent(sent.body.id)}?chatId=${ALICE_JID}`);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(await hits('zeppelin')).toEqual([]);
    expect(await hits('noon')).not.toContain(sent.body.id);
  });

  it("answers 400 for malformed queries, 403 for another user's connection, and /search stays per user", async () => {
    for (const [q, message] of [
      ['', /at least one word/],
      ['"unbalanced', /unbalanced quote/],
      ['-only -exclusions', /not excluded/],
      ['*** ---', /at least one word/],
    ] as const) {
      const res = await search(q);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, message: expect.stringMatching(message) });
    }
    expect((await search('x', { before: 'bm90IGEgY3Vyc29y' })).status).toBe(400);

    const all = await search('sao paulo', {}, '/search');
    expect(all.status).toBe(200);
    expect(all.body.results.map((r: Json) => [r.connectionId, r.message.id])).toEqual([[id, received.invoice]]);

    const bob = await s.service.issueLocalToken('bob', 'search-test');
    const asBob = (route: string) => fetch(`${s.apiUrl}${route}`, { headers: { authorization: `Bearer ${bob}` } });
    const forbidden = await asBob(`/connections/${id}/search?q=invoice`);
    expect(forbidden.status).toBe(403);
    expect((await asBob(`/connections/${id}/chats/${ALICE_JID}/export`)).status).toBe(403);
    expect((await asBob(`/connections/${id}/chats/${ALICE_JID}/messages?around=${received.invoice}`)).status).toBe(403);
    const bobs = (await (await asBob('/search?q=invoice')).json()) as Json;
    expect(bobs).toEqual({ results: [], nextBefore: null });
  });

  it(`pages around a message both ways over the ${HISTORY}-message history`, async () => {
    const target = (await hits('"message 1000 of"', { chatId: CAROL_JID }))[0]!;
    const page = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?around=${encodeURIComponent(target)}&limit=51`);
    expect(page.status).toBe(200);
    const texts = page.body.messages.map((m: Json) => m.text);
    expect(texts[25]).toBe(`History message 1000 of ${HISTORY}`);
    expect(texts[0]).toBe(`History message 1025 of ${HISTORY}`);
    expect(texts[50]).toBe(`History message 975 of ${HISTORY}`);
    const older: string[] = [];
    let before: string | null = page.body.nextBefore;
    while (before) {
      const p = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?limit=200&before=${before}`);
      older.push(...p.body.messages.map((m: Json) => m.text));
      before = p.body.nextBefore;
      if (!before) expect(p.body.historyStartsAt).toEqual(expect.any(Number));
    }
    const newer: string[] = [];
    let after: string | null = page.body.nextAfter;
    while (after) {
      const p = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?limit=200&after=${after}`);
      expect(p.status).toBe(200);
      newer.unshift(...p.body.messages.map((m: Json) => m.text));
      after = p.body.nextAfter;
    }
    const whole = [...newer, ...texts, ...older];
    expect(whole).toEqual(Array.from({ length: HISTORY }, (_, i) => `History message ${HISTORY - i} of ${HISTORY}`));
    // the plain first page is unchanged: no nextAfter field
    const first = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?limit=5`);
    expect(Object.keys(first.body).sort()).toEqual(['historyStartsAt', 'messages', 'nextBefore']);
    expect((await s.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?around=${encodeURIComponent(target)}`)).status).toBe(404);
    expect((await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?around=${encodeURIComponent(target)}&before=x`)).status).toBe(400);
  });

  it('exports a chat as JSONL equal to the messages API, oldest first', async () => {
    const api: Json[] = [];
    let before: string | null = null;
    do {
      const p: Json = await s.api('GET', `/connections/${id}/chats/${CAROL_JID}/messages?limit=500${before ? `&before=${before}` : ''}`);
      api.push(...p.body.messages);
      before = p.body.nextBefore;
    } while (before);
    const res = await s.raw(`/connections/${id}/chats/${CAROL_JID}/export?format=jsonl`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = res.bytes.toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Json);
    expect(lines.length).toBe(HISTORY);
    expect(lines).toEqual(api.reverse());
    const window = await s.raw(`/connections/${id}/chats/${CAROL_JID}/export?format=jsonl&since=${lines[10].timestamp}&until=${lines[19].timestamp}`);
    expect(window.bytes.toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l).id)).toEqual(lines.slice(10, 20).map((m) => m.id));
  });

  it('exports a readable, self-contained HTML transcript that Chromium renders (escaped)', async () => {
    const res = await s.raw(`/connections/${id}/chats/${ALICE_JID}/export?format=html`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = res.bytes.toString('utf8');
    // Self-contained: nothing to load. A media file's URL is named only as data (data-media-url), never fetched.
    expect(html).toMatch(/data-media-url="http:\/\/127\.0\.0\.1:\d+\/api\/connections\//);
    expect(html.replace(/ data-media-url="[^"]*"/g, '')).not.toMatch(/<script|<link|src=|https?:\/\//i);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-export-'));
    const file = path.join(dir, 'transcript.html');
    fs.writeFileSync(file, res.bytes);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(`file://${file}`);
      const body = await page.locator('main').innerText();
      expect(body).toContain('The invoice for São Paulo is attached below');
      expect(body).toContain('明日は東京タワーに行きます');
      expect(body).toContain('[document: Quarterly_Report-2026.pdf]');
      expect(body).toContain('<script>document.title="owned"</script> <b>not bold</b> & more');
      expect(await page.title()).not.toBe('owned');
      expect(await page.locator('main b').count()).toBe(0);
      expect(requests).toEqual([`file://${file}`]);
      await saveShot(page, 'search-export-html');
    } finally {
      await browser.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('console: the top-bar search opens the thread at the hit, highlighted, with newer pages on demand', { timeout: 60_000 }, async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`${new URL(s.apiUrl).origin}/`);
      await page.getByTestId('token-input').fill(s.token);
      await page.getByRole('button', { name: 'Open console' }).click();
      await page.getByTestId('search-box').fill('"message 1500 of"');
      await page.getByTestId('search-box').press('Enter');
      const result = page.getByTestId('search-result');
      await result.first().waitFor();
      expect(await result.count()).toBe(1);
      expect(await page.locator('.search-snippet mark').allInnerTexts()).toEqual(['message 1500 of']);
      await result.first().click();
      const hit = page.getByTestId('search-hit');
      await hit.waitFor();
      expect(await hit.innerText()).toContain(`History message 1500 of ${HISTORY}`);
      // scrolled into the thread's view (evaluated in the page)
      await page.waitForFunction(`(() => {
        const el = document.querySelector('[data-testid="search-hit"]').getBoundingClientRect();
        const box = document.querySelector('[data-testid="thread-scroll"]').getBoundingClientRect();
        return el.top >= box.top && el.bottom <= box.bottom;
      })()`);
      await saveShot(page, 'search-jump');
      // newer messages below the hit load on demand: as the operator scrolls down (or with Load newer messages)
      const newer = page.getByText(`History message 1530 of ${HISTORY}`);
      await waitFor('a newer page below the hit', async () => {
        if ((await newer.count()) > 0) return true;
        await page.getByTestId('thread-scroll').evaluate((el) => el.scrollBy(0, 300));
        return undefined;
      }, { intervalMs: 200 });
    } catch (err) {
      await (await browser.contexts()[0]?.pages()[0])?.screenshot({ path: '/tmp/search-console-failure.png' });
      throw err;
    } finally {
      await browser.close();
    }
  });

  it('exports a ZIP with the transcript and the media files, bytes identical', async () => {
    const res = await s.raw(`/connections/${id}/chats/${ALICE_JID}/export?format=html&media=true`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    const entries = await unzip(res.bytes);
    const media = [...entries.keys()].filter((n) => n.startsWith('media/'));
    expect(media.length).toBe(2);
    const bodies = media.map((n) => entries.get(n)!);
    expect(bodies.some((b) => b.equals(image))).toBe(true);
    expect(bodies.some((b) => b.equals(pdf))).toBe(true);
    const transcript = entries.get('transcript.html')!.toString('utf8');
    for (const name of media) expect(transcript).toContain(`href="${name}"`);
    expect(JSON.parse(entries.get('media-missing.json')!.toString('utf8'))).toEqual({ missing: [] });
    const jsonl = await unzip((await s.raw(`/connections/${id}/chats/${ALICE_JID}/export?format=jsonl&media=true`)).bytes);
    const inZip = jsonl.get('transcript.jsonl')!.toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l).id as string);
    const viaApi = (await s.api('GET', `/connections/${id}/chats/${ALICE_JID}/messages?limit=500`)).body.messages.map((m: Json) => m.id);
    expect(inZip).toEqual(viaApi.reverse());
    for (const messageId of Object.values(received)) expect(inZip).toContain(messageId);
  });
});
