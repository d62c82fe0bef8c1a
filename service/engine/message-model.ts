/**
 * The one mapping from Baileys' `WAMessage` (proto.IWebMessageInfo) to the spec's Message (interface-spec §2.5).
 * Wrappers real traffic carries (ephemeral, view-once v1/v2/extension, document-with-caption, edited) are unwrapped
 * with Baileys' `normalizeMessageContent`; LID chats and senders are mapped to phone-number JIDs where the
 * mapping is known (`remoteJidAlt`/`participantAlt` on the key, then the caller's `pnForLid`).
 * `type` stays within the spec's seven; the precise `kind` (MESSAGE_KINDS) and structured content (location,
 * contacts, poll, selection, album) are derived here too (issue #13). Unknown kinds become `unsupported` with
 * `rawType`, the proto field name; nothing throws.
 */
import {
  getContentType,
  isJidBroadcast,
  isJidGroup,
  isLidUser,
  jidNormalizedUser,
  normalizeMessageContent,
  proto,
  type WAMessage,
  type WAMessageKey,
} from '@whiskeysockets/baileys';
import {
  EMPTY_CONTENT,
  messageIdOf,
  typeOfKind,
  type MessageContact,
  type MessageContent,
  type MessageKindName,
  type MessageMedia,
  type StoredMessage,
} from '../db/messages.ts';
import { mediaFileOfUrl } from '../db/media-url.ts';

/** The chat id of status posts (stories). */
export const STATUS_JID = 'status@broadcast';

