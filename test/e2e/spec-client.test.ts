/**
 * Contract test (issue 17): a small client written only from the interface spec (interface-spec.md) — plain
 * `fetch`, its own minimal types, nothing imported from service/, renderer/ or the project's types — run against
 * the real `switchboard serve --sandbox` process. It pairs, pages the chats (`limit`/`offset`) and a chat's messages
 * (`before` = the previous page's `nextBefore` until it is null, then `historyStartsAt`), downloads the image a
 * contact sent through `media.url` exactly as given (bytes equal to what the contact sent), reacts with
 * `skipPresence`, and edits its own message.
 *
 * Where the spec says "not shown" (the body fields of send and react, the name of the field carrying a sent
 * message's id, the create-connection body) the client uses what the service documents (docs/api.md); those
 * places are marked NOT IN SPEC. The harness around the client (starting the service, the sandbox phones that scan
 * the QR code and send the image) uses the test helpers and the sandbox's admin API, which are not part of the
 * contract.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { decodeQrDataUrl } from '../helpers/qr.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';

// ---- the spec client -------------------------------------------------------------------------------------

/** §2.1 */
interface SpecConnection {
  id: string;
  userId: string;
  workerId: string;
  sessionName: string;
  phoneNumber: string | null;
  status: string;
  engine: string;
  createdAt: string;
  updatedAt: string;
}

/** §2.2 */
interface SpecProfile {
  id: string;
  pushName: string;
}

/** §2.3 */
interface SpecChat {
  id: string;
  name: string;
  isGroup: boolean;
  lastMessage: { body: string; timestamp: number; fromMe: boolean };
  unread: number;
}

/** §2.5 */
interface SpecMessage {
  id: string;
  chatId: string;
  timestamp: number;
  fromMe: boolean;
  senderJid: string;
  senderPushName: string;
  type: 'text' | 'image' | 'video' | 'audio' | 'document' | 'location' | 'contact';
  text: string;
  quotedMessageId: string | null;
  /** "media.url is a media-proxy URL fetched with the same Authorization: Bearer header". */
  media: { url: string } | null;
}

/** §4.2 */
interface SpecMessagePage {
  messages: SpecMessage[];
  nextBefore: string | null;
  historyStartsAt: number | null;
}

/** §7 */
interface SpecError {
  message: string;
  statusCode: number;
  error?: string;
}

class SpecApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: SpecError,
  ) {
    super(`${status} ${body.message}`);
  }
}

