/**
 * The sandbox media host (brief §A8, §B7): an HTTPS server on loopback with the sandbox's own CA.
 *
 * Owns:
 * - WhatsApp media encryption (`mediaKey` → HKDF "WhatsApp <Type> Keys" → AES-256-CBC + 10-byte HMAC),
 *   used by the simulated phones to send media and to read what companions uploaded (hashes verified);
 * - client uploads `POST /mms/<type>/<token>?auth=…` (token = base64url SHA-256 of the body) answered with
 *   `{ url, direct_path }`, and downloads `GET <direct_path>` — 404 once a blob was expired; profile pictures
 *   (profiles.ts) are served from the same table as plain `image/jpeg`;
 * - media re-upload: a companion's `<receipt type="server-error">` is answered by its own phone with a
 *   `mediaretry` notification carrying the new direct path (AES-GCM, HKDF "WhatsApp Media Retry Notification").
 * Blobs live in the `media_blobs` table keyed by the path part of the direct path.
 */
import { createHash, randomBytes, createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  aesEncryptGCM,
  getBinaryNodeChild,
  getMediaKeys,
  hkdf,
  jidDecode,
  normalizeMessageContent,
  proto,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { SandboxContext } from './context.ts';
import { unixNow } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { Store } from './store.ts';
import type { TlsIdentity } from './tls.ts';
import { pnJid } from './phone-number.ts';

export type MediaKind = 'image' | 'video' | 'audio' | 'document' | 'sticker';
/** Media kinds, each the `<kind>Message` of a proto.Message; stickers are WebP images (HKDF "WhatsApp Image Keys"). */
export const MEDIA_KINDS: readonly MediaKind[] = ['image', 'video', 'audio', 'document', 'sticker'];

/** The `media_conn` upload auth the sandbox hands out and checks. */
export const MEDIA_AUTH = 'sandbox-media-auth';
const MAX_UPLOAD = 100 * 1024 * 1024;

export interface EncryptedMedia {
  mediaKey: Buffer;
  /** The uploaded file: ciphertext || HMAC[0:10]. */
  file: Buffer;
  fileSha256: Buffer;
  fileEncSha256: Buffer;
}

const sha256 = (b: Buffer): Buffer => createHash('sha256').update(b).digest();

/** Encrypt like WhatsApp (deterministic for a given `mediaKey`: the IV comes from the key). */
export async function encryptMedia(
  plaintext: Buffer,
  kind: MediaKind,
  mediaKey = randomBytes(32),
): Promise<EncryptedMedia> {
  const { iv, cipherKey, macKey } = await getMediaKeys(mediaKey, kind);
  const cipher = createCipheriv('aes-256-cbc', cipherKey, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const mac = createHmac('sha256', macKey!).update(iv).update(ciphertext).digest().subarray(0, 10);
  const file = Buffer.concat([ciphertext, mac]);
  return { mediaKey, file, fileSha256: sha256(plaintext), fileEncSha256: sha256(file) };
}

export class MediaVerificationError extends Error {
  override name = 'MediaVerificationError';
}

/**
 * Decrypt an uploaded file, verifying the MAC and (when given) `fileEncSha256` / `fileSha256`.
 * @throws MediaVerificationError on any mismatch.
 */
export async function decryptMedia(
  file: Buffer,
  kind: MediaKind,
  mediaKey: Uint8Array,
  expect: { fileEncSha256?: Uint8Array | null; fileSha256?: Uint8Array | null } = {},
): Promise<Buffer> {
  if (expect.fileEncSha256?.length && !sha256(file).equals(Buffer.from(expect.fileEncSha256))) {
    throw new MediaVerificationError('fileEncSha256 mismatch');
  }
  if (file.length < 26) throw new MediaVerificationError('file too short');
  const { iv, cipherKey, macKey } = await getMediaKeys(Buffer.from(mediaKey), kind);
  const ciphertext = file.subarray(0, file.length - 10);
  const mac = createHmac('sha256', macKey!).update(iv).update(ciphertext).digest().subarray(0, 10);
  if (!timingSafeEqual(mac, file.subarray(file.length - 10))) throw new MediaVerificationError('MAC mismatch');
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-cbc', cipherKey, iv);
    plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    throw new MediaVerificationError('bad padding');
  }
  if (expect.fileSha256?.length && !sha256(plaintext).equals(Buffer.from(expect.fileSha256))) {
    throw new MediaVerificationError('fileSha256 mismatch');
  }
  return plaintext;
}

/** The media part of a message: its kind and the proto sub-message (image/video/audio/document). */
export function mediaContent(
  message: proto.IMessage | null | undefined,
):
  | {
      kind: MediaKind;
      media: proto.Message.IImageMessage & proto.Message.IDocumentMessage & proto.Message.IAudioMessage;
    }
  | undefined {
  const m = normalizeMessageContent(message);
  if (!m) return undefined;
  for (const kind of MEDIA_KINDS) {
    const media = m[`${kind}Message`];
    if (media)
      return {
        kind,
        media: media as proto.Message.IImageMessage & proto.Message.IDocumentMessage & proto.Message.IAudioMessage,
      };
  }
  return undefined;
}

/** `/v/t62.7118-24/abc.enc?ccb=…` → `/v/t62.7118-24/abc.enc` (blobs are keyed by path). */
export function blobKey(directPathOrUrl: string): string {
  try {
    return new URL(directPathOrUrl, 'https://sandbox').pathname;
  } catch {
    return directPathOrUrl.split('?')[0] ?? directPathOrUrl;
  }
}

function newDirectPath(): string {
  return `/v/t62.7118-24/${randomBytes(16).toString('hex')}.enc?ccb=11-4&oh=sandbox&oe=${(Date.now() + 14 * 86400e3).toString(16)}`;
}

export class MediaHost {
  private server: Server | undefined;
  private hostPort = '';

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly tls: TlsIdentity,
  ) {}

  /** `host:port` of the HTTPS media host (what `media_conn` advertises). */
  get host(): string {
    return this.hostPort;
  }

  async listen(host: string, port: number): Promise<string> {
    const server = createServer({ cert: this.tls.certPem, key: this.tls.keyPem }, (req, res) => this.handle(req, res));
    server.on('tlsClientError', (err) => this.logger.debug({ err }, 'media host TLS error'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    const actual = typeof addr === 'object' && addr ? addr.port : port;
    const advertised = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
    this.hostPort = `${advertised.includes(':') ? `[${advertised}]` : advertised}:${actual}`;
    this.server = server;
    return this.hostPort;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Host a phone's media: encrypt with a fresh (or given) mediaKey and store under a new direct path. */
  async hostMedia(
    plaintext: Buffer,
    kind: MediaKind,
    mediaKey?: Uint8Array,
  ): Promise<EncryptedMedia & { directPath: string; url: string }> {
    const enc = await encryptMedia(plaintext, kind, mediaKey ? Buffer.from(mediaKey) : undefined);
    const directPath = newDirectPath();
    this.store.transaction(() => this.store.putBlobNow(blobKey(directPath), kind, enc.file));
    return { ...enc, directPath, url: `https://${this.hostPort}${directPath}` };
  }

  /**
   * Read and decrypt the media of a message from the blob store (what a phone does when it receives media),
   * verifying fileEncSha256, MAC and fileSha256.
   * @throws MediaVerificationError when missing or corrupt.
   */
  async fetchMessageMedia(message: proto.IMessage): Promise<Buffer | undefined> {
    const mc = mediaContent(message);
    if (!mc) return undefined;
    const { kind, media } = mc;
    const path = media.directPath ?? media.url;
    if (!path || !media.mediaKey) throw new MediaVerificationError('no directPath/mediaKey');
    const blob = this.store.getBlob(blobKey(path));
    if (!blob?.body) throw new MediaVerificationError('blob not found');
    return decryptMedia(blob.body, kind, media.mediaKey, media);
  }

  /** Expire the blob(s) of a message's media (downloads get 404). @returns whether anything was expired. */
  expireMessageMedia(message: proto.IMessage): boolean {
    const media = mediaContent(message)?.media;
    const path = media?.directPath ?? media?.url;
    return !!path && this.store.expireBlob(blobKey(path));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://sandbox');
    const reply = (status: number, body: unknown): void => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (req.method === 'POST') {
      const parts = url.pathname.split('/').filter(Boolean);
      const token = parts[parts.length - 1] ?? '';
      const type = parts.length >= 3 ? parts[parts.length - 2]! : '';
      if (url.searchParams.get('auth') !== MEDIA_AUTH) return reply(401, { error: 'bad auth' });
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_UPLOAD) chunks.push(c);
      });
      req.on('end', () => {
        if (size > MAX_UPLOAD) return reply(413, { error: 'too large' });
        const body = Buffer.concat(chunks);
        if (sha256(body).toString('base64url') !== token) return reply(400, { error: 'token does not match body' });
        const directPath = newDirectPath();
        try {
          this.store.transaction(() => this.store.putBlobNow(blobKey(directPath), type, body));
        } catch (err) {
          this.logger.error({ err }, 'cannot store uploaded media');
          return reply(500, { error: 'storage' });
        }
        this.logger.debug({ type, size, directPath }, 'media uploaded');
        reply(200, { url: `https://${this.hostPort}${directPath}`, direct_path: directPath });
      });
      req.on('error', () => res.destroy());
      return;
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const blob = this.store.getBlob(url.pathname);
      if (!blob?.body) return reply(404, { error: 'not found' });
      // profile pictures are plain JPEG (profiles.ts); message media is encrypted
      const type = blob.mediaType === 'profile-picture' ? 'image/jpeg' : 'application/octet-stream';
      res.writeHead(200, { 'content-type': type, 'content-length': blob.body.length });
      res.end(req.method === 'HEAD' ? undefined : blob.body);
      return;
    }
    reply(405, { error: 'method not allowed' });
  }
}

