/**
 * Turns a send request (interface-spec §4.3) into Baileys message content: media from base64 or from an
 * `https://` URL that this service fetches itself through the outbound URL policy (net/outbound.ts: address
 * checked and pinned, no redirects; size limit, timeout; Baileys never fetches URLs), type checks by the bytes
 * (file-type: images, videos and audio must be a supported file of their kind, declared type or not), location pins and vCards. Errors are 400s that say what to fix; a fetch that fails for
 * any reason depending on the target (refused address, closed port, timeout, TLS, non-2xx) answers the one text
 * `URL_FETCH_FAILED`, the cause going to the log.
 */
import type { AnyMessageContent } from '@whiskeysockets/baileys';
import type { ConnectionOptions } from 'node:tls';
import type { Logger } from 'pino';
import { badRequest } from '../errors.ts';
import { OutboundFetchError, OutboundPolicy, reasonOf } from '../net/outbound.ts';
import { sniffMimetype } from './media-store.ts';
import type { MediaKind, SendInput } from './types.ts';

const MiB = 1024 * 1024;

/** Largest accepted file per kind (WhatsApp's own limits are in the same range). */
export const MEDIA_LIMITS: Record<MediaKind, number> = {
  image: 16 * MiB,
  audio: 16 * MiB,
  video: 64 * MiB,
  document: 100 * MiB,
};

/** Content types each kind accepts (documents accept any well-formed type). */
export const MEDIA_TYPES: Record<Exclude<MediaKind, 'document'>, readonly string[]> = {
  image: ['image/jpeg', 'image/png', 'image/webp'],
  video: ['video/mp4', 'video/3gpp'],
  audio: ['audio/ogg', 'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/amr'],
};

/** Total time allowed for fetching a media URL (connect, headers and body). */
const URL_FETCH_TIMEOUT_MS = 60_000;

export interface OutgoingMedia {
  data: Buffer;
  /** Full content type as sent (may carry parameters, e.g. `audio/ogg; codecs=opus`). */
  mimetype: string;
}

export interface PreparedContent {
  content: AnyMessageContent;
  /** The file sent, to keep on local disk. */
  media?: OutgoingMedia;
  /** Length of the visible text (typing-time estimate). */
  textLength: number;
}

/** The 400 message of a `url` that could not be fetched, whatever the cause (no port-scan oracle). */
export const URL_FETCH_FAILED = 'body/url could not be fetched (only public https:// addresses, no redirects, a 2xx answer in time)';

export interface PrepareOptions {
  /** The outbound URL policy for `url` fetches; one with LAN access off by default. */
  policy?: OutboundPolicy;
  /** TLS options for URL fetches (tests trust a local CA). */
  tls?: ConnectionOptions;
  /** Total time for a URL fetch, in ms (60 000). */
  timeoutMs?: number;
  /** Where the cause of a failed URL fetch is logged (info level; the API user sees only URL_FETCH_FAILED). */
  logger?: Pick<Logger, 'info'>;
}

const baseType = (mimetype: string) => mimetype.split(';')[0]!.trim().toLowerCase();
const human = (bytes: number) => `${Math.round(bytes / MiB)} MiB`;

