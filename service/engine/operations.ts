/**
 * Everyday operations beyond plain sends (issue 14): delete for everyone (revoke), forward, stickers and the
 * block list (Baileys `updateBlockStatus` / `fetchBlocklist`, `xmlns="blocklist"` IQs).
 * Built on the engine's own pieces (online session, chat resolution, the relay that waits for the server's ack,
 * the send pipeline), which the engine hands over in `OperationsDeps`.
 *
 * Protocol facts (Baileys rc14): a revoke is `sendMessage(jid, { delete: key })`, a protocolMessage REVOKE; a group
 * admin's revoke of another member's message carries `edit="8"` on the stanza (lib/Socket/messages-send.js). A
 * forward is `sendMessage(jid, { forward, force })`: the content is copied with `contextInfo.isForwarded` and
 * `forwardingScore`, media keeps its CDN path and keys (nothing is downloaded or uploaded again;
 * lib/Utils/messages.js generateForwardMessageContent). A sticker is a `stickerMessage` with a WebP file.
 */
import {
  isJidGroup,
  proto,
  type AnyMessageContent,
  type MiscMessageGenerationOptions,
  type WAMessage,
  type WAMessageKey,
} from '@whiskeysockets/baileys';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import type { Logger } from 'pino';
import type { IdempotencyRef } from '../db/idempotency.ts';
import type { Message } from '../db/messages.ts';
import type { Store } from '../db/store.ts';
import { badRequest, forbidden, ServiceError } from '../errors.ts';
import { canonicalChatId, STATUS_CHAT_ID } from './chat-id.ts';
import { participantJidOf } from './groups.ts';
import { mediaFileNameOf } from './message-model.ts';
import { sniffMimetype, type MediaStore } from './media-store.ts';
import { loadMedia, prepareContent, type PrepareOptions, type PreparedContent } from './outgoing.ts';
import type { Session } from './session.ts';
import type { SendOptions } from './types.ts';

/** Side of a sticker, in pixels (WhatsApp's sticker format is a 512×512 WebP). */
export const STICKER_SIZE = 512;

export interface StickerInput {
  chatId: string;
  url?: string;
  base64?: string;
  replyTo?: string;
  skipPresence?: boolean;
}

export interface ForwardInput {
  /** Where to forward to: a JID or an international number. */
  chatId: string;
  /** The stored message to forward. */
  messageId: string;
  /** The chat the message is in. */
  fromChatId: string;
}

/** The fonts of a text status (proto `ExtendedTextMessage.FontType`: 0 system … 10 Courier Prime bold). */
export const STATUS_FONTS = [0, 1, 2, 6, 7, 8, 9, 10] as const;

/**
 * A status post (a "story", shown for 24 h on the contacts' status list): a text on a coloured background, or an
 * image with an optional caption. `contacts` (international numbers or user JIDs) are who may see it; by default
 * every individual contact of the connection (`GET /connections/:id/contacts`).
 */
export type StatusInput = { contacts?: string[] | undefined } & (
  | { type: 'text'; text: string; backgroundColor?: string | undefined; font?: number | undefined }
  | { type: 'image'; url?: string | undefined; base64?: string | undefined; mimetype?: string | undefined; caption?: string | undefined }
);
/**
 * Options of the relay: Baileys' send options (`quoted`, and for a status post `statusJidList`, `backgroundColor`,
 * `font`), plus the request's idempotency key and the id of the Message the request answers with when it is not
 * the one recorded (a reaction, edit or revoke answers the message it changed).
 */
export type RelayOptions = Pick<MiscMessageGenerationOptions, 'quoted' | 'statusJidList' | 'backgroundColor' | 'font'> & {
  idempotency?: IdempotencyRef;
  answerId?: string;
};

/** The relay options of a call that changes the stored message `answerId` (reaction, edit, revoke). */
export function idempotent(opts: SendOptions, answerId: string): RelayOptions {
  return opts.idempotency ? { idempotency: opts.idempotency, answerId } : {};
}

/** What operations need of the engine (its internal helpers). */
export interface OperationsDeps {
  store: Store;
  logger: Logger;
  media: MediaStore;
  prepareOptions: PrepareOptions;
  onlineSession(connectionId: string): Session;
  resolveChat(session: Session, chatId: string): Promise<{ jid: string; chatId: string }>;
  /** The user a `:jid` names (engine.ts resolveUser): 400 for a malformed id, an unknown LID or a number not on WhatsApp. */
  resolveUser(session: Session, jid: string): Promise<{ jid: string; chatId: string }>;
  storedMessage(connectionId: string, messageId: string, chatIds: string[]): Message;
  keyOf(connectionId: string, message: Message, jid: string): WAMessageKey;
  relay<T>(
    session: Session,
    jid: string,
    content: AnyMessageContent,
    options: RelayOptions,
    record: (sent: WAMessage) => T,
  ): Promise<{ recorded: T; serverAcked: boolean }>;
  deliver(
    session: Session,
    chat: { jid: string; chatId: string },
    input: { skipPresence?: boolean | undefined },
    prepared: PreparedContent,
    quoted?: WAMessage,
    opts?: SendOptions,
  ): Promise<Message>;
  quotedMessage(connectionId: string, replyTo: string, chatId: string): WAMessage;
}

