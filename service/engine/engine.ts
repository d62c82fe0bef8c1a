/**
 * The engine: one `Session` per connection, started from the database at boot and driven by the API.
 * Implements `Engine` (engine/types.ts). In sandbox mode it trusts the sandbox's Noise root key by setting
 * Baileys' exported `WA_CERT_DETAILS.PUBLIC_KEY` (brief §0.2; never in live mode).
 */
import {
  WA_CERT_DETAILS,
  isJidGroup,
  jidNormalizedUser,
  proto,
  type AnyMessageContent,
  type WAMessage,
  type WAMessageKey,
} from '@whiskeysockets/baileys';
import { parseMessageId, type Message } from '../db/messages.ts';
import { isStorageError } from '../db/store.ts';
import { badRequest, conflict, notFound, ServiceError } from '../errors.ts';
import { canonicalChatId, parseChatId, pnForLid, STATUS_CHAT_ID } from './chat-id.ts';
import { mediaFileNameOf, toPnJid } from './message-model.ts';
import { contentTypeForName, isSafeMediaName, MediaStore } from './media-store.ts';
import { OutboundPolicy } from '../net/outbound.ts';
import { prepareContent, type PreparedContent } from './outgoing.ts';
import { createOperations, idempotent, type RelayOptions } from './operations.ts';
import { createProfiles } from './profiles.ts';
import { humanizeBeforeSend } from './send-pipeline.ts';
import { Session } from './session.ts';
import { sandboxTrust } from './sandbox-trust.ts';
import { NumberChecker, numberDigits } from './number-check.ts';
import { groupError, groupInfoOf, groupJidOf, groupSummaryOf, participantJidOf, type GroupInfo } from './groups.ts';
import type { Engine, EngineOptions, MediaFileInfo, SendInput, SendOptions, SendTextInput } from './types.ts';

/** 404 text of a send to a chat the server does not know (issue 20: was a 502). */
const CHAT_NOT_FOUND = 'Chat not found';

/**
 * The code of a WhatsApp IQ error Baileys raised, or undefined: its `query` throws `new Boom(text, { data: +code })`
 * for an `<error code text>` reply (rc14 lib/WABinary/generic-utils.js assertNodeErrorFree), e.g. 404
 * `item-not-found` for the `w:g2` metadata query of a group that does not exist, which `sendMessage` makes first.
 */
function iqErrorCode(err: unknown): number | undefined {
  const data = (err as { isBoom?: boolean; data?: unknown } | null)?.data;
  return (err as { isBoom?: boolean } | null)?.isBoom === true && typeof data === 'number' ? data : undefined;
}

const DEFAULT_TYPING_DELAY = { min: 800, max: 2500 };
/** Own text messages can be edited this long after sending (interface-spec §4.3 rule 4, §8). */
export const EDIT_WINDOW_MS = 15 * 60 * 1000;
/** At most this many incoming messages get a read receipt in one mark-read. */
const MAX_READ_RECEIPTS = 100;
/** How long a send waits for the server to acknowledge the message before answering with it still pending. */
const DEFAULT_SERVER_ACK_TIMEOUT_MS = 10_000;

/** 507: the data dir cannot take writes; the message was not sent (and will not be sent later). */
function storageUnavailable(): ServiceError {
  return new ServiceError(507, 'Storage is unavailable (the data directory is full or not writable): nothing was sent; try again once space is freed');
}
const toPnJidOf = (jid: string, ctx: ReturnType<Session['modelContext']>) => (jid ? toPnJid(jid, null, ctx) : jid);


/**
 * Starts every active connection whose session can resume (not `logged_out` or `failed`, which wait for an explicit
 * restart); a connection that fails to start is logged and skipped. Shared by the in-process and the thread engine.
 */
