/**
 * `switchboard migrate --from DATA_DIR --to postgres://…` end to end (issue 26 item 4): a data dir filled by the real
 * service on the sandbox (a paired connection, received text and image messages, a reaction and an edit, a webhook
 * with delivered deliveries, a token made by the CLI), then the real CLI as a child process into a PostgreSQL
 * database of this run (test/helpers/pg.ts). What PostgreSQL holds afterwards is read through the PostgreSQL
 * Store's repositories and compared with the same reads through the SQLite Store: the connection, its auth creds
 * and Signal keys, chats, every message page as API JSON, search hits, events with their seqs, webhooks,
 * deliveries, tokens. The source file is unchanged; a second migrate, a migrate while the service holds the data
 * dir, and a migrate into a non-empty database are refused with nothing written; the password is never printed.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { SERVE_ON_POSTGRES_NOTE } from '../../service/cli/migrate.ts';
import { openDataPlane } from '../../service/data-plane.ts';
import { COPIED_TABLES } from '../../service/db/pg/copy-from-sqlite.ts';
import { openPgStore } from '../../service/db/pg/store.ts';
import { openSqliteStore } from '../../service/db/sqlite-store.ts';
import type { Store } from '../../service/db/store-api.ts';
import { pageJson } from '../../service/http/routes/messages.ts';
import { startConsumer, type Consumer } from '../integration/webhooks-consumer.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { runCli } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const PASSWORD = 'Migr4te-Secret';

const pngBytes = () => pngBytesOf(8, 8);

/** `url` with a password in it (trust auth ignores it; the output must never show it). */
function withPassword(url: string): string {
  const u = new URL(url);
  u.password = PASSWORD;
  return u.toString();
}

/** Bytes (SHA-256) and mtime of each of the SQLite file and its WAL, for "the source is unchanged". */
function fingerprint(dataDir: string): Record<string, { sha256: string; mtimeMs: number } | null> {
  const out: Record<string, { sha256: string; mtimeMs: number } | null> = {};
  for (const name of ['switchboard.db', 'switchboard.db-wal']) {
    const file = path.join(dataDir, name);
    out[name] = fs.existsSync(file)
      ? { sha256: createHash('sha256').update(fs.readFileSync(file)).digest('hex'), mtimeMs: fs.statSync(file).mtimeMs }
      : null;
  }
  return out;
}

