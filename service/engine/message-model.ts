/**
 * The one mapping from Baileys' `WAMessage` (proto.IWebMessageInfo) to the spec's Message (interface-spec §2.5).
 * Wrappers real traffic carries (ephemeral, view-once v1/v2/extension, document-with-caption, edited) are unwrapped
 * with Baileys' `normalizeMessageContent`; LID chats and senders are mapped to phone-number JIDs where the
 * mapping is known (`remoteJidAlt`/`participantAlt` on the key, then the caller's `pnForLid`).
 * Kinds the spec does not list (stickers, polls, …) keep their real type name and never throw.
 */
import {
  getContentType,
  isJidGroup,
  isLidUser,
  jidNormalizedUser,
  normalizeMessageContent,
  proto,
  type WAMessage,
  type WAMessageKey,
} from '@whiskeysockets/baileys';
import { messageIdOf, type MessageMedia, type StoredMessage } from '../db/messages.ts';

export interface ModelContext {
  /** API path prefix of this connection, e.g. `/api/connections/<id>`; media URLs hang below it. */
  connectionPath: string;
  /** Own phone-number JID `<digits>@s.whatsapp.net` (null before linking). */
  ownJid: string | null;
  /** Own LID `<digits>@lid`, if known. */
  ownLid: string | null;
  /** PN JID for a LID JID, from the connection's mapping store; undefined when unknown. */
  pnForLid(lid: string): string | undefined;
}

/** Content kinds that carry a downloadable file, with the spec type they map to. */
const MEDIA_KINDS = {
  imageMessage: 'image',
  videoMessage: 'video',
  audioMessage: 'audio',
  documentMessage: 'document',
  stickerMessage: 'sticker',
  ptvMessage: 'video',
} as const satisfies Partial<Record<keyof proto.IMessage, string>>;

type MediaKind = keyof typeof MEDIA_KINDS;

/** What a message is, beyond a plain stored message. */
export type MessageKind =
  | { kind: 'content' }
  | { kind: 'reaction'; targetKey: proto.IMessageKey; emoji: string }
  | { kind: 'edit'; targetKey: proto.IMessageKey; newContent: proto.IMessage }
  | { kind: 'revoke'; targetKey: proto.IMessageKey }
  | { kind: 'protocol' } // history sync, app-state keys, other bookkeeping: not a chat message
  | { kind: 'empty' }; // no content at all (stubs, failed decryption)

/** Classifies a message so the engine can route reactions/edits/protocol messages away from the chat log. */
export function classify(msg: WAMessage): MessageKind {
  const content = normalizeMessageContent(msg.message);
  if (!content) return { kind: 'empty' };
  if (content.reactionMessage?.key) {
    return { kind: 'reaction', targetKey: content.reactionMessage.key, emoji: content.reactionMessage.text ?? '' };
  }
  const pm = content.protocolMessage;
  if (pm) {
    if (pm.type === proto.Message.ProtocolMessage.Type.MESSAGE_EDIT && pm.key && pm.editedMessage) {
      return { kind: 'edit', targetKey: pm.key, newContent: pm.editedMessage };
    }
    if (pm.type === proto.Message.ProtocolMessage.Type.REVOKE && pm.key) return { kind: 'revoke', targetKey: pm.key };
    return { kind: 'protocol' };
  }
  const type = getContentType(content);
  if (!type || type === 'senderKeyDistributionMessage' || type === 'messageContextInfo') return { kind: 'empty' };
  return { kind: 'content' };
}

/** Normalises a JID to its user JID, mapping a LID to the phone-number JID when known. */
export function toPnJid(jid: string, alt: string | null | undefined, ctx: ModelContext): string {
  const user = jidNormalizedUser(jid);
  if (!isLidUser(user)) return user;
  if (alt && !isLidUser(alt)) return jidNormalizedUser(alt);
  if (ctx.ownLid && user === jidNormalizedUser(ctx.ownLid) && ctx.ownJid) return ctx.ownJid;
  return ctx.pnForLid(user) ?? user;
}

/** Chat id of a message key: the PN JID for 1:1 chats where known, the group JID for groups. */
export function chatIdOf(key: WAMessageKey, ctx: ModelContext): string {
  const remote = key.remoteJid ?? '';
  if (isJidGroup(remote)) return remote;
  return toPnJid(remote, key.remoteJidAlt, ctx);
}

/** Spec message id of a key (the chat id is normalised the same way as stored messages). */
export function messageIdOfKey(key: WAMessageKey, ctx: ModelContext): string {
  return messageIdOf(!!key.fromMe, chatIdOf(key, ctx), key.id ?? '');
}