export function startActive(
  store: Pick<EngineOptions['store'], 'connections'>,
  start: (connectionId: string) => void,
  log: Pick<EngineOptions['logger'], 'error'>,
): void {
  for (const conn of store.connections.listActive()) {
    if (conn.status === 'logged_out' || conn.status === 'failed') continue;
    try {
      start(conn.id);
    } catch (err) {
      log.error({ err, connectionId: conn.id }, 'failed to start session');
    }
  }
}

/** The in-process engine (`--workers 0`, and each session thread's own): the `Engine` of types.ts over sessions on this thread. */
export function createEngine(opts: EngineOptions): Engine & { session(connectionId: string): Session | undefined } {
  const { store, events, logger } = opts;
  const outbound = opts.outbound ?? new OutboundPolicy({ allowLan: false });
  if (opts.waRootPublicKey) WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(opts.waRootPublicKey);
  const sessions = new Map<string, Session>();
  const typingDelayMs = opts.typingDelayMs ?? DEFAULT_TYPING_DELAY;
  const baileysLogLevel = process.env.SWITCHBOARD_BAILEYS_LOG_LEVEL ?? 'warn';
  const now = opts.now ?? Date.now;
  const serverAckTimeoutMs = opts.serverAckTimeoutMs ?? DEFAULT_SERVER_ACK_TIMEOUT_MS;
  const media = new MediaStore(opts.mediaDir);
  const numberChecker = new NumberChecker(now);
  /** Whether sends must be refused with 507: the last commit failed, or a session still waits for the disk. */
  const storageDown = (): boolean => {
    if (store.storage().state === 'unavailable') return true;
    for (const s of sessions.values()) if (s.waitingForStorage) return true;
    return false;
  };
  const trust = opts.waCaCertPem ? sandboxTrust(opts.waCaCertPem) : undefined;
  const prepareOptions = {
    policy: outbound,
    logger,
    ...(opts.urlFetchTls && { tls: opts.urlFetchTls }),
    ...(opts.urlFetchTimeoutMs !== undefined && { timeoutMs: opts.urlFetchTimeoutMs }),
  };

  function start(connectionId: string): void {
    const conn = store.connections.get(connectionId);
    if (!conn || conn.status === 'stopped') throw notFound('Connection not found');
    if (sessions.has(connectionId)) return;
    const session = new Session(conn, {
      store,
      events,
      logger: logger.child({ component: 'engine' }),
      waUrl: opts.waUrl,
      baileysLogLevel,
      media,
      ...(trust && { sandboxTrust: trust, mediaDispatcher: trust.dispatcher }),
      ...(opts.connectTimeoutMs !== undefined && { connectTimeoutMs: opts.connectTimeoutMs }),
      ...(opts.storageHasRoom && { storageHasRoom: opts.storageHasRoom }),
      ...(opts.downloadStatusMedia && { downloadStatusMedia: true }),
      ...(opts.onlineFallbackMs !== undefined && { onlineFallbackMs: opts.onlineFallbackMs }),
      onContactsUpdate: (s, updates) => profiles.onContactsUpdate(s, updates),
    });
    sessions.set(connectionId, session);
    session.start();
  }

  async function stop(connectionId: string, o: { logout?: boolean } = {}): Promise<void> {
    const session = sessions.get(connectionId);
    sessions.delete(connectionId);
    if (session) await session.stop({ logout: o.logout });
    // txAsync: with session threads this runs on the main thread for a connection none of them runs (it must not block).
    else if (o.logout) await store.txAsync(() => store.authState.clear(connectionId));
  }

  /** The online session of a connection, or a 409 explaining why it cannot act now (507 while storage is down). */
  function onlineSession(connectionId: string): Session {
    // Nothing is sent while the store cannot commit: a message that could not be recorded must not leave.
    if (storageDown()) throw storageUnavailable();
    return liveSession(connectionId);
  }

  /** The online session of a connection for a query that records nothing, or a 409. */
  function liveSession(connectionId: string): Session {
    const session = sessions.get(connectionId);
    const status = session?.status ?? store.connections.get(connectionId)?.status ?? 'stopped';
    if (!session || status !== 'online' || !session.isOpen) {
      throw conflict(`Connection is not online (status: ${status})`);
    }
    return session;
  }

  /**
   * Resolves an API chatId (JID, or phone number in international format) to the JID Baileys sends to.
   * Phone numbers not yet known to the connection are checked with a usync contact query.
   */
  async function resolveChat(session: Session, chatId: string): Promise<{ jid: string; chatId: string }> {
    const parsed = parseChatId(chatId);
    if (parsed.kind === 'phone') {
      const { jid, digits } = parsed;
      if (!store.contacts.has(session.connectionId, jid)) {
        const [result] = (await session.onWhatsApp(jid)) ?? [];
        if (!result?.exists) throw badRequest(`+${digits} is not on WhatsApp`);
        return { jid: jidNormalizedUser(result.jid), chatId: jidNormalizedUser(result.jid) };
      }
      return { jid, chatId: jid };
    }
    const { jid } = parsed;
    if (jid === STATUS_CHAT_ID) {
      throw badRequest('status@broadcast is not a chat: post a status with POST /connections/:id/status/text or /status/image');
    }
    if (parsed.isGroup) {
      // A group the account is not in (or that does not exist) has no chat to write to.
      try {
        await session.groupMetadata(jid);
      } catch (err) {
        const mapped = groupError(err, 'read');
        throw mapped.statusCode === 404 ? notFound('Chat not found') : mapped;
      }
      return { jid, chatId: jid };
    }
    return { jid, chatId: jid.endsWith('@lid') ? (pnForLid(store, session.connectionId, jid) ?? jid) : jid };
  }

  /**
   * The user a route names by its `:jid` (block, unblock, a contact's profile), as resolveChat answers it: an
   * international number or a phone-number JID (`<6–15 digits>[:<device>]@s.whatsapp.net` or `@c.us`), checked with
   * WhatsApp unless it is a contact or the account itself; or a LID (`<digits>[:<device>]@lid`) the connection knows
   * (its own, a contact's, or one of Baileys' LID mappings), named by its phone-number JID where that is known.
   * Nothing is asked of WhatsApp for an id that cannot name a user.
   * @throws ServiceError 400 `jid must be a user JID…` (malformed, a group, status@broadcast), `jid <lid> is a LID
   * this connection does not know…`, `+<digits> is not on WhatsApp`.
   */
  async function resolveUser(session: Session, input: string): Promise<{ jid: string; chatId: string }> {
    const value = input.trim();
    const malformed = () => badRequest('jid must be a user JID or a phone number in international format');
    if (value.includes('@')) {
      const m = /^(\d+)(?::\d+)?@(s\.whatsapp\.net|c\.us|lid)$/.exec(value);
      if (!m || (m[2] !== 'lid' && !/^\d{6,15}$/.test(m[1]!))) throw malformed();
      if (m[2] === 'lid') {
        const lid = jidNormalizedUser(value);
        const own = session.me;
        const chatId = pnForLid(store, session.connectionId, lid) ?? (own?.lid === lid ? own.jid : undefined);
        if (!chatId && !store.contacts.has(session.connectionId, lid)) {
          throw badRequest(`jid ${lid} is a LID this connection does not know; use the phone number`);
        }
        return { jid: lid, chatId: chatId ?? lid };
      }
    } else if (!/^\+?[\d\s().-]+$/.test(value)) {
      throw malformed();
    }
    const parsed = parseChatId(value); // a number or a phone-number JID now (400 for a number of the wrong length)
    const jid = parsed.jid;
    if (store.contacts.has(session.connectionId, jid) || session.me?.jid === jid) return { jid, chatId: jid };
    const [result] = (await session.onWhatsApp(jid)) ?? [];
    if (!result?.exists) throw badRequest(`+${jid.split('@')[0]!} is not on WhatsApp`);
    const found = jidNormalizedUser(result.jid);
    return { jid: found, chatId: found };
  }

  /** The stored WAMessage a `replyTo` id refers to (same chat), for quoting. */
  function quotedMessage(connectionId: string, replyTo: string, chatId: string): WAMessage {
    const parsed = parseMessageId(replyTo);
    const raw = parsed ? store.messages.getRaw(connectionId, replyTo) : undefined;
    if (!parsed || !raw) throw badRequest('replyTo: message not found');
    if (parsed.chatId !== chatId) throw badRequest('replyTo: message belongs to another chat');
    return proto.WebMessageInfo.decode(raw) as WAMessage;
  }

  /** The stored message `messageId` of `chatId` (the chat as given, or as resolved); 404 otherwise. */
  function storedMessage(connectionId: string, messageId: string, chatIds: string[]): Message {
    const message = store.messages.get(connectionId, messageId);
    if (!message || !chatIds.includes(message.chatId)) throw notFound('Message not found');
    return message;
  }

  /** The Baileys key of a stored message (from its raw WebMessageInfo, or rebuilt from its id). */
  function keyOf(connectionId: string, message: Message, jid: string): WAMessageKey {
    const raw = store.messages.getRaw(connectionId, message.id);
    const key = raw ? proto.WebMessageInfo.decode(raw).key : undefined;
    if (key?.id && key.remoteJid) return key as WAMessageKey;
    const parsed = parseMessageId(message.id)!;
    return {
      remoteJid: jid,
      fromMe: message.fromMe,
      id: parsed.keyId,
      ...(isJidGroup(jid) && !message.fromMe && { participant: message.senderJid }),
    };
  }

  /**
   * Sends through Baileys, stores the outcome with `record` (before the frames leave: commit-before-receipt.ts),
   * then waits for the server's `<ack class="message">` (at most `serverAckTimeoutMs`), so an answer means the
   * server has the message. Returns what `record` returned and whether the server acknowledged in time (a socket
   * closed or a timeout leaves the message stored as pending, ack 1).
   * With `options.idempotency`, the key's row is told the id of the Message the request answers with (`answerId`,
   * else the recorded Message's) in the same transaction as `record`: before any frame of the message can leave.
   * Errors: 409 not online; 404 `Chat not found` for a group the server does not know (its metadata query or the
   * message's ack answers 404); 502 transport failure (media upload, socket closed) or refused by the server.
   */
  async function relay<T>(
    session: Session,
    jid: string,
    content: AnyMessageContent,
    options: RelayOptions,
    record: (sent: WAMessage) => T,
  ): Promise<{ recorded: T; serverAcked: boolean }> {
    if (!session.isOpen) throw conflict(`Connection is not online (status: ${session.status})`);
    const { idempotency, answerId, ...sendOptions } = options;
    const messageId = session.newMessageId();
    const serverAck = session.expectServerAck(messageId, serverAckTimeoutMs);
    let sent: WAMessage | undefined;
    try {
      sent = await session.send(jid, content, { ...sendOptions, messageId });
    } catch (err) {
      serverAck.cancel();
      if (isJidGroup(jid) && iqErrorCode(err) === 404) throw notFound(CHAT_NOT_FOUND);
      logger.warn({ err, connectionId: session.connectionId }, 'send failed');
      throw new ServiceError(502, `Message could not be sent: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!sent) {
      serverAck.cancel();
      throw conflict('Message could not be sent');
    }
    // Every frame of the message is in the session's gate now (commit-before-receipt.ts).
    const frames = session.frameMark();
    serverAck.sent();
    let recorded: T;
    try {
      const sentMessage = sent;
      recorded = idempotency
        ? store.tx(() => {
            const r = record(sentMessage);
            const id = answerId ?? (r as { id?: unknown } | undefined)?.id;
            if (typeof id === 'string') store.idempotency.markRecorded(idempotency, id);
            return r;
          })
        : record(sent);
    } catch (err) {
      serverAck.cancel();
      // The frames of this message were still held (commit-before-receipt.ts): the session dropped them with the
      // socket, so the message never left.
      if (isStorageError(err)) throw storageUnavailable();
      throw err;
    }
    const outcome = await serverAck.done;
    if (outcome === 'closed' && frames && !frames.sent()) {
      // The socket closed with the message still held, so it never left (a failed commit discarded it): say so, and
      // mark it failed (ack 0) where that can still be written.
      try {
        if (sent.key.id) {
          const stored = store.messages.findByKeyId(session.connectionId, sent.key.id);
          if (stored) store.tx(() => store.messages.setAck(session.connectionId, stored.id, proto.WebMessageInfo.Status.ERROR));
        }
      } catch {
        // the disk is still full: the record stays pending
      }
      throw storageDown() ? storageUnavailable() : new ServiceError(502, 'Message could not be sent: the connection closed before it left');
    }
    if (typeof outcome === 'object') {
      // rc14 turns the error ack into status ERROR (ack 0) on the stored message through messages.update.
      if (isJidGroup(jid) && outcome.error === '404') throw notFound(CHAT_NOT_FOUND);
      throw new ServiceError(502, `Message was refused by the server (error ${outcome.error})`);
    }
    if (outcome !== 'accepted') {
      logger.warn({ connectionId: session.connectionId, messageId, outcome }, 'no server acknowledgement for a sent message');
    }
    return { recorded, serverAcked: outcome === 'accepted' };
  }

  async function send(connectionId: string, input: SendInput, opts: SendOptions = {}): Promise<Message> {
    const session = onlineSession(connectionId);
    const { jid, chatId } = await resolveChat(session, input.chatId);
    const quoted = input.replyTo ? quotedMessage(connectionId, input.replyTo, chatId) : undefined;
    // Fetch/decode and check media before any presence, so a bad request fails fast and shows no "typing…".
    const mentions = input.mentions?.length ? mentionJids(session, jid, input.mentions) : undefined;
    const prepared = await prepareContent(input, prepareOptions);
    if (mentions) Object.assign(prepared.content, { mentions });
    return deliver(session, { jid, chatId }, input, prepared, quoted, opts);
  }

  /** Presence and pacing (unless skipPresence), the relay, and a local copy of sent media. */
  async function deliver(
    session: Session,
    chat: { jid: string; chatId: string },
    input: { skipPresence?: boolean | undefined },
    prepared: PreparedContent,
    quoted?: WAMessage,
    opts: SendOptions = {},
  ): Promise<Message> {
    const { connectionId } = session;
    const { jid, chatId } = chat;
    if (!input.skipPresence) {
      await humanizeBeforeSend(
        session,
        { store, connectionId, chatJid: jid, chatId, textLength: prepared.textLength, logger },
        { typingDelayMs },
      );
    }
    const relayOptions: RelayOptions = { ...(quoted && { quoted }), ...(opts.idempotency && { idempotency: opts.idempotency }) };
    const { recorded, serverAcked } = await relay(session, jid, prepared.content, relayOptions, (sent) => session.recordSent(sent));
    const filename = prepared.media && recorded.media ? mediaFileNameOf(recorded.media) : undefined;
    if (prepared.media && filename) {
      // Media this service sends is kept locally too, under the same name incoming media gets.
      await media.writeBuffer(connectionId, filename, prepared.media.data).catch((err: unknown) => {
        logger.warn({ err, connectionId, filename }, 'could not keep a copy of sent media');
      });
    }
    return serverAcked ? (store.messages.get(connectionId, recorded.id) ?? recorded) : recorded;
  }

  /** JIDs of a send's `mentions` (named by LID in a LID-addressed group, as WhatsApp does there). */
  function mentionJids(session: Session, chatJid: string, mentions: string[]): string[] {
    const meta = isJidGroup(chatJid) ? session.groups.get(chatJid) : undefined;
    return mentions.map((m, i) => participantJidOf(m, i, meta, 'mentions'));
  }

  /** The online session and the group JID of a path's `groupId`. */
  function groupTarget(connectionId: string, groupId: string): { session: Session; jid: string } {
    const jid = groupJidOf(groupId);
    return { session: onlineSession(connectionId), jid };
  }

  function groupInfo(session: Session, meta: Parameters<typeof groupInfoOf>[0]): GroupInfo {
    const me = session.me;
    return groupInfoOf(meta, session.modelContext(), (jid) =>
      jid === me?.jid ? me.name || undefined : store.contacts.nameOf(session.connectionId, jid),
    );
  }

  /** A group's metadata (cached or asked); 404 `Group not found` when WhatsApp does not give it to this account. */
  async function groupMeta(session: Session, jid: string, refresh = false) {
    try {
      return await session.groupMetadata(jid, { refresh });
    } catch (err) {
      throw groupError(err, 'read');
    }
  }

  /** A media file's details for streaming, downloading it first when needed. */
  async function messageMedia(connectionId: string, messageId: string): Promise<MediaFileInfo> {
    const message = store.messages.get(connectionId, messageId);
    const filename = message?.media ? mediaFileNameOf(message.media) : undefined;
    if (!message?.media || !filename) throw notFound('Media not found');
    const info = (file: { path: string; size: number }): MediaFileInfo => ({
      ...file,
      mimetype: message.media!.mimetype,
      filename: message.media!.filename,
    });
    const onDisk = media.stat(connectionId, filename);
    if (onDisk) return info(onDisk);
    const session = sessions.get(connectionId);
    if (!session) throw notFound('Media not found');
    try {
      return info(await session.ensureMedia(messageId));
    } catch (err) {
      logger.info({ err, connectionId, messageId }, 'media could not be downloaded');
      throw notFound('Media not found');
    }
  }

  const operations = createOperations({
    store,
    logger,
    media,
    prepareOptions,
    onlineSession,
    resolveChat,
    resolveUser,
    storedMessage,
    keyOf,
    relay,
    deliver,
    quotedMessage,
  });

  const profiles = createProfiles({
    store,
    logger,
    media,
    prepareOptions,
    dispatcher: trust?.dispatcher,
    now,
    onlineSession,
    liveSession,
    resolveUser,
  });

  return {
    ...operations,
    ...profiles,
    start,
    startAll() {
      startActive(store, start, logger);
    },
    async restart(connectionId) {
      await stop(connectionId);
      start(connectionId);
    },
    stop,
    async remove(connectionId) {
      try {
        await stop(connectionId, { logout: true });
      } catch (err) {
        // Deleting must succeed locally even when the phone cannot be told (offline, already unlinked).
        logger.warn({ err, connectionId }, 'logout during delete failed; deleting anyway');
      }
      await store.txAsync(() => {
        const row = store.connections.get(connectionId);
        if (!row || row.status === 'stopped') return;
        store.connections.setStatus(connectionId, 'stopped', 'deleted');
        events.append(row.userId, connectionId, 'session.status', { status: 'stopped', previous: row.status, reason: 'deleted' });
      });
    },
    currentQr: (connectionId) => sessions.get(connectionId)?.qr,
    async requestPairingCode(connectionId, phoneNumber) {
      const digits = numberDigits(phoneNumber);
      if (!digits) throw badRequest('phoneNumber must be an international phone number (e.g. +15550100) or a user JID');
      const session = sessions.get(connectionId);
      const status = session?.status ?? store.connections.get(connectionId)?.status ?? 'stopped';
      if (!session?.awaitingLink) {
        throw conflict(status === 'connected' || status === 'online' ? 'Connection is already linked' : `Connection is not waiting to be linked (status: ${status})`);
      }
      try {
        return await session.requestPairingCode(digits);
      } catch (err) {
        logger.info({ err, connectionId }, 'pairing code request failed');
        throw conflict('Connection is not waiting to be linked (its connection to WhatsApp closed; retry in a few seconds)');
      }
    },
    sendText: (connectionId, input: SendTextInput) => send(connectionId, { ...input, type: 'text' }),
    send,
    async react(connectionId, input, opts = {}) {
      const session = onlineSession(connectionId);
      const { jid, chatId } = await resolveChat(session, input.chatId);
      const target = storedMessage(connectionId, input.messageId, [chatId, input.chatId]);
      const key = keyOf(connectionId, target, jid);
      const me = session.me?.jid ?? '';
      const { recorded } = await relay(session, jid, { react: { text: input.emoji, key } }, idempotent(opts, target.id), () =>
        session.applyReaction(target.chatId, key.id!, me, input.emoji, Math.floor(now() / 1000)),
      );
      return recorded ?? store.messages.get(connectionId, target.id)!;
    },
    async editMessage(connectionId, messageId, input, opts = {}) {
      const target = storedMessage(connectionId, messageId, [canonicalChatId(store, connectionId, input.chatId)]);
      // 400, not 403: the spec keeps 403 for another user's resource (§5); this is a rule of the edit (§4.3 rule 4).
      if (!target.fromMe) throw badRequest('Only your own messages can be edited');
      if (target.kind !== 'text') throw badRequest('Only text messages can be edited');
      if (now() - target.timestamp * 1000 > EDIT_WINDOW_MS) {
        throw badRequest('Messages can only be edited within 15 minutes of sending');
      }
      const session = onlineSession(connectionId);
      const { jid } = await resolveChat(session, target.chatId);
      const key = keyOf(connectionId, target, jid);
      const me = session.me?.jid ?? '';
      const { recorded } = await relay(session, jid, { text: input.text, edit: key }, idempotent(opts, target.id), () =>
        session.applyEdit(target.chatId, key.id!, input.text, Math.floor(now() / 1000), { fromMe: true, senderJid: me }),
      );
      return recorded ?? target;
    },
    async markRead(connectionId, chatIdInput) {
      const session = onlineSession(connectionId);
      const { chatId } = await resolveChat(session, chatIdInput);
      const unread = store.chats.unread(connectionId, chatId) ?? 0;
      const raws = store.messages.latestIncomingRaws(connectionId, chatId, Math.min(MAX_READ_RECEIPTS, Math.max(1, unread)));
      const keys = raws.map((raw) => proto.WebMessageInfo.decode(raw).key).filter((k): k is WAMessageKey => !!k?.id);
      if (keys.length > 0) {
        try {
          await session.read(keys);
        } catch (err) {
          throw new ServiceError(502, `Read receipt could not be sent: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      store.chats.markRead(connectionId, chatId);
    },
    async setTyping(connectionId, chatIdInput, typing) {
      const session = onlineSession(connectionId);
      const { jid } = await resolveChat(session, chatIdInput);
      try {
        await session.presence(typing ? 'composing' : 'paused', jid);
      } catch (err) {
        throw new ServiceError(502, `Typing indicator could not be sent: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    messageMedia,
    async mediaFile(connectionId, filename) {
      if (!isSafeMediaName(filename)) throw badRequest('Invalid media file name');
      const keyId = filename.includes('.') ? filename.slice(0, filename.lastIndexOf('.')) : filename;
      const message = store.messages.findByKeyId(connectionId, keyId);
      if (message?.media && mediaFileNameOf(message.media) === filename) return messageMedia(connectionId, message.id);
      const onDisk = media.stat(connectionId, filename);
      if (!onDisk) throw notFound('Media not found');
      return { ...onDisk, mimetype: contentTypeForName(filename), filename: null };
    },
    async checkNumbers(connectionId, phoneNumbers) {
      const digits = phoneNumbers.map((n, i) => {
        const d = numberDigits(n);
        if (!d) throw badRequest(`body/phoneNumbers/${i} is not an international phone number or a user JID`);
        return d;
      });
      const session = onlineSession(connectionId);
      try {
        return await numberChecker.check(connectionId, session, digits);
      } catch (err) {
        throw new ServiceError(502, `The number check failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    storageUnavailable: () => storageDown(),
    liveStatus(connectionId) {
      const session = sessions.get(connectionId);
      return session ? { status: session.status, reason: session.statusReason } : undefined;
    },
    async listGroups(connectionId, page) {
      const session = onlineSession(connectionId);
      let all;
      try {
        all = await session.participatingGroups();
      } catch (err) {
        throw groupError(err, 'read');
      }
      const ctx = session.modelContext();
      return all
        .map((meta) => groupSummaryOf(meta, ctx))
        .sort((a, b) => a.subject.localeCompare(b.subject) || a.id.localeCompare(b.id))
        .slice(page.offset, page.offset + page.limit);
    },
    async group(connectionId, groupId) {
      const { session, jid } = groupTarget(connectionId, groupId);
      return groupInfo(session, await groupMeta(session, jid));
    },
    async createGroup(connectionId, input) {
      const session = onlineSession(connectionId);
      const subject = input.subject.trim();
      if (!subject) throw badRequest('body/subject must not be empty');
      const jids = [...new Set(input.participants.map((p, i) => participantJidOf(p, i)))];
      try {
        return groupInfo(session, await session.createGroup(subject, jids));
      } catch (err) {
        throw groupError(err, 'member');
      }
    },
    async updateGroup(connectionId, groupId, input) {
      const { session, jid } = groupTarget(connectionId, groupId);
      if (input.subject === undefined && input.description === undefined) throw badRequest('body must have subject or description');
      if (input.subject !== undefined && !input.subject.trim()) throw badRequest('body/subject must not be empty');
      await groupMeta(session, jid);
      try {
        if (input.subject !== undefined) await session.setGroupSubject(jid, input.subject.trim());
        if (input.description !== undefined) await session.setGroupDescription(jid, input.description || undefined);
      } catch (err) {
        throw groupError(err, 'admin');
      }
      return groupInfo(session, await groupMeta(session, jid, true));
    },
    async updateParticipants(connectionId, groupId, input) {
      const { session, jid } = groupTarget(connectionId, groupId);
      const meta = await groupMeta(session, jid);
      const jids = [...new Set(input.participants.map((p, i) => participantJidOf(p, i, meta)))];
      let results;
      try {
        results = await session.updateGroupParticipants(jid, jids, input.action);
      } catch (err) {
        throw groupError(err, 'admin');
      }
      const ctx = session.modelContext();
      const done = results.filter((r) => r.status === '200' && r.jid).map((r) => ({ id: r.jid! }));
      if (done.length > 0) session.groups.applyParticipants(jid, input.action, done);
      return results.map((r, i) => {
        const pn = toPnJidOf(r.jid ?? jids[i] ?? '', ctx);
        return { jid: pn, phoneNumber: pn.endsWith('@s.whatsapp.net') ? `+${pn.split('@')[0]}` : null, status: Number(r.status) || 500 };
      });
    },
    async leaveGroup(connectionId, groupId) {
      const { session, jid } = groupTarget(connectionId, groupId);
      await groupMeta(session, jid);
      try {
        await session.leaveGroup(jid);
      } catch (err) {
        throw groupError(err, 'member');
      }
      session.groups.delete(jid);
    },
    async groupInviteCode(connectionId, groupId) {
      const { session, jid } = groupTarget(connectionId, groupId);
      await groupMeta(session, jid);
      let code: string | undefined;
      try {
        code = await session.groupInviteCode(jid);
      } catch (err) {
        throw groupError(err, 'admin');
      }
      if (!code) throw new ServiceError(502, 'WhatsApp sent no invite code');
      return { code, url: `https://chat.whatsapp.com/${code}` };
    },
    session: (connectionId) => sessions.get(connectionId),
    async close() {
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all(all.map((s) => s.stop()));
    },
  };
}