/** Builds the Baileys content of a send request (fetching/decoding media). */
export async function prepareContent(input: SendInput, opts: PrepareOptions = {}): Promise<PreparedContent> {
  switch (input.type) {
    case 'text':
      return { content: { text: input.text }, textLength: input.text.length };
    case 'location': {
      const { latitude, longitude, name, address } = input;
      if (!(latitude >= -90 && latitude <= 90)) throw badRequest('body/latitude must be between -90 and 90');
      if (!(longitude >= -180 && longitude <= 180)) throw badRequest('body/longitude must be between -180 and 180');
      return {
        content: {
          location: {
            degreesLatitude: latitude,
            degreesLongitude: longitude,
            ...(name !== undefined && { name }),
            ...(address !== undefined && { address }),
          },
        },
        textLength: (name ?? '').length,
      };
    }
    case 'contact': {
      const digits = input.phoneNumber.replace(/[\s().-]/g, '').replace(/^\+/, '');
      if (!/^\d{6,15}$/.test(digits)) throw badRequest('body/phoneNumber must be a phone number in international format');
      return {
        content: { contacts: { displayName: input.name, contacts: [{ displayName: input.name, vcard: buildVcard(input.name, digits) }] } },
        textLength: input.name.length,
      };
    }
    case 'poll': {
      // WhatsApp polls: 2–12 distinct options; votes name options by the SHA-256 of their text, so they must differ.
      const options = input.options.map((o) => o.trim());
      if (options.length < 2 || options.length > 12) throw badRequest('body/options must have 2 to 12 options');
      if (options.some((o) => o === '')) throw badRequest('body/options must not be empty');
      if (new Set(options).size !== options.length) throw badRequest('body/options must be distinct');
      const selectableCount = input.selectableCount ?? 1;
      if (!Number.isInteger(selectableCount) || selectableCount < 1 || selectableCount > options.length) {
        throw badRequest('body/selectableCount must be between 1 and the number of options');
      }
      return {
        content: { poll: { name: input.name, values: options, selectableCount } },
        textLength: input.name.length,
      };
    }
    default: {
      const media = await loadMedia(input, opts);
      const caption = input.caption;
      switch (input.type) {
        case 'image':
          return { content: { image: media.data, mimetype: media.mimetype, ...(caption && { caption }) }, media, textLength: caption?.length ?? 0 };
        case 'video':
          return { content: { video: media.data, mimetype: media.mimetype, ...(caption && { caption }) }, media, textLength: caption?.length ?? 0 };
        case 'audio':
          return { content: { audio: media.data, mimetype: media.mimetype, ptt: !!input.ptt }, media, textLength: 0 };
        case 'document': {
          const fileName = input.filename ?? fileNameFromUrl(input.url) ?? 'document';
          return {
            content: { document: media.data, mimetype: media.mimetype, fileName, ...(caption && { caption }) },
            media,
            textLength: caption?.length ?? 0,
          };
        }
      }
    }
  }
}

/** A vCard 3.0 with the WhatsApp id (`waid`) WhatsApp clients use to offer "message" / "add". */
export function buildVcard(name: string, digits: string): string {
  const escaped = name.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/([,;])/g, '\\$1');
  return ['BEGIN:VCARD', 'VERSION:3.0', `FN:${escaped}`, `TEL;type=CELL;type=VOICE;waid=${digits}:+${digits}`, 'END:VCARD'].join('\n');
}

type MediaInput = Extract<SendInput, { type: MediaKind }>;

/** The file of a media send (exactly one of `url`/`base64`) with its checked content type. */
export async function loadMedia(input: MediaInput, opts: PrepareOptions = {}): Promise<OutgoingMedia> {
  const kind = input.type;
  const limit = MEDIA_LIMITS[kind];
  if ((input.url === undefined) === (input.base64 === undefined)) throw badRequest('body must have exactly one of url or base64');
  let data: Buffer;
  let declared = input.mimetype;
  let served: string | undefined;
  if (input.base64 !== undefined) {
    let text = input.base64;
    const dataUrl = /^data:([^;,]+)(?:;[^,]*)?;base64,/i.exec(text);
    if (dataUrl) {
      declared ??= dataUrl[1];
      text = text.slice(dataUrl[0].length);
    }
    text = text.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text) || text.length === 0) throw badRequest('body/base64 is not valid base64');
    if (Math.floor((text.length * 3) / 4) - 2 > limit) throw badRequest(`${kind} is larger than ${human(limit)}`);
    data = Buffer.from(text, 'base64');
  } else {
    ({ data, contentType: served } = await fetchUrl(input.url!, limit, kind, opts));
  }
  if (data.length === 0) throw badRequest(`${kind} is empty`);
  if (data.length > limit) throw badRequest(`${kind} is larger than ${human(limit)}`);
  const sniffed = await sniffMimetype(data);
  return { data, mimetype: checkedMimetype(kind, sniffed, declared, served, !!(input.type === 'audio' && input.ptt)) };
}