/** The operations as the engine exposes them (see Engine in types.ts for the contracts). */
export interface Operations {
  revokeMessage(connectionId: string, messageId: string, chatId: string, opts?: SendOptions): Promise<Message>;
  forward(connectionId: string, input: ForwardInput, opts?: SendOptions): Promise<Message>;
  sendSticker(connectionId: string, input: StickerInput, opts?: SendOptions): Promise<Message>;
  /**
   * Posts a status (`status@broadcast`, Baileys `sendMessage` with `statusJidList`, `backgroundColor`, `font`) and
   * returns the stored Message (chatId `status@broadcast`, fromMe).
   * @throws ServiceError 400 bad input or no contact to show it to, 409 not online, 502 refused or not sent.
   */
  postStatus(connectionId: string, input: StatusInput, opts?: SendOptions): Promise<Message>;
  /** Blocks or unblocks a user (a JID or an international number); answers its PN JID and the new state. */
  setBlocked(connectionId: string, jid: string, blocked: boolean): Promise<{ jid: string; blocked: boolean }>;
  /** The account's block list as PN JIDs (LIDs the connection cannot map stay LIDs). */
  blocklist(connectionId: string): Promise<string[]>;
  /** Rejects an incoming call still ringing. @throws ServiceError 404 `Call not found`, 409 not online, 502. */
  rejectCall(connectionId: string, callId: string): Promise<void>;
}