/** Row counts of every copied table (and the search index) in the target. */
async function pgCounts(db: TestDatabase): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of [...COPIED_TABLES, 'message_search']) {
    const [row] = await db.sql<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM ${db.sql(table)}`;
    out[table] = row!.n;
  }
  return out;
}

describe('switchboard migrate: a paired desktop data dir into PostgreSQL', () => {
  let s: SandboxService;
  let consumer: Consumer;
  let db: TestDatabase;
  let dataDir: string;
  let connectionId: string;
  let hookId: string;
  let cliToken: string;
  let serviceStopped = false;
  let before: ReturnType<typeof fingerprint>;
  let migrated: { stdout: string; stderr: string; code: number };
  let sqlite: Store;
  let pg: Store;

  beforeAll(async () => {
    db = await createTestDatabase();
    consumer = await startConsumer();
    s = await startSandboxService({ allowLan: true });
    dataDir = s.dataDir;
    connectionId = await s.pair(PHONE);
    const hook = await s.api('POST', `/connections/${connectionId}/webhooks`, { url: consumer.url('/hook'), events: ['*'] });
    expect(hook.status).toBe(201);
    hookId = hook.body.id;
    consumer.secret('/hook', hook.body.signingSecret);

    const receive = async (body: Record<string, unknown>) => {
      const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, ...body });
      expect(sent.status).toBe(201);
      const id = `false_${ALICE_JID}_${sent.body.id}`;
      await s.frame(`message ${id}`, (f) => f.event === 'message' && f.payload.id === id);
      return { id, keyId: sent.body.id as string };
    };
    const text = await receive({ text: 'the migration keeps café history' });
    await receive({ image: { base64: pngBytes().toString('base64'), mimetype: 'image/png', caption: 'a picture to migrate' } });
    const edited = await receive({ text: 'typo before the edit' });
    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/reactions`, { to: PHONE, messageId: text.keyId, emoji: '👍' })).status).toBe(201);
    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/edits`, { to: PHONE, messageId: edited.keyId, text: 'fixed after the edit' })).status).toBe(201);
    await s.frame('the edit', (f) => f.event === 'message.edited' && f.payload.id === edited.id);
    const reply = await s.api('POST', `/connections/${connectionId}/send`, { chatId: ALICE, text: 'reply from the desktop', skipPresence: true });
    expect(reply.status).toBe(201);
    await s.frame('reaction', (f) => f.event === 'message.reaction');
    // Every delivery of the webhook done (delivered), so the outbox holds finished rows.
    await waitFor('deliveries delivered', async () => {
      const logs = (await s.api('GET', `/webhooks/${hookId}/logs`)).body as Array<{ status: string }>;
      return logs.length >= 4 && logs.every((l) => l.status === 'delivered') ? true : undefined;
    }, { timeoutMs: 20_000 });
    const created = await runCli(['token', 'create', '--user', 'e2e', '--name', 'before-migrate', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    cliToken = created.stdout.trim();
  }, 120_000);

  afterAll(async () => {
    await sqlite?.close();
    await pg?.close();
    if (!serviceStopped) await s?.service.close();
    await consumer?.close();
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses while the service holds the data dir: "stop the service first", nothing written', async () => {
    const r = await runCli(['migrate', '--from', dataDir, '--to', withPassword(db.url)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is in use by a running Switchboard service \(PID \d+\): stop the service first/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    const [tables] = await db.sql<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM pg_tables WHERE schemaname = 'public'`;
    expect(tables!.n).toBe(0);
  });

  it('copies every table in one verified transaction and reports it without the password', { timeout: 60_000 }, async () => {
    await s.service.close();
    serviceStopped = true;
    before = fingerprint(dataDir);
    migrated = await runCli(['migrate', '--from', dataDir, '--to', withPassword(db.url)]);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    const out = migrated.stdout;
    expect(out).not.toContain(PASSWORD);
    expect(out).toContain(`into ${new URL(withPassword(db.url)).href.replace(PASSWORD, '***')}`);
    expect(out).toMatch(/^table +sqlite +postgres$/m);
    expect(out).toMatch(/Copied \d+ tables, [\d,]+ rows in [\d.]+ s; every count matches/);
    expect(out).toContain('Next: switchboard serve --database ');
    expect(out).toContain(SERVE_ON_POSTGRES_NOTE);

    // The printed table: each line's two counts equal, and equal to the source's and the target's own counts.
    const source = new Database(path.join(dataDir, 'switchboard.db'), { readonly: true });
    const target = await pgCounts(db);
    try {
      for (const table of [...COPIED_TABLES, 'message_search']) {
        const line = new RegExp(`^${table} +([\\d,]+) +([\\d,]+)$`, 'm').exec(out);
        expect(line, table).not.toBeNull();
        const [a, b] = [Number(line![1]!.replaceAll(',', '')), Number(line![2]!.replaceAll(',', ''))];
        const n = (source.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
        expect({ table, sqlite: a, postgres: b, target: target[table] }).toEqual({ table, sqlite: n, postgres: n, target: n });
      }
    } finally {
      source.close();
    }
    for (const table of ['users', 'api_tokens', 'connections', 'auth_creds', 'auth_keys', 'events', 'webhooks', 'webhook_deliveries', 'chats', 'contacts', 'messages', 'message_edits', 'message_reactions', 'message_search']) {
      expect(target[table], table).toBeGreaterThan(0);
    }
  });

  it('leaves the source file as it was (bytes and mtime)', () => {
    const after = fingerprint(dataDir);
    expect(after['switchboard.db']).toEqual(before['switchboard.db']);
    // A read-only connection on a WAL-mode file may create an empty WAL beside it where there was none (SQLite's
    // side file, not data); one that existed is unchanged.
    if (before['switchboard.db-wal']) expect(after['switchboard.db-wal']).toEqual(before['switchboard.db-wal']);
    else if (after['switchboard.db-wal']) expect(fs.statSync(path.join(dataDir, 'switchboard.db-wal')).size).toBe(0);
  });

  it('PostgreSQL answers what SQLite answers: connection, auth state, chats, messages, search, events, webhooks, tokens', async () => {
    sqlite = openSqliteStore(dataDir);
    pg = await openPgStore(db.url);
    const [a, b] = [sqlite.read, pg.read];

    const conn = await a.connections.get(connectionId);
    expect(conn).toMatchObject({ status: 'online', phoneNumber: PHONE });
    expect(await b.connections.get(connectionId)).toEqual(conn);
    const userId = conn!.userId;
    expect(await b.users.get(userId)).toEqual(await a.users.get(userId));
    expect(await b.users.list()).toEqual(await a.users.list());

    // Auth state: creds and every Signal key, so the session comes online from PostgreSQL without a scan.
    const creds = await a.authState.getCreds(connectionId);
    expect(creds).toBeTruthy();
    expect(await b.authState.getCreds(connectionId)).toEqual(creds);
    const file = new Database(path.join(dataDir, 'switchboard.db'), { readonly: true });
    const keys = file.prepare(`SELECT type, id FROM auth_keys WHERE connection_id = ?`).all(connectionId) as Array<{ type: string; id: string }>;
    file.close();
    expect(keys.length).toBeGreaterThan(0);
    for (const type of new Set(keys.map((k) => k.type))) {
      const ids = keys.filter((k) => k.type === type).map((k) => k.id);
      expect(await b.authState.getKeys(connectionId, type, ids), type).toEqual(await a.authState.getKeys(connectionId, type, ids));
    }

    // Chats and every message page, as the API's JSON.
    const list = { limit: 100, offset: 0, unreadOnly: false };
    const chats = await a.chats.listJson(connectionId, list);
    expect(await b.chats.listJson(connectionId, list)).toBe(chats);
    const chatIds = (JSON.parse(chats) as Array<{ id: string }>).map((c) => c.id);
    expect(chatIds).toContain(ALICE_JID);
    for (const chatId of chatIds) {
      const page = pageJson(await a.messages.rendered.page(connectionId, chatId, 500));
      expect(pageJson(await b.messages.rendered.page(connectionId, chatId, 500)), chatId).toBe(page);
    }
    const alice = JSON.parse(pageJson(await b.messages.rendered.page(connectionId, ALICE_JID, 500))).messages as Array<Record<string, unknown>>;
    expect(alice.find((m) => m.type === 'image')).toMatchObject({ text: 'a picture to migrate', media: { mimetype: 'image/png' } });
    expect(alice.find((m) => m.text === 'fixed after the edit')).toMatchObject({ editedAt: expect.any(Number) });
    expect(alice.find((m) => m.text === 'the migration keeps café history')).toMatchObject({ reactions: [expect.objectContaining({ emoji: '👍' })] });

    // Search finds the same hits (accent-insensitive, per connection) on both.
    for (const query of ['cafe', 'migration', 'picture', 'fixed']) {
      const opts = { limit: 20, order: 'recent' as const };
      const hits = await a.search.search(query, { connectionIds: [connectionId] }, opts);
      expect(hits.hits.length, query).toBeGreaterThan(0);
      expect(await b.search.search(query, { connectionIds: [connectionId] }, opts), query).toEqual(hits);
    }

    // Events with the same seqs, and the user's counter.
    const events = await a.events.after(userId, 0, 100_000);
    expect(events.length).toBeGreaterThan(5);
    expect(await b.events.after(userId, 0, 100_000)).toEqual(events);
    expect(await b.events.lastSeq(userId)).toBe(await a.events.lastSeq(userId));

    // Webhooks and their deliveries.
    expect(await b.webhooks.listByConnection(connectionId)).toEqual(await a.webhooks.listByConnection(connectionId));
    const logs = await a.deliveries.logs(hookId, 1000);
    expect(logs.length).toBeGreaterThanOrEqual(4);
    expect(await b.deliveries.logs(hookId, 1000)).toEqual(logs);

    // Tokens: the same rows and hashes; the token the CLI made authenticates on both.
    expect(await b.tokens.listActive(userId)).toEqual(await a.tokens.listActive(userId));
    const hash = createHash('sha256').update(cliToken).digest('hex');
    const credential = await a.tokens.credentialByHash(hash);
    expect(credential).toBeTruthy();
    expect(await b.tokens.credentialByHash(hash)).toEqual(credential);
  });

  it('refuses a second migrate into the now non-empty database, changing nothing', async () => {
    const counts = await pgCounts(db);
    const r = await runCli(['migrate', '--from', dataDir, '--to', withPassword(db.url)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^switchboard: refusing to migrate into postgres:\/\/postgres:\*\*\*@[^ ]+: the target database is not empty \(table \w+ has rows\)/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toContain(PASSWORD);
    expect(await pgCounts(db)).toEqual(counts);
  });
});

describe('switchboard migrate: usage and refusals before anything is copied', () => {
  let dir: string;
  const noEnvUrl = { SWITCHBOARD_DATABASE_URL: '' };

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-migrate-usage-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each([
    [['migrate'], /^switchboard: --from DATA_DIR is required\nRun 'switchboard migrate --help' for usage\.\n$/],
    [['migrate', '--from', '/nowhere'], /^switchboard: --to postgres:\/\/… is required \(or SWITCHBOARD_DATABASE_URL\)\n/],
    [['migrate', '--from', '/nowhere', '--to', `mysql://u:${PASSWORD}@h/db`], /^switchboard: invalid --to value: expected a postgres:\/\/ URL/],
    [['migrate', '--from', '/nowhere', '--to', 'postgres://h/db', 'extra'], /^switchboard: unexpected argument 'extra'/],
  ])('usage error %j → exit 2, one line and the help hint, no password', async (args, message) => {
    const r = await runCli(args, noEnvUrl);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain(PASSWORD);
  });

  it('refuses a folder without a database, an unreachable target and a database of an older build (exit 1, one line)', async () => {
    const empty = await runCli(['migrate', '--from', dir, '--to', `postgres://u:${PASSWORD}@127.0.0.1:1/x`]);
    expect(empty).toMatchObject({ code: 1, stdout: '' });
    expect(empty.stderr).toBe(`switchboard: no Switchboard database at ${path.join(dir, 'switchboard.db')}\n`);

    openDataPlane({ dataDir: dir, role: 'tool' }).close();
    const unreachable = await runCli(['migrate', '--from', dir, '--to', `postgres://u:${PASSWORD}@127.0.0.1:1/x`]);
    expect(unreachable).toMatchObject({ code: 1, stdout: '' });
    expect(unreachable.stderr).toMatch(/^switchboard: cannot use database postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x: .*ECONNREFUSED.*\n$/);
    expect(unreachable.stderr).not.toContain(PASSWORD);

    const raw = new Database(path.join(dir, 'switchboard.db'));
    raw.pragma(`user_version = ${(raw.pragma('user_version', { simple: true }) as number) - 1}`);
    raw.close();
    const older = await runCli(['migrate', '--from', dir, '--to', `postgres://u:${PASSWORD}@127.0.0.1:1/x`]);
    expect(older).toMatchObject({ code: 1, stdout: '' });
    expect(older.stderr).toMatch(/has schema version \d+, older than this build's \(\d+\): start this version's service on it once/);
  });
});
