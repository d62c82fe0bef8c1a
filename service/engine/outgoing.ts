/**
 * Turns a send request (interface-spec §4.3) into Baileys message content: media from base64 or from an
 * `https://` URL that this service fetches itself (undici, size limit, timeout; Baileys never fetches URLs),
 * type checks with magic-byte sniffing, location pins and vCards. Errors are 400s that say what to fix.
 */
import type { AnyMessageContent } from '@whiskeysockets/baileys';
import { request, type Dispatcher } from 'undici';
import { badRequest } from '../errors.ts';
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

export interface PrepareOptions {
  /** Dispatcher for URL fetches (tests trust a local CA through it); undici's global one otherwise. */
  dispatcher?: Dispatcher;
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
    ({ data, contentType: served } = await fetchUrl(input.url!, limit, kind, opts.dispatcher));
  }
  if (data.length === 0) throw badRequest(`${kind} is empty`);
  if (data.length > limit) throw badRequest(`${kind} is larger than ${human(limit)}`);
  return { data, mimetype: checkedMimetype(kind, data, declared, served, !!(input.type === 'audio' && input.ptt)) };
}

function checkedMimetype(kind: MediaKind, data: Buffer, declared: string | undefined, served: string | undefined, ptt: boolean): string {
  const sniffed = sniffMimetype(data);
  if (declared !== undefined && !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(declared.trim())) {
    throw badRequest('body/mimetype must look like type/subtype');
  }
  if (kind === 'document') return declared?.trim() ?? sniffed ?? (served && baseType(served)) ?? 'application/octet-stream';
  const allowed = MEDIA_TYPES[kind];
  const family = `${kind}/`;
  let mimetype: string | undefined = declared?.trim();
  if (mimetype !== undefined) {
    if (!allowed.includes(baseType(mimetype))) {
      throw badRequest(`mimetype ${baseType(mimetype)} is not accepted for ${kind}s (use ${allowed.join(', ')})`);
    }
    // The bytes must not contradict the declared type (an MP4 container may hold audio or video).
    if (sniffed && sniffed !== baseType(mimetype) && (sniffed.startsWith(family) || kind === 'image')) {
      throw badRequest(`the ${kind} data is ${sniffed}, not ${baseType(mimetype)}`);
    }
  } else {
    let guess = sniffed;
    if (guess === 'audio/mp4' && kind === 'video') guess = 'video/mp4';
    if (guess === 'video/mp4' && kind === 'audio') guess = 'audio/mp4';
    if (!guess && served && allowed.includes(baseType(served))) guess = baseType(served);
    if (!guess) throw badRequest(`could not recognise the ${kind} format; pass mimetype (one of ${allowed.join(', ')})`);
    if (!allowed.includes(guess)) throw badRequest(`the ${kind} data is ${guess}; accepted: ${allowed.join(', ')}`);
    mimetype = guess;
  }
  // Voice notes are Opus in Ogg; WhatsApp clients expect the codecs parameter.
  if (kind === 'audio' && ptt && baseType(mimetype) === 'audio/ogg' && !mimetype.includes('codecs')) mimetype = 'audio/ogg; codecs=opus';
  return mimetype;
}

async function fetchUrl(
  url: string,
  limit: number,
  kind: MediaKind,
  dispatcher: Dispatcher | undefined,
): Promise<{ data: Buffer; contentType: string | undefined }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest('body/url is not a valid URL');
  }
  if (parsed.protocol !== 'https:') throw badRequest('body/url must be an https:// URL');
  const signal = AbortSignal.timeout(URL_FETCH_TIMEOUT_MS);
  let res: Dispatcher.ResponseData;
  try {
    res = await request(parsed, { method: 'GET', signal, ...(dispatcher && { dispatcher }), headers: { accept: '*/*' } });
  } catch (err) {
    throw badRequest(`could not fetch url: ${describe(err)}`);
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    res.body.resume();
    throw badRequest(`could not fetch url: HTTP ${res.statusCode}`);
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
    throw badRequest(`could not fetch url: ${describe(err)}`);
  }
  const ct = res.headers['content-type'];
  return { data: Buffer.concat(chunks), contentType: Array.isArray(ct) ? ct[0] : ct };
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'timed out';
    const code = (err as { code?: string }).code;
    return code ? `${code}` : err.message;
  }
  return String(err);
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