/** A WebP sticker from a WebP (as is), PNG or JPEG file: fitted into 512×512 on a transparent background. */
export async function toStickerWebp(data: Buffer): Promise<Buffer> {
  const type = await sniffMimetype(data);
  if (type === 'image/webp') return data;
  if (type !== 'image/png' && type !== 'image/jpeg') throw badRequest(`a sticker must be WebP, PNG or JPEG${type ? `, not ${type}` : ''}`);
  try {
    return await sharp(data)
      .resize(STICKER_SIZE, STICKER_SIZE, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .webp()
      .toBuffer();
  } catch {
    throw badRequest('the sticker image could not be decoded');
  }
}

export function createOperations(d: OperationsDeps): Operations {
  const { store, logger, media } = d;

  /** Whether this account is an admin of `groupJid` (undefined when the group's metadata cannot be read). */
  async function isGroupAdmin(session: Session, groupJid: string): Promise<boolean | undefined> {
    try {
      const meta = await session.groupMetadata(groupJid); // cached; asked from the server only when unknown
      const ctx = session.modelContext();
      const mine = new Set([ctx.ownJid, ctx.ownLid].filter((j): j is string => !!j));
      const me = meta.participants.find((p) => mine.has(p.id) || (p.phoneNumber && mine.has(p.phoneNumber)) || (p.lid && mine.has(p.lid)));
      return !!me?.admin;
    } catch (err) {
      logger.info({ err, connectionId: session.connectionId, groupJid }, 'group metadata unavailable for a revoke');
      return undefined;
    }
  }

  return {
    async revokeMessage(connectionId, messageId, chatIdInput, opts = {}) {
      const target = d.storedMessage(connectionId, messageId, [canonicalChatId(store, connectionId, chatIdInput)]);
      const isGroup = isJidGroup(target.chatId) ?? false;
      if (!target.fromMe && !isGroup) throw forbidden('Only your own messages can be deleted for everyone in a 1:1 chat');
      if (target.kind === 'revoked') return target;
      const session = d.onlineSession(connectionId);
      if (!target.fromMe && (await isGroupAdmin(session, target.chatId)) === false) {
        throw forbidden("Only a group admin can delete another member's message");
      }
      const { jid } = await d.resolveChat(session, target.chatId);
      const key = d.keyOf(connectionId, target, jid);
      const me = session.me?.jid ?? '';
      const { recorded } = await d.relay(session, jid, { delete: key }, idempotent(opts, target.id), () =>
        session.applyRevoke(target.chatId, key.id!, { fromMe: true, senderJid: me }),
      );
      return recorded ?? store.messages.get(connectionId, target.id) ?? target;
    },

    async forward(connectionId, input, opts = {}) {
      const source = d.storedMessage(connectionId, input.messageId, [canonicalChatId(store, connectionId, input.fromChatId)]);
      if (source.kind === 'revoked') throw badRequest('A message deleted for everyone cannot be forwarded');
      const raw = store.messages.getRaw(connectionId, source.id);
      if (!raw) throw badRequest('This message cannot be forwarded (its content is not stored)');
      const original = proto.WebMessageInfo.decode(raw) as WAMessage;
      if (!original.message) throw badRequest('This message cannot be forwarded (it has no content)');
      const session = d.onlineSession(connectionId);
      const chat = await d.resolveChat(session, input.chatId);
      // `force`: marked forwarded also when it is the account's own message (Baileys counts only others' otherwise).
      const content = { forward: original, force: true } as AnyMessageContent;
      const relayOptions = opts.idempotency ? { idempotency: opts.idempotency } : {};
      const { recorded, serverAcked } = await d.relay(session, chat.jid, content, relayOptions, (sent) => session.recordSent(sent));
      // The forwarded copy points at the same CDN file: keep the local copy under the new name (no download).
      const from = source.media && mediaFileNameOf(source.media);
      const to = recorded.media && mediaFileNameOf(recorded.media);
      const fromPath = from && to ? media.stat(connectionId, from)?.path : undefined;
      if (fromPath && to) {
        await readFile(fromPath)
          .then((bytes) => media.writeBuffer(connectionId, to, bytes))
          .catch((err: unknown) => logger.warn({ err, connectionId, to }, 'could not copy forwarded media'));
      }
      return serverAcked ? (store.messages.get(connectionId, recorded.id) ?? recorded) : recorded;
    },

    async setBlocked(connectionId, jidInput, blocked) {
      if (/@g\.us$/.test(jidInput.trim())) throw badRequest('A group cannot be blocked (leave it instead)');
      const session = d.onlineSession(connectionId);
      const { jid, chatId } = await d.resolveUser(session, jidInput);
      if (isJidGroup(jid)) throw badRequest('A group cannot be blocked (leave it instead)');
      try {
        await session.setBlocked(jid, blocked);
      } catch (err) {
        throw new ServiceError(502, `The block list could not be updated: ${err instanceof Error ? err.message : String(err)}`);
      }
      return { jid: chatId, blocked };
    },

    async blocklist(connectionId) {
      const session = d.onlineSession(connectionId);
      let jids: Array<string | undefined>;
      try {
        jids = await session.blocklist();
      } catch (err) {
        throw new ServiceError(502, `The block list could not be read: ${err instanceof Error ? err.message : String(err)}`);
      }
      const ctx = session.modelContext();
      return jids.filter((j): j is string => !!j).map((j) => (j.endsWith('@lid') ? (ctx.pnForLid(j) ?? j) : j));
    },

    async rejectCall(connectionId, callId) {
      const session = d.onlineSession(connectionId);
      await session.rejectCall(callId);
    },

    async sendSticker(connectionId, input, opts = {}) {
      const session = d.onlineSession(connectionId);
      const chat = await d.resolveChat(session, input.chatId);
      const quoted = input.replyTo ? d.quotedMessage(connectionId, input.replyTo, chat.chatId) : undefined;
      const file = await loadMedia(
        { type: 'image', chatId: input.chatId, ...(input.url !== undefined && { url: input.url }), ...(input.base64 !== undefined && { base64: input.base64 }) },
        d.prepareOptions,
      );
      const webp = await toStickerWebp(file.data);
      const prepared: PreparedContent = {
        content: { sticker: webp, mimetype: 'image/webp' } as AnyMessageContent,
        media: { data: webp, mimetype: 'image/webp' },
        textLength: 0,
      };
      try {
        return await d.deliver(session, chat, input, prepared, quoted, opts);
      } catch (err) {
        if (err instanceof ServiceError) throw err;
        throw new ServiceError(502, `Sticker could not be sent: ${err instanceof Error ? err.message : String(err)}`);
      }
    },

    async postStatus(connectionId, input, opts = {}) {
      const session = d.onlineSession(connectionId);
      const own = session.me?.jid;
      const audience = input.contacts
        ? input.contacts.map((c, i) => participantJidOf(c, i, undefined, 'contacts'))
        : store.contacts.userJids(connectionId);
      const viewers = [...new Set(audience)].filter((jid) => jid !== own);
      if (viewers.length === 0) {
        throw badRequest(input.contacts ? 'body/contacts names no one but this account' : 'The account has no contacts to show a status to; name them in body/contacts');
      }
      const options: RelayOptions = {
        // The account's own JID too, as WhatsApp's apps do: its phone and other devices show the post under "My status".
        statusJidList: own ? [...viewers, own] : viewers,
        ...(opts.idempotency && { idempotency: opts.idempotency }),
      };
      let prepared: PreparedContent;
      if (input.type === 'text') {
        prepared = { content: { text: input.text }, textLength: input.text.length };
        if (input.backgroundColor !== undefined) options.backgroundColor = input.backgroundColor;
        if (input.font !== undefined) options.font = input.font;
      } else {
        const { url, base64, mimetype, caption } = input;
        prepared = await prepareContent(
          { type: 'image', chatId: STATUS_CHAT_ID, ...(url !== undefined && { url }), ...(base64 !== undefined && { base64 }), ...(mimetype !== undefined && { mimetype }), ...(caption !== undefined && { caption }) },
          d.prepareOptions,
        );
      }
      const { recorded, serverAcked } = await d.relay(session, STATUS_CHAT_ID, prepared.content, options, (sent) => session.recordSent(sent));
      const filename = prepared.media && recorded.media ? mediaFileNameOf(recorded.media) : undefined;
      if (prepared.media && filename) {
        await media.writeBuffer(connectionId, filename, prepared.media.data).catch((err: unknown) => {
          logger.warn({ err, connectionId, filename }, 'could not keep a copy of a posted status image');
        });
      }
      return serverAcked ? (store.messages.get(connectionId, recorded.id) ?? recorded) : recorded;
    },
  };
}
