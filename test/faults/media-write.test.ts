/**
 * Fault: the media folder cannot be written (a full or broken disk). Tests run as root, where chmod does not stop
 * writes, so the connection's media folder `<dataDir>/media/<connectionId>` is replaced by a regular file: every
 * mkdir/open/rename in it fails (EEXIST/ENOTDIR), as a write to a full disk would. A contact sends an image: the
 * message is still stored with its media metadata, the failed download is logged with its reason, the media proxy
 * answers a clean 404 `Media not found` (no 5xx), the service keeps running and later messages arrive. Once the folder
 * is writable again, the same proxy request downloads the file (the failure lost nothing).
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { waitFor } from '../helpers/wait.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
// A 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

describe('media folder not writable', () => {
  let s: SandboxService;
  let connectionId: string;
  let mediaDir: string;
  const logs: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
    s = await startSandboxService({ logger });
    connectionId = await s.pair(PHONE);
    mediaDir = path.join(s.dataDir, 'media', connectionId);
    fs.rmSync(mediaDir, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(mediaDir), { recursive: true });
    fs.writeFileSync(mediaDir, 'not a folder');
  });
  afterAll(async () => s?.close());

  const messages = async (limit = 10) =>
    (await s.api('GET', `/connections/${connectionId}/chats/${ALICE_JID}/messages?limit=${limit}`)).body.messages as Array<{
      id: string;
      text: string;
      type: string;
      media: { url: string; mimetype: string; size: number } | null;
    }>;

  it('stores the message with its media metadata, logs the failure and answers the proxy with a 404', { timeout: 40_000 }, async () => {
    const logsBefore = logs.length;
    const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, {
      to: PHONE,
      image: { base64: PNG.toString('base64'), mimetype: 'image/png', caption: 'disk full?' },
    });
    expect(sent.status).toBe(201);
    const msg = await waitFor('the image message stored', async () => (await messages()).find((m) => m.text === 'disk full?'));
    expect(msg.type).toBe('image');
    expect(msg.media).toMatchObject({ mimetype: 'image/png', size: PNG.length });
    expect(msg.media!.url).toMatch(new RegExp(`^${s.apiUrl}/connections/${connectionId}/media/[^/]+\\.png$`));

    // The eager download failed, and says why.
    const failure = await waitFor('the failure logged', () =>
      logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('media download failed') && l.messageId === msg.id),
    );
    expect(JSON.stringify(failure.err)).toMatch(/ENOTDIR|EEXIST|ENOSPC|EROFS|EACCES/);

    // The proxy (both routes) answers a clean 404, not a 5xx, and the service keeps running.
    const byName = await s.raw(msg.media!.url);
    expect(byName.status).toBe(404);
    expect(JSON.parse(byName.bytes.toString())).toMatchObject({ statusCode: 404, message: 'Media not found' });
    const byMessage = await s.api('GET', `/connections/${connectionId}/messages/${encodeURIComponent(msg.id)}/media?chatId=${ALICE_JID}`);
    expect(byMessage.status).toBe(404);
    expect(byMessage.body.message).toBe('Media not found');
    expect((await s.api('GET', '/')).status).toBe(200);
    expect((await s.api('GET', `/connections/${connectionId}`)).body.status).toBe('online');
    // nothing else broke (errors other than about this media)
    expect(logs.slice(logsBefore).filter((l) => Number(l.level) >= 50 && !String(l.msg).startsWith('media'))).toEqual([]);

    // Later messages still arrive.
    expect((await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, { to: PHONE, text: 'after the failed write' })).status).toBe(201);
    await waitFor('a later message', async () => ((await messages()).some((m) => m.text === 'after the failed write') ? true : undefined));

    // Writable again: the proxy downloads the file on request; nothing was lost.
    fs.rmSync(mediaDir, { force: true });
    const file = await s.raw(msg.media!.url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(file.bytes.equals(PNG)).toBe(true);
  });
});