/** MediaRetryNotification.ResultType values Baileys maps (NOT_FOUND → 404). */
const RETRY_NOT_FOUND = proto.MediaRetryNotification.ResultType.NOT_FOUND;

/**
 * `<receipt type="server-error">` from a companion: its own phone re-uploads the media of that message
 * and answers with a `mediaretry` notification (brief §B7), or `<error code=2/>` if it has no such media.
 */
export async function onMediaRetryReceipt(
  ctx: SandboxContext,
  conn: ClientConnection,
  node: BinaryNode,
): Promise<void> {
  const { store, accounts, media } = ctx;
  const id = node.attrs.id;
  const rmr = getBinaryNodeChild(node, 'rmr');
  const account = conn.pn !== undefined ? accounts.get(conn.pn) : undefined;
  if (!id || !rmr || !account) return;
  conn.send({ tag: 'ack', attrs: { id, class: 'receipt', type: 'server-error', from: pnJid(account.pn) } });
  const fromMe = rmr.attrs.from_me === 'true';
  const chatUser = accounts.resolveJid(rmr.attrs.jid)?.account.pn ?? jidDecode(rmr.attrs.jid)?.user;
  const row = fromMe ? store.getMessage(account.pn, id) : chatUser ? store.getMessage(chatUser, id) : undefined;
  const message = row ? proto.Message.decode(row.message) : undefined;
  const mc = mediaContent(message);
  const plaintext = row ? store.getMessageMedia(row.fromPn, row.msgId) : undefined;
  const rmrAttrs: Record<string, string> = { jid: rmr.attrs.jid ?? '', from_me: String(fromMe) };
  if (rmr.attrs.participant) rmrAttrs.participant = rmr.attrs.participant;
  const base = { tag: 'notification', attrs: { from: pnJid(account.pn), type: 'mediaretry', id, t: unixNow() } };
  if (!mc?.media.mediaKey || !plaintext) {
    conn.log.info({ msgId: id }, 'media re-upload requested for unknown media');
    conn.send({
      ...base,
      content: [
        { tag: 'error', attrs: { code: String(RETRY_NOT_FOUND) } },
        { tag: 'rmr', attrs: rmrAttrs },
      ],
    });
    return;
  }
  const hosted = await media.hostMedia(plaintext, mc.kind, mc.media.mediaKey);
  const payload = proto.MediaRetryNotification.encode({
    stanzaId: id,
    directPath: hosted.directPath,
    result: proto.MediaRetryNotification.ResultType.SUCCESS,
  }).finish();
  const key = hkdf(Buffer.from(mc.media.mediaKey), 32, { info: 'WhatsApp Media Retry Notification' });
  const iv = randomBytes(12);
  const ciphertext = aesEncryptGCM(Buffer.from(payload), Buffer.from(key), iv, Buffer.from(id));
  conn.send({
    ...base,
    content: [
      {
        tag: 'encrypt',
        attrs: {},
        content: [
          { tag: 'enc_p', attrs: {}, content: ciphertext },
          { tag: 'enc_iv', attrs: {}, content: iv },
        ],
      },
      { tag: 'rmr', attrs: rmrAttrs },
    ],
  });
  conn.log.debug({ msgId: id, directPath: hosted.directPath }, 'media re-uploaded by the phone');
}
