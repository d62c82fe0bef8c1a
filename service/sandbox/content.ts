/**
 * Message content as the simulated phones see it (brief §A6, §B9).
 *
 * Owns: building the `proto.Message` a phone sends for each admin-API content kind (text, media, location,
 * contact card, quoted reply, reaction, edit) with its stanza attributes (`type`, `edit`, `<enc mediatype>`),
 * and classifying any decrypted `proto.Message` into the admin API's message view fields.
 */
import { normalizeMessageContent, proto } from '@whiskeysockets/baileys';
import { mediaContent, type MediaKind } from './media.ts';

export type MessageType =
  'text' | 'image' | 'video' | 'audio' | 'document' | 'sticker' | 'location' | 'contact' | 'reaction' | 'edit' | 'revoke' | 'other';

export interface LocationInput {
  latitude: number;
  longitude: number;
  name?: string | undefined;
  address?: string | undefined;
}

export interface ContactInput {
  name: string;
  /** `+<digits>` */
  phoneNumber: string;
}

export interface Classified {
  type: MessageType;
  /** Text shown for the message (text, caption, emoji, edited text); null when none. */
  text: string | null;
  replyTo: string | null;
  location?: LocationInput;
  contact?: ContactInput & { vcard: string };
  reaction?: { messageId: string; emoji: string };
  edit?: { messageId: string; text: string };
  revoke?: { messageId: string };
  /** contextInfo.isForwarded of the content (absent when not forwarded). */
  forwarded?: boolean;
  media?: { kind: MediaKind; mimetype: string; filename?: string; caption?: string; ptt?: boolean };
}

/** Stanza attributes for a phone-sent message; `enc:<name>` entries go onto the `<enc>` node. */
export function stanzaAttrs(message: proto.IMessage): Record<string, string> {
  const m = normalizeMessageContent(message);
  const attrs: Record<string, string> = { type: 'text' };
  if (!m) return attrs;
  const media = mediaContent(m);
  if (media) {
    attrs.type = 'media';
    attrs['enc:mediatype'] = media.kind === 'audio' && media.media.ptt ? 'ptt' : media.kind;
  } else if (m.locationMessage) {
    attrs.type = 'media';
    attrs['enc:mediatype'] = 'location';
  } else if (m.contactMessage) {
    attrs.type = 'media';
    attrs['enc:mediatype'] = 'vcard';
  } else if (m.reactionMessage) {
    attrs.type = 'reaction';
    attrs['enc:decrypt-fail'] = 'hide';
  } else if (m.protocolMessage?.type === proto.Message.ProtocolMessage.Type.MESSAGE_EDIT) {
    attrs.edit = '1';
  } else if (m.protocolMessage?.type === proto.Message.ProtocolMessage.Type.REVOKE) {
    attrs.edit = '7';
  }
  return attrs;
}

export function buildVcard(c: ContactInput): string {
  const digits = c.phoneNumber.replace(/\D/g, '');
  const fn = c.name.replace(/[\r\n]/g, ' ');
  return `BEGIN:VCARD\nVERSION:3.0\nFN:${fn}\nTEL;type=CELL;type=VOICE;waid=${digits}:+${digits}\nEND:VCARD`;
}

function parseVcard(vcard: string, displayName: string | null | undefined): ContactInput & { vcard: string } {
  const fn = /^FN:(.*)$/m.exec(vcard)?.[1]?.trim();
  const waid = /waid=(\d+)/.exec(vcard)?.[1];
  const tel = /^TEL[^:]*:(.*)$/m.exec(vcard)?.[1]?.replace(/[^\d+]/g, '');
  const phoneNumber = waid ? `+${waid}` : tel ? (tel.startsWith('+') ? tel : `+${tel}`) : '';
  return { name: displayName ?? fn ?? '', phoneNumber, vcard };
}

/** The first `contextInfo.stanzaId` of any sub-message (a quoted reply). */
function quotedId(m: proto.IMessage): string | null {
  for (const value of Object.values(m)) {
    const ctx = (value as { contextInfo?: proto.IContextInfo | null } | null)?.contextInfo;
    if (ctx?.stanzaId) return ctx.stanzaId;
  }
  return null;
}

/** Every `contextInfo.mentionedJid` of any sub-message (mentions), in order. */
export function mentionedJids(message: proto.IMessage | null | undefined): string[] {
  const m = normalizeMessageContent(message);
  if (!m) return [];
  for (const value of Object.values(m)) {
    const ctx = (value as { contextInfo?: proto.IContextInfo | null } | null)?.contextInfo;
    if (ctx?.mentionedJid?.length) return ctx.mentionedJid;
  }
  return [];
}