/** A client of the spec's REST API: `baseUrl` already ends in `/api` (§ intro), every path is relative to it. */
class SpecClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  /** §5: every endpoint except `GET /` needs `Authorization: Bearer <token>`. */
  private headers(json: boolean): Record<string, string> {
    return { Authorization: `Bearer ${this.token}`, ...(json ? { 'Content-Type': 'application/json' } : {}) };
  }

  async call<T>(method: string, pathAndQuery: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.baseUrl}${pathAndQuery}`, {
      method,
      headers: this.headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = (await res.json()) as unknown;
    if (!res.ok) throw new SpecApiError(res.status, data as SpecError);
    return data as T;
  }

  listConnections = () => this.call<SpecConnection[]>('GET', '/connections');
  /** NOT IN SPEC: the create body (the service documents `{ name? }`). */
  createConnection = () => this.call<SpecConnection>('POST', '/connections', {});
  connection = (id: string) => this.call<SpecConnection>('GET', `/connections/${encodeURIComponent(id)}`);
  /** §4.1: `{ value }`, a PNG data URL; 503 while the worker is booting (poll until available). */
  qr = (id: string) => this.call<{ value: string }>('GET', `/connections/${encodeURIComponent(id)}/qr`);
  me = (id: string) => this.call<SpecProfile>('GET', `/connections/${encodeURIComponent(id)}/me`);

  chats = (id: string, limit: number, offset: number) =>
    this.call<SpecChat[]>('GET', `/connections/${encodeURIComponent(id)}/chats?limit=${limit}&offset=${offset}`);

  messages = (id: string, chatId: string, limit: number, before?: string) =>
    this.call<SpecMessagePage>(
      'GET',
      `/connections/${encodeURIComponent(id)}/chats/${encodeURIComponent(chatId)}/messages?limit=${limit}` +
        (before ? `&before=${encodeURIComponent(before)}` : ''),
    );

  message = (id: string, messageId: string, chatId: string) =>
    this.call<SpecMessage>(
      'GET',
      `/connections/${encodeURIComponent(id)}/messages/${encodeURIComponent(messageId)}?chatId=${encodeURIComponent(chatId)}`,
    );

  /** Every chat, page by page. The unit of `offset` is not shown; the client takes it as a count of chats. */
  async allChats(id: string, pageSize: number): Promise<{ chats: SpecChat[]; pages: number }> {
    const chats: SpecChat[] = [];
    let pages = 0;
    for (;;) {
      const page = await this.chats(id, pageSize, chats.length);
      pages++;
      chats.push(...page);
      if (page.length < pageSize) return { chats, pages };
    }
  }

  /** §4.2 rules 1–2: pass `nextBefore` as `before` until it is null; `historyStartsAt` then holds the oldest timestamp. */
  async allMessages(id: string, chatId: string, pageSize: number): Promise<{ messages: SpecMessage[]; pages: number; historyStartsAt: number | null }> {
    const messages: SpecMessage[] = [];
    let before: string | undefined;
    for (let pages = 1; ; pages++) {
      const page = await this.messages(id, chatId, pageSize, before);
      messages.push(...page.messages);
      if (page.nextBefore === null) return { messages, pages, historyStartsAt: page.historyStartsAt };
      before = page.nextBefore;
    }
  }

  /** §2.5: fetch `media.url` as given, with the same Authorization header. */
  async download(media: { url: string }): Promise<Buffer> {
    const res = await fetch(media.url, { headers: this.headers(false) });
    if (!res.ok) throw new SpecApiError(res.status, (await res.json()) as SpecError);
    return Buffer.from(await res.arrayBuffer());
  }

  /**
   * §4.3: `/send` with `skipPresence`. NOT IN SPEC: the body fields `chatId`/`text` (as the edit body has them) and
   * the response field with the new message's id (`id`).
   */
  send = (id: string, chatId: string, text: string) =>
    this.call<{ id: string }>('POST', `/connections/${encodeURIComponent(id)}/send`, { chatId, text, skipPresence: true });

  /** §4.3 rule 2: `skipPresence` on every send endpoint. NOT IN SPEC: the fields `chatId`, `messageId`, `emoji`. */
  react = (id: string, chatId: string, messageId: string, emoji: string) =>
    this.call<unknown>('POST', `/connections/${encodeURIComponent(id)}/react`, { chatId, messageId, emoji, skipPresence: true });

  /** §4.3: `PUT /connections/:id/messages/:messageId` with `{ chatId, text }`. */
  edit = (id: string, messageId: string, chatId: string, text: string) =>
    this.call<unknown>('PUT', `/connections/${encodeURIComponent(id)}/messages/${encodeURIComponent(messageId)}`, { chatId, text });
}

// ---- the harness -----------------------------------------------------------------------------------------

const PHONE = '+15550100';
const ALICE = '+15550101';
const CAROL = '+15550107';
const ALICE_HISTORY = 23;
const CAROL_HISTORY = 4;

const pngBytes = () => pngBytesOf(9, 7);

interface PhoneMessage {
  id: string;
  text: string;
  reaction?: unknown;
  reactions: Array<{ from: string; emoji: string }>;
  edits: Array<{ text: string }>;
}

describe('a client written from the interface spec alone', { timeout: 120_000 }, () => {
  let dir: string;
  let service: ServiceProcess;
  let client: SpecClient;
  let connectionId: string;
  const image = pngBytes();
  let aliceChat: string;

  /** Sandbox admin API (harness, not the contract). */
  const sandbox = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${service.sandboxUrl}${route}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & PhoneMessage[] };
  };
  /** What Alice's phone received (oldest first). */
  const receivedByAlice = async () => (await sandbox('GET', `/accounts/${encodeURIComponent(ALICE)}/messages`)).body as PhoneMessage[];
  const atAlice = async (keyId: string) => (await receivedByAlice()).find((m) => m.id === keyId);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-spec-client-'));
    service = await startServe(['--sandbox', '--port', '0', '--data-dir', dir]);
    const token = (await runCli(['token', 'create', '--user', 'spec', '--data-dir', dir])).stdout.trim();
    client = new SpecClient(service.apiUrl, token);
    for (const [peer, count] of [[ALICE, ALICE_HISTORY], [CAROL, CAROL_HISTORY]] as const) {
      expect((await sandbox('POST', `/accounts/${encodeURIComponent(PHONE)}/history`, { with: peer, count })).status).toBe(201);
    }
  });

  afterAll(async () => {
    await service?.stop('SIGKILL');
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('pairs by the QR code and reaches online; the profile has the spec shape', async () => {
    const created = await client.createConnection();
    connectionId = created.id;
    expect((await client.listConnections()).map((c) => c.id)).toContain(connectionId);
    // §4.1: 503 while booting — poll until the QR is there.
    const qr = await waitFor('the QR code', async () => {
      try {
        return (await client.qr(connectionId)).value;
      } catch (err) {
        if (err instanceof SpecApiError && err.status === 503) return undefined;
        throw err;
      }
    });
    expect(qr).toMatch(/^data:image\/png;base64,/);
    expect((await sandbox('POST', `/accounts/${encodeURIComponent(PHONE)}/scan`, { qr: decodeQrDataUrl(qr) })).status).toBe(200);
    await waitFor('online', async () => ((await client.connection(connectionId)).status === 'online' ? true : undefined), { timeoutMs: 30_000 });
    const connection = await client.connection(connectionId);
    expect(connection.phoneNumber).toBe(PHONE);
    expect(connection.sessionName).toMatch(/^u_[^_]+_s_[^_]+$/);
    expect((await client.me(connectionId)).id).toMatch(/^\d+@[a-z.]+$/);
  });

  it('pages the chats with limit and offset: every chat once, each with a lastMessage object', async () => {
    const sent = await sandbox('POST', `/accounts/${encodeURIComponent(ALICE)}/messages`, {
      to: PHONE,
      image: { base64: image.toString('base64'), mimetype: 'image/png', caption: 'for the spec client' },
    });
    expect(sent.status).toBe(201);
    const { chats, pages } = await waitFor('both chats, Alice with her image as the last message', async () => {
      const all = await client.allChats(connectionId, 2);
      const alice = all.chats.find((c) => c.id.startsWith(`${ALICE.slice(1)}@`));
      const carol = all.chats.find((c) => c.id.startsWith(`${CAROL.slice(1)}@`));
      return alice?.lastMessage.body === 'for the spec client' && carol ? all : undefined;
    });
    expect(pages).toBeGreaterThan(1);
    expect(new Set(chats.map((c) => c.id)).size).toBe(chats.length);
    for (const chat of chats) {
      expect(typeof chat.name).toBe('string');
      expect(typeof chat.isGroup).toBe('boolean');
      expect(typeof chat.unread).toBe('number');
      expect(typeof chat.lastMessage.body).toBe('string');
      expect(Number.isInteger(chat.lastMessage.timestamp)).toBe(true);
      expect(typeof chat.lastMessage.fromMe).toBe('boolean');
    }
    aliceChat = chats.find((c) => c.id.startsWith(`${ALICE.slice(1)}@`))!.id;
  });

  it('pages a chat newest first with before = nextBefore until it is null, then historyStartsAt is the oldest message', async () => {
    // The history sync may still be arriving in chunks: walk until every seeded message is there.
    const { messages, pages, historyStartsAt } = await waitFor('the synced history', async () => {
      const walk = await client.allMessages(connectionId, aliceChat, 5);
      const texts = new Set(walk.messages.map((m) => m.text));
      return Array.from({ length: ALICE_HISTORY }, (_, i) => `History message ${i + 1} of ${ALICE_HISTORY}`).every((t) => texts.has(t))
        ? walk
        : undefined;
    });
    expect(messages.length).toBeGreaterThan(ALICE_HISTORY); // the seeded history, the image, the sandbox's demo chat
    // Pages of at most 5 (the spec does not say whether an exact multiple ends with an empty page).
    expect([Math.ceil(messages.length / 5), Math.ceil(messages.length / 5) + 1]).toContain(pages);
    expect(new Set(messages.map((m) => m.id)).size).toBe(messages.length);
    for (let i = 1; i < messages.length; i++) expect(messages[i]!.timestamp).toBeLessThanOrEqual(messages[i - 1]!.timestamp);
    expect(historyStartsAt).toBe(messages.at(-1)!.timestamp);
    expect(messages[0]).toMatchObject({ chatId: aliceChat, fromMe: false, type: 'image', text: 'for the spec client', quotedMessageId: null });
  });

  it('downloads the image through media.url exactly as given: the bytes the contact sent', async () => {
    const [newest] = (await client.messages(connectionId, aliceChat, 1)).messages;
    expect(newest!.media).not.toBeNull();
    expect((await client.download(newest!.media!)).equals(image)).toBe(true);
  });

  it('reacts with skipPresence and edits its own message; the contact sees both', async () => {
    const [received] = (await client.messages(connectionId, aliceChat, 1)).messages;
    await client.react(connectionId, aliceChat, received!.id, '👍');
    const receivedKey = received!.id.slice(received!.id.lastIndexOf('_') + 1);
    // Alice's phone receives the reaction as a message naming her image.
    await waitFor('the reaction at Alice', async () =>
      (await receivedByAlice()).find((m) => m.reaction !== undefined && JSON.stringify(m.reaction).includes(receivedKey) && JSON.stringify(m.reaction).includes('👍')),
    );

    const { id } = await client.send(connectionId, aliceChat, 'spec client says hi');
    await client.edit(connectionId, id, aliceChat, 'spec client says hello');
    expect((await client.message(connectionId, id, aliceChat)).text).toBe('spec client says hello');
    const sentKey = id.slice(id.lastIndexOf('_') + 1);
    await waitFor('the edit at Alice', async () =>
      (await atAlice(sentKey))?.edits.some((e) => e.text === 'spec client says hello') ? true : undefined,
    );
  });

  it('gets the spec error bodies: 401 without a token, 404 Connection not found', async () => {
    const bare = await fetch(`${service.apiUrl}/connections`);
    expect(bare.status).toBe(401);
    expect(await bare.json()).toMatchObject({ statusCode: 401, message: 'Missing or invalid Authorization header' });
    const missing = await client.connection('00000000-0000-4000-8000-000000000000').catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(SpecApiError);
    expect((missing as SpecApiError).body).toMatchObject({ statusCode: 404, message: 'Connection not found' });
  });
});