/** Text of a message: body, caption, or a readable summary for locations and contact cards. */
export function textOf(content: proto.IMessage): string {
  return (
    content.conversation ??
    content.extendedTextMessage?.text ??
    content.imageMessage?.caption ??
    content.videoMessage?.caption ??
    content.documentMessage?.caption ??
    content.ptvMessage?.caption ??
    (content.locationMessage
      ? [content.locationMessage.name, content.locationMessage.address].filter(Boolean).join(', ')
      : undefined) ??
    content.contactMessage?.displayName ??
    content.contactsArrayMessage?.displayName ??
    content.pollCreationMessage?.name ??
    content.pollCreationMessageV3?.name ??
    ''
  );
}

const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/3gpp': '3gp',
  'audio/ogg': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/aac': 'aac',
  'application/pdf': 'pdf',
};

/** File name under which a message's media is kept on disk: `<key.id>.<ext>` (safe characters only). */
export function mediaFileName(keyId: string, mimetype: string): string {
  const base = mimetype.split(';')[0]!.trim().toLowerCase();
  const ext = EXTENSIONS[base] ?? (/^[a-z]+\/([a-z0-9]{1,8})$/.exec(base)?.[1] ?? 'bin');
  return `${keyId.replace(/[^A-Za-z0-9_-]/g, '_')}.${ext}`;
}

/** The on-disk file name of a stored message's media (the last segment of its proxy URL). */
export function mediaFileNameOf(media: MessageMedia): string | undefined {
  const last = media.url.slice(media.url.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last) || undefined;
  } catch {
    return undefined;
  }
}

function typeOf(content: proto.IMessage): string {
  const t = getContentType(content);
  if (!t) return 'unknown';
  if (t === 'conversation' || t === 'extendedTextMessage') return 'text';
  if (t in MEDIA_KINDS) return MEDIA_KINDS[t as MediaKind];
  if (t === 'locationMessage' || t === 'liveLocationMessage') return 'location';
  if (t === 'contactMessage' || t === 'contactsArrayMessage') return 'contact';
  return t.replace(/Message$/, '');
}

function contextInfoOf(content: proto.IMessage): proto.IContextInfo | undefined {
  const t = getContentType(content);
  if (!t) return undefined;
  const inner = content[t] as { contextInfo?: proto.IContextInfo | null } | null | undefined;
  return (inner && typeof inner === 'object' && inner.contextInfo) || undefined;
}

function mediaOf(content: proto.IMessage, keyId: string, ctx: ModelContext): MessageMedia | null {
  for (const kind of Object.keys(MEDIA_KINDS) as MediaKind[]) {
    const m = content[kind] as
      | (proto.Message.IImageMessage & { fileName?: string | null })
      | null
      | undefined;
    if (!m) continue;
    const mimetype = m.mimetype ?? 'application/octet-stream';
    const filename = mediaFileName(keyId, mimetype);
    return {
      url: `${ctx.connectionPath}/media/${encodeURIComponent(filename)}`,
      mimetype,
      filename: m.fileName ?? null,
      size: m.fileLength == null ? null : Number(m.fileLength),
    };
  }
  return null;
}

/** Unix seconds of a message timestamp (number or Long). */
export function timestampOf(msg: WAMessage): number {
  const t = msg.messageTimestamp;
  if (t == null) return Math.floor(Date.now() / 1000);
  return typeof t === 'number' ? t : Number(t.toString());
}

/**
 * Maps a content message to the stored record; undefined for messages that are not chat content
 * (reactions, edits, protocol and empty messages: see `classify`).
 */
export function toStoredMessage(msg: WAMessage, ctx: ModelContext): StoredMessage | undefined {
  if (classify(msg).kind !== 'content') return undefined;
  const content = normalizeMessageContent(msg.message)!;
  const key = msg.key;
  const keyId = key.id ?? '';
  const chatId = chatIdOf(key, ctx);
  const fromMe = !!key.fromMe;
  const isGroup = isJidGroup(chatId) ?? false;
  const senderJid = fromMe
    ? (ctx.ownJid ?? '')
    : isGroup
      ? toPnJid(key.participant ?? msg.participant ?? '', key.participantAlt, ctx)
      : chatId;

  const ci = contextInfoOf(content);
  let quotedMessageId: string | null = null;
  if (ci?.stanzaId) {
    const quotedSender = ci.participant ? toPnJid(ci.participant, null, ctx) : undefined;
    const quotedFromMe = !!quotedSender && quotedSender === ctx.ownJid;
    quotedMessageId = messageIdOf(quotedFromMe, chatId, ci.stanzaId);
  }

  return {
    id: messageIdOf(fromMe, chatId, keyId),
    keyId,
    chatId,
    timestamp: timestampOf(msg),
    fromMe,
    senderJid,
    senderPushName: fromMe ? '' : (msg.pushName ?? ''),
    type: typeOf(content),
    text: textOf(content),
    quotedMessageId,
    media: mediaOf(content, keyId, ctx),
    ack: fromMe ? (msg.status ?? null) : null,
    isForwarded: !!ci?.isForwarded,
    raw: proto.WebMessageInfo.encode(msg as proto.IWebMessageInfo).finish(),
  };
}