/**
 * The content type a media send goes out with. Images, videos and audio must be a supported file of that kind by
 * their bytes (`sniffed`), whatever type was declared: anything else is a 400 naming what the bytes are. A declared
 * type must be accepted for the kind and agree with the bytes (an MP4 container may hold audio or video).
 * Documents take the declared type, else the sniffed one, else the served one.
 */
function checkedMimetype(kind: MediaKind, sniffed: string | undefined, declared: string | undefined, served: string | undefined, ptt: boolean): string {
  if (declared !== undefined && !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(declared.trim())) {
    throw badRequest('body/mimetype must look like type/subtype');
  }
  if (kind === 'document') return declared?.trim() ?? sniffed ?? (served && baseType(served)) ?? 'application/octet-stream';
  const allowed = MEDIA_TYPES[kind];
  let mimetype: string | undefined = declared?.trim();
  if (mimetype !== undefined && !allowed.includes(baseType(mimetype))) {
    throw badRequest(`mimetype ${baseType(mimetype)} is not accepted for ${kind}s (use ${allowed.join(', ')})`);
  }
  let actual = sniffed;
  if (actual === 'audio/mp4' && kind === 'video') actual = 'video/mp4';
  if (actual === 'video/mp4' && kind === 'audio') actual = 'audio/mp4';
  if (!actual) throw badRequest(`could not recognise the ${kind} format: the data is not a supported ${kind} file (${allowed.join(', ')})`);
  if (!allowed.includes(actual)) throw badRequest(`the ${kind} data is ${actual}; accepted: ${allowed.join(', ')}`);
  if (mimetype !== undefined && actual !== baseType(mimetype)) throw badRequest(`the ${kind} data is ${actual}, not ${baseType(mimetype)}`);
  mimetype ??= actual;
  // Voice notes are Opus in Ogg; WhatsApp clients expect the codecs parameter.
  if (kind === 'audio' && ptt && baseType(mimetype) === 'audio/ogg' && !mimetype.includes('codecs')) mimetype = 'audio/ogg; codecs=opus';
  return mimetype;
}

async function fetchUrl(url: string, limit: number, kind: MediaKind, opts: PrepareOptions): Promise<{ data: Buffer; contentType: string | undefined }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest('body/url is not a valid URL');
  }
  if (parsed.protocol !== 'https:') throw badRequest('body/url must be an https:// URL');
  const policy = opts.policy ?? new OutboundPolicy({ allowLan: false });
  const failed = (reason: string) => {
    opts.logger?.info({ reason }, 'send url could not be fetched');
    return badRequest(URL_FETCH_FAILED);
  };
  let res: Awaited<ReturnType<OutboundPolicy['fetch']>>;
  try {
    res = await policy.fetch(parsed, {
      method: 'GET',
      headers: { accept: '*/*' },
      timeoutMs: opts.timeoutMs ?? URL_FETCH_TIMEOUT_MS,
      ...(opts.tls && { tls: opts.tls }),
    });
  } catch (err) {
    throw failed(err instanceof OutboundFetchError ? err.reason : reasonOf(err));
  }
  const length = Number(res.headers['content-length']);
  if (Number.isFinite(length) && length > limit) {
    res.body.destroy();
    throw badRequest(`${kind} at url is larger than ${human(limit)}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        res.body.destroy();
        throw badRequest(`${kind} at url is larger than ${human(limit)}`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof Error && err.name === 'ServiceError') throw err;
    throw failed(reasonOf(err));
  }
  const ct = res.headers['content-type'];
  return { data: Buffer.concat(chunks), contentType: Array.isArray(ct) ? ct[0] : ct };
}

function fileNameFromUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const last = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
    return last && /^[^\0/\\]{1,200}$/.test(last) ? last : undefined;
  } catch {
    return undefined;
  }
}