/** Classify a decrypted message for the admin API view. */
export function classify(message: proto.IMessage | null | undefined): Classified {
  const m = normalizeMessageContent(message);
  if (!m) return { type: 'other', text: null, replyTo: null };
  const replyTo = quotedId(m);
  const classified = classifyContent(m, replyTo);
  if (isForwarded(m)) classified.forwarded = true;
  return classified;
}

/** Whether any sub-message's contextInfo says it was forwarded. */
function isForwarded(m: proto.IMessage): boolean {
  return Object.values(m).some((value) => !!(value as { contextInfo?: proto.IContextInfo | null } | null)?.contextInfo?.isForwarded);
}

function classifyContent(m: proto.IMessage, replyTo: string | null): Classified {
  const pm = m.protocolMessage;
  if (pm?.type === proto.Message.ProtocolMessage.Type.MESSAGE_EDIT) {
    const edited = normalizeMessageContent(pm.editedMessage);
    const text = edited?.conversation ?? edited?.extendedTextMessage?.text ?? '';
    return { type: 'edit', text, replyTo, edit: { messageId: pm.key?.id ?? '', text } };
  }
  if (pm?.type === proto.Message.ProtocolMessage.Type.REVOKE) {
    return { type: 'revoke', text: null, replyTo, revoke: { messageId: pm.key?.id ?? '' } };
  }
  if (m.reactionMessage) {
    const emoji = m.reactionMessage.text ?? '';
    return { type: 'reaction', text: emoji, replyTo, reaction: { messageId: m.reactionMessage.key?.id ?? '', emoji } };
  }
  const mc = mediaContent(m);
  if (mc) {
    const { kind, media } = mc;
    const caption = media.caption ?? undefined;
    return {
      type: kind,
      text: caption ?? null,
      replyTo,
      media: {
        kind,
        mimetype: media.mimetype ?? 'application/octet-stream',
        ...(media.fileName ? { filename: media.fileName } : {}),
        ...(caption !== undefined ? { caption } : {}),
        ...(kind === 'audio' ? { ptt: !!media.ptt } : {}),
      },
    };
  }
  if (m.locationMessage) {
    const l = m.locationMessage;
    return {
      type: 'location',
      text: l.name ?? null,
      replyTo,
      location: {
        latitude: l.degreesLatitude ?? 0,
        longitude: l.degreesLongitude ?? 0,
        ...(l.name ? { name: l.name } : {}),
        ...(l.address ? { address: l.address } : {}),
      },
    };
  }
  const card = m.contactMessage ?? m.contactsArrayMessage?.contacts?.[0];
  if (card?.vcard) {
    const contact = parseVcard(card.vcard, card.displayName);
    return { type: 'contact', text: contact.name, replyTo, contact };
  }
  const text = m.conversation ?? m.extendedTextMessage?.text;
  if (text !== null && text !== undefined) return { type: 'text', text, replyTo };
  return { type: 'other', text: null, replyTo };
}

/** Media fields of a phone-sent media message (the host part is filled by the caller). */
export interface HostedMedia {
  url: string;
  directPath: string;
  mediaKey: Buffer;
  fileSha256: Buffer;
  fileEncSha256: Buffer;
  fileLength: number;
}

export interface MediaInput {
  kind: MediaKind;
  data: Buffer;
  mimetype: string;
  filename?: string | undefined;
  caption?: string | undefined;
  ptt?: boolean | undefined;
}

/** The proto of a phone-sent media message. */
export function mediaMessage(input: MediaInput, hosted: HostedMedia, contextInfo?: proto.IContextInfo): proto.IMessage {
  const common = {
    url: hosted.url,
    directPath: hosted.directPath,
    mediaKey: hosted.mediaKey,
    mimetype: input.mimetype,
    fileSha256: hosted.fileSha256,
    fileEncSha256: hosted.fileEncSha256,
    fileLength: hosted.fileLength,
    mediaKeyTimestamp: Math.floor(Date.now() / 1000),
    ...(contextInfo ? { contextInfo } : {}),
  };
  switch (input.kind) {
    case 'image':
      return { imageMessage: { ...common, ...(input.caption !== undefined ? { caption: input.caption } : {}) } };
    case 'video':
      return { videoMessage: { ...common, ...(input.caption !== undefined ? { caption: input.caption } : {}) } };
    case 'audio':
      return { audioMessage: { ...common, ptt: !!input.ptt, seconds: 1 } };
    case 'sticker':
      return { stickerMessage: common };
    case 'document':
      return {
        documentMessage: {
          ...common,
          fileName: input.filename ?? 'file',
          title: input.filename ?? 'file',
          ...(input.caption !== undefined ? { caption: input.caption } : {}),
        },
      };
  }
}