export interface ModelContext {
  /** The absolute media URL of a file of this connection (`store.mediaUrls.of`, db/media-url.ts). */
  mediaUrl(file: string): string;
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
  | { kind: 'pollVote'; pollKey: proto.IMessageKey; vote: proto.Message.IPollEncValue; timestampMs: number }
  | { kind: 'undecryptable' } // a CIPHERTEXT stub: the device could not decrypt it (yet); a retry may deliver it
  | { kind: 'protocol' } // history sync, app-state keys, other bookkeeping: not a chat message
  | { kind: 'empty' }; // no content at all (other stubs)

/** Classifies a message so the engine can route reactions/edits/protocol messages away from the chat log. */
export function classify(msg: WAMessage): MessageKind {
  const content = normalizeMessageContent(msg.message);
  if (msg.messageStubType === proto.WebMessageInfo.StubType.CIPHERTEXT && !content) {
    // A `category="peer"` message is one of the account's own devices talking to another (history sync
    // notifications, app-state key shares): never chat content, and Baileys does not ask for it again
    // (messages-recv.js sends no retry receipt for peer messages), so a placeholder would never be replaced.
    return msg.category === 'peer' ? { kind: 'protocol' } : { kind: 'undecryptable' };
  }
  if (!content) return { kind: 'empty' };
  const pu = content.pollUpdateMessage;
  if (pu?.pollCreationMessageKey && pu.vote) {
    return { kind: 'pollVote', pollKey: pu.pollCreationMessageKey, vote: pu.vote, timestampMs: Number(pu.senderTimestampMs ?? 0) };
  }
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

/**
 * A message key with the legacy addressing fields of earlier Baileys 6.7/7.0 releases (`senderPn`, `senderLid`,
 * `participantPn`, `participantLid`), which gateways still receive from stored or relayed keys.
 */
export type KeyWithAlts = WAMessageKey & {
  senderPn?: string | null;
  senderLid?: string | null;
  participantPn?: string | null;
  participantLid?: string | null;
};

/**
 * Every LID↔phone pair a key carries: the chat's (`remoteJid` + `remoteJidAlt`/`senderPn`/`senderLid`) and the
 * participant's (`participant` + `participantAlt`/`participantPn`/`participantLid`). Pairs are `{ lid, pn }` user JIDs.
 */
export function lidPairsOf(key: WAMessageKey): Array<{ lid: string; pn: string }> {
  const k = key as KeyWithAlts;
  const out: Array<{ lid: string; pn: string }> = [];
  const pair = (a: string | null | undefined, ...alts: Array<string | null | undefined>) => {
    if (!a) return;
    for (const b of alts) {
      if (!b) continue;
      const x = jidNormalizedUser(a);
      const y = jidNormalizedUser(b);
      if (isLidUser(x) && y.endsWith('@s.whatsapp.net')) out.push({ lid: x, pn: y });
      else if (isLidUser(y) && x.endsWith('@s.whatsapp.net')) out.push({ lid: y, pn: x });
    }
  };
  const broadcast = !!k.remoteJid && isJidBroadcast(k.remoteJid);
  if (k.remoteJid && !isJidGroup(k.remoteJid) && !broadcast) pair(k.remoteJid, k.remoteJidAlt, k.senderPn, k.senderLid);
  // Status/broadcast keys carry the author's other address in remoteJidAlt (Baileys issue #2652).
  pair(k.participant, k.participantAlt, k.participantPn, k.participantLid, broadcast ? k.remoteJidAlt : null);
  return out;
}

/** The phone-number alternative of the chat address of a key, if it carries one. */
function remoteAltOf(key: WAMessageKey): string | undefined {
  const k = key as KeyWithAlts;
  return k.remoteJidAlt ?? k.senderPn ?? undefined;
}

/** The phone-number alternative of the participant of a key (for status posts also `remoteJidAlt`), if any. */
function participantAltOf(key: WAMessageKey): string | undefined {
  const k = key as KeyWithAlts;
  const broadcastAlt = k.remoteJid && isJidBroadcast(k.remoteJid) ? k.remoteJidAlt : undefined;
  return k.participantAlt ?? k.participantPn ?? broadcastAlt ?? undefined;
}

/** Chat id of a message key: the PN JID for 1:1 chats where known, the group JID for groups. */
export function chatIdOf(key: WAMessageKey, ctx: ModelContext): string {
  const remote = key.remoteJid ?? '';
  if (isJidGroup(remote)) return remote;
  return toPnJid(remote, remoteAltOf(key), ctx);
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
    content.liveLocationMessage?.caption ??
    content.contactMessage?.displayName ??
    content.contactsArrayMessage?.displayName ??
    content.pollCreationMessage?.name ??
    content.pollCreationMessageV2?.name ??
    content.pollCreationMessageV3?.name ??
    content.buttonsResponseMessage?.selectedDisplayText ??
    content.listResponseMessage?.title ??
    content.templateButtonReplyMessage?.selectedDisplayText ??
    content.interactiveResponseMessage?.body?.text ??
    ''
  );
}

/** Content kinds by proto field name (wrappers already unwrapped); anything else is `unsupported`. */
const KIND_OF_FIELD: Partial<Record<keyof proto.IMessage, MessageKindName>> = {
  conversation: 'text',
  extendedTextMessage: 'text',
  imageMessage: 'image',
  videoMessage: 'video',
  ptvMessage: 'video',
  audioMessage: 'audio',
  documentMessage: 'document',
  stickerMessage: 'sticker',
  locationMessage: 'location',
  liveLocationMessage: 'location',
  contactMessage: 'contact',
  contactsArrayMessage: 'contact',
  pollCreationMessage: 'poll',
  pollCreationMessageV2: 'poll',
  pollCreationMessageV3: 'poll',
  pollCreationMessageV4: 'poll',
  albumMessage: 'album',
  buttonsResponseMessage: 'buttons_response',
  templateButtonReplyMessage: 'buttons_response',
  interactiveResponseMessage: 'buttons_response',
  listResponseMessage: 'list_response',
};

/** Phone numbers of a vCard's TEL lines: the `waid` parameter when present, else the digits of the value. */
export function vcardPhoneNumbers(vcard: string): string[] {
  const out: string[] = [];
  for (const line of vcard.split(/\r?\n/)) {
    if (!/^(item\d+\.)?TEL[;:]/i.test(line)) continue;
    const waid = /waid=(\d+)/i.exec(line)?.[1];
    const value = line.slice(line.indexOf(':') + 1).trim();
    const digits = waid ?? value.replace(/[^\d+]/g, '');
    if (digits) out.push(digits.startsWith('+') ? digits : `+${digits}`);
  }
  return out;
}

function contactOf(c: proto.Message.IContactMessage): MessageContact {
  const vcard = c.vcard ?? '';
  return { name: c.displayName ?? '', phoneNumbers: vcardPhoneNumbers(vcard), vcard };
}

type PollCreation = proto.Message.IPollCreationMessage;

/** The poll creation message of a content, whichever version. */
export function pollCreationOf(content: proto.IMessage): PollCreation | undefined {
  return (
    content.pollCreationMessage ??
    content.pollCreationMessageV2 ??
    content.pollCreationMessageV3 ??
    content.pollCreationMessageV4 ??
    undefined
  ) as PollCreation | undefined;
}

/** Structured content (null where absent) of an unwrapped content message. */
function structuredOf(content: proto.IMessage, outer: proto.IMessage | null | undefined, chatId: string, fromMe: boolean): MessageContent {
  const out: MessageContent = { ...EMPTY_CONTENT };
  const loc = content.locationMessage;
  const live = content.liveLocationMessage;
  if (loc) {
    out.location = {
      latitude: loc.degreesLatitude ?? 0,
      longitude: loc.degreesLongitude ?? 0,
      name: loc.name || null,
      address: loc.address || null,
      url: loc.url || null,
      isLive: !!loc.isLive,
    };
  } else if (live) {
    out.location = {
      latitude: live.degreesLatitude ?? 0,
      longitude: live.degreesLongitude ?? 0,
      name: null,
      address: null,
      url: null,
      isLive: true,
    };
  }
  if (content.contactMessage) out.contacts = [contactOf(content.contactMessage)];
  else if (content.contactsArrayMessage) out.contacts = (content.contactsArrayMessage.contacts ?? []).map(contactOf);
  const poll = pollCreationOf(content);
  if (poll) {
    out.poll = {
      name: poll.name ?? '',
      selectableCount: poll.selectableOptionsCount ?? 0,
      options: (poll.options ?? []).map((o) => ({ name: o.optionName ?? '', votes: 0, voters: [] })),
    };
  }
  const br = content.buttonsResponseMessage;
  const lr = content.listResponseMessage;
  const tr = content.templateButtonReplyMessage;
  const ir = content.interactiveResponseMessage;
  if (br) out.selection = { id: br.selectedButtonId ?? '', title: br.selectedDisplayText ?? '' };
  else if (lr) out.selection = { id: lr.singleSelectReply?.selectedRowId ?? '', title: lr.title ?? '' };
  else if (tr) out.selection = { id: tr.selectedId ?? '', title: tr.selectedDisplayText ?? '' };
  else if (ir) {
    let id = ir.nativeFlowResponseMessage?.name ?? '';
    try {
      const params = JSON.parse(ir.nativeFlowResponseMessage?.paramsJson ?? '{}') as { id?: unknown };
      if (typeof params.id === 'string') id = params.id;
    } catch {
      // paramsJson is free-form; keep the flow name
    }
    out.selection = { id, title: ir.body?.text ?? '' };
  }
  const album = content.albumMessage;
  if (album) out.album = { expectedImages: album.expectedImageCount ?? 0, expectedVideos: album.expectedVideoCount ?? 0 };
  // An album child names its album in messageContextInfo, inside or outside an associatedChildMessage wrapper. The
  // album's key is written by the sender (`fromMe: true` from its side, as Baileys' albumParentKey), and an album's
  // items always come from the album's sender: the album is on the same side as the item.
  const assoc = content.messageContextInfo?.messageAssociation ?? outer?.messageContextInfo?.messageAssociation;
  if (assoc?.parentMessageKey?.id && assoc.associationType === proto.MessageAssociation.AssociationType.MEDIA_ALBUM) {
    out.albumId = messageIdOf(fromMe, chatId, assoc.parentMessageKey.id);
  }
  return out;
}

/** Kind and raw type of an unwrapped content message. */
export function kindOf(content: proto.IMessage): { kind: MessageKindName; rawType: string | null } {
  const t = getContentType(content);
  const kind = t ? KIND_OF_FIELD[t] : undefined;
  return kind ? { kind, rawType: null } : { kind: 'unsupported', rawType: t ?? null };
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
  return mediaFileOfUrl(media.url);
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
      url: ctx.mediaUrl(filename),
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
  const classified = classify(msg).kind;
  if (classified === 'undecryptable') return undecryptableOf(msg, ctx);
  if (classified !== 'content') return undefined;
  const content = normalizeMessageContent(msg.message)!;
  const key = msg.key;
  const keyId = key.id ?? '';
  const chatId = chatIdOf(key, ctx);
  const { fromMe, senderJid } = senderOf(msg, chatId, ctx);
  const { kind, rawType } = kindOf(content);
  const secret = kind === 'poll' ? msg.message?.messageContextInfo?.messageSecret ?? content.messageContextInfo?.messageSecret : null;

  const ci = contextInfoOf(content);
  let quotedMessageId: string | null = null;
  if (ci?.stanzaId) {
    const quotedSender = ci.participant ? toPnJid(ci.participant, null, ctx) : undefined;
    const quotedFromMe = !!quotedSender && quotedSender === ctx.ownJid;
    quotedMessageId = messageIdOf(quotedFromMe, chatId, ci.stanzaId);
  }
  const mentions = (ci?.mentionedJid ?? []).filter((j) => !!j).map((j) => toPnJid(j, null, ctx));

  return {
    id: messageIdOf(fromMe, chatId, keyId),
    keyId,
    chatId,
    timestamp: timestampOf(msg),
    fromMe,
    senderJid,
    senderPushName: fromMe ? '' : (msg.pushName ?? ''),
    type: typeOfKind(kind),
    kind,
    rawType,
    text: textOf(content),
    quotedMessageId,
    media: mediaOf(content, keyId, ctx),
    ...structuredOf(content, msg.message, chatId, fromMe),
    ack: fromMe ? (msg.status ?? null) : null,
    mentions,
    isForwarded: !!ci?.isForwarded,
    raw: proto.WebMessageInfo.encode(msg as proto.IWebMessageInfo).finish(),
    messageSecret: secret && secret.length > 0 ? secret : null,
  };
}

/** Whether a JID is this account's own phone-number JID or LID. */
export function isOwnJid(jid: string | null | undefined, ctx: ModelContext): boolean {
  if (!jid) return false;
  const user = jidNormalizedUser(jid);
  return (!!ctx.ownJid && user === jidNormalizedUser(ctx.ownJid)) || (!!ctx.ownLid && user === jidNormalizedUser(ctx.ownLid));
}

/**
 * `fromMe` and the sender of a message: the own JID for own messages (also when the sender is the own LID or
 * phone JID without the key's fromMe flag), the participant in groups and status posts, the chat otherwise.
 */
export function senderOf(msg: WAMessage, chatId: string, ctx: ModelContext): { fromMe: boolean; senderJid: string } {
  const key = msg.key;
  const participant = key.participant ?? msg.participant ?? null;
  const fromMe = !!key.fromMe || (participant !== null && participant !== '' && isOwnJid(participant, ctx));
  if (fromMe) return { fromMe, senderJid: ctx.ownJid ?? '' };
  if (isJidGroup(chatId) || chatId === STATUS_JID) {
    return { fromMe, senderJid: toPnJid(participant ?? '', participantAltOf(key), ctx) };
  }
  return { fromMe, senderJid: chatId };
}

/** The placeholder of a message the device could not decrypt (yet): kind `undecryptable`, no text, no media. */
function undecryptableOf(msg: WAMessage, ctx: ModelContext): StoredMessage {
  const keyId = msg.key.id ?? '';
  const chatId = chatIdOf(msg.key, ctx);
  const { fromMe, senderJid } = senderOf(msg, chatId, ctx);
  return {
    id: messageIdOf(fromMe, chatId, keyId),
    keyId,
    chatId,
    timestamp: timestampOf(msg),
    fromMe,
    senderJid,
    senderPushName: fromMe ? '' : (msg.pushName ?? ''),
    type: 'text',
    kind: 'undecryptable',
    rawType: null,
    text: '',
    quotedMessageId: null,
    media: null,
    ...EMPTY_CONTENT,
    ack: null,
    raw: null,
    messageSecret: null,
  };
}
