/**
 * `--media-dir` (issue 26 item 3) through the real service in sandbox mode: with a media dir outside the data dir,
 * a received image is stored under it (and nothing under `<dataDir>/media`), `GET` of its `media.url` serves it, the
 * chat's ZIP export holds it. The media dir is created private
 * (0700) and looser modes found in it are repaired at start, as in the data dir's own folders; `switchboard serve
 * --media-dir DIR` creates it so.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngBytes as pngBytesOf } from '../helpers/png.ts';
import { enc, startSandboxService, type SandboxService } from '../helpers/sandbox-service.ts';
import { startServe } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';
import { unzip } from '../helpers/zip.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const ALICE_JID = '15550101@s.whatsapp.net';
const posix = process.platform !== 'win32';

const pngBytes = () => pngBytesOf(12, 12);

describe('--media-dir: media stored, served and exported there', { timeout: 120_000 }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-media-dir-'));
  const mediaDir = path.join(tmp, 'shared', 'media-store');
  const image = pngBytes();
  let s: SandboxService;
  let id: string;
  let messageId: string;

  beforeAll(async () => {
    // A loose folder and file left in the media dir (a copy, a umask): repaired at start.
    fs.mkdirSync(path.join(mediaDir, 'old'), { recursive: true, mode: 0o755 });
    fs.chmodSync(mediaDir, 0o755);
    fs.writeFileSync(path.join(mediaDir, 'old', 'a.jpg'), 'x', { mode: 0o644 });
    s = await startSandboxService({ config: { mediaDir } });
    id = await s.pair(PHONE);
  });

  afterAll(async () => {
    await s?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it.skipIf(!posix)('is private like the data dir: 0700 folders, 0600 files', () => {
    expect(fs.statSync(mediaDir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(mediaDir, 'old')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(mediaDir, 'old', 'a.jpg')).mode & 0o777).toBe(0o600);
  });

  it('stores a received image under the media dir, not under <dataDir>/media, and serves it', async () => {
    const sent = await s.sandbox('POST', `/accounts/${enc(ALICE)}/messages`, {
      to: PHONE,
      image: { base64: image.toString('base64'), mimetype: 'image/png', caption: 'elsewhere' },
    });
    expect(sent.status).toBe(201);
    messageId = `false_${ALICE_JID}_${sent.body.id}`;
    await s.frame(`message ${messageId}`, (f) => f.event === 'message' && f.payload.id === messageId);
    const folder = path.join(mediaDir, id);
    const stored = await waitFor('the image on disk', () => {
      const files = fs.existsSync(folder) ? fs.readdirSync(folder).filter((n) => !n.endsWith('.part')) : [];
      return files.find((n) => fs.readFileSync(path.join(folder, n)).equals(image));
    });
    if (posix) {
      expect(fs.statSync(folder).mode & 0o777).toBe(0o700);
      expect(fs.statSync(path.join(folder, stored)).mode & 0o777).toBe(0o600);
    }
    expect(fs.existsSync(path.join(s.dataDir, 'media', id))).toBe(false);

    const message = await s.api('GET', `/connections/${id}/messages/${encodeURIComponent(messageId)}?chatId=${ALICE_JID}`);
    expect(message.status).toBe(200);
    const url = message.body.media.url as string;
    expect(url.endsWith(`/${stored}`)).toBe(true);
    const got = await s.raw(url);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(image)).toBe(true);
  });

  it('exports the image from there in the ZIP', async () => {
    const res = await s.raw(`/connections/${id}/chats/${ALICE_JID}/export?format=jsonl&media=true`);
    expect(res.status).toBe(200);
    const entries = await unzip(res.bytes);
    const media = [...entries.keys()].filter((n) => n.startsWith('media/'));
    expect(media.some((n) => entries.get(n)!.equals(image))).toBe(true);
    expect(JSON.parse(entries.get('media-missing.json')!.toString('utf8'))).toEqual({ missing: [] });
  });
});

it.skipIf(!posix)('`serve --media-dir DIR` creates the media dir private, outside the data dir', { timeout: 60_000 }, async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-media-flag-'));
  const mediaDir = path.join(tmp, 'elsewhere', 'media');
  try {
    const serve = await startServe(['--sandbox', '--port', '0', '--data-dir', path.join(tmp, 'data'), '--media-dir', mediaDir]);
    expect(fs.statSync(mediaDir).mode & 0o777).toBe(0o700);
    expect(await serve.stop('SIGTERM')).toBe(0);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
