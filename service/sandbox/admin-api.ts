/**
 * The sandbox admin HTTP API (JSON) — a binding contract other programs depend on.
 *
 *   GET  /                                → 200 { name, rootPublicKey (hex), wsUrl, caCertPem, mediaHost, accounts,
 *                                             online, pairing }
 *   GET  /accounts                        → 200 [{ phoneNumber, jid, lid, pushName }]
 *   POST /accounts { phoneNumber, pushName } → 201 account | 400 | 409
 *   GET  /accounts/:phoneNumber           → 200 account | 404            (extra)
 *   GET  /accounts/:phoneNumber/devices   → 200 [{ deviceId, jid, lid, platform, online, linkedAt, lastSeenAt }] (extra)
 *   DELETE /accounts/:phoneNumber/devices/:deviceId → 204 | 404 `Device not found` — unlink a companion as
 *                                           the phone would; a connected client is closed with 401 (extra)
 *   POST /accounts/:phoneNumber/devices/:deviceId/disconnect { code } → 204 | 400 | 404 | 409 `Device is not
 *                                           connected` — drop its connection as the server would: 428 silent
 *                                           close, 440 conflict/replaced, else <stream:error code> (extra)
 *   POST /accounts/:phoneNumber/scan { qr } → 200 { jid, lid, deviceId } once pairing succeeded
 *                                            | 400 (bad/unknown/rotated QR) | 404 | 409 | 502 | 504
 *   POST /accounts/:phoneNumber/messages  → 201 { id } (after the row is committed) | 400 | 404
 *        { to, replyTo?, and exactly one of: text | image | video | audio | document | location | contact |
 *          poll { name, options[], selectableCount? } | liveLocation { latitude, longitude, caption? } |
 *          contacts [{ name, phoneNumber }…] | listReply { id, title } | buttonsReply { id, text } } (rich-content.ts);
 *        status: true posts it as a status (from status@broadcast, participant = this phone) seen by `to`;
 *        undecryptable: true makes the first delivery undecryptable, the companion's retry receipt gets the real one
 *   PUT  /faults/offline-marker { withhold } → 204 — while true, logins get no `<ib><offline/>` marker (extra)
 *   POST /accounts/:phoneNumber/poll-votes { to, pollId, options[] } → 201 { id } | 400 | 404 — vote (encrypted
 *        with the poll's secret) on a poll of the conversation with `to`; [] withdraws the vote
 *        media = { base64, mimetype, filename?, caption?, ptt? (audio only) }; location = { latitude, longitude,
 *        name?, address? }; contact = { name, phoneNumber } (a vCard is built); replyTo = id of an earlier
 *        message in that conversation (either direction)
 *   GET  /accounts/:phoneNumber/messages  → 200 [{ id, from, to, text, timestamp, type, replyTo, media?, location?,
 *        contact?, reaction?, edit?, revoke?, reactions: [{from, emoji}], edits: [{text, timestamp}], revoked,
 *        readBy: [phone] }] received by that phone, oldest first (media.base64 = decrypted bytes, or null if the
 *        phone could not download/verify it)
 *   POST /accounts/:phoneNumber/messages/:id/expire-media → 204 | 404 — delete the hosted blob of that
 *        message's media (sent or received by that phone), so downloads get 404 until a media re-upload
 *   POST /accounts/:phoneNumber/reactions { to, messageId, emoji } → 201 { id }; emoji "" removes
 *   POST /accounts/:phoneNumber/edits { to, messageId, text } → 201 { id } (only that phone's own text messages)
 *   POST /accounts/:phoneNumber/reads { to, messageIds } → 200 { ok } — read receipts for messages it received from `to`
 *   POST /accounts/:phoneNumber/chatstate { to, state: composing|recording|paused } → 200 { ok }
 *   POST /accounts/:phoneNumber/presence { type: available|unavailable } → 200 { ok }
 *   GET  /accounts/:phoneNumber/receipts  → 200 [{ from, messageIds, type: delivery|read, timestamp }] seen by that phone
 *   GET  /accounts/:phoneNumber/chatstates → 200 [{ from, state, timestamp }] seen by that phone
 *        (state: composing|recording|paused|available|unavailable)
 *   POST /accounts/:phoneNumber/history { with, count, startAt? } → 201 { count } — bulk-seed `count` alternating
 *        text messages (1 s apart from `startAt`, default so the last is now) with `with` (any E.164 number);
 *        a companion linked afterwards gets them in its history sync (already-synced companions do not)
 *
 * Phone numbers are accepted as `+15550100`, `15550100` or `+1 555 0100` (URL-encoded in paths);
 * responses use `+<digits>`. Errors are `{ message, statusCode, error }` (error = HTTP status text);
 * 400 messages name the offending field; an unknown account is 404 `Account not found`.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { SandboxContext } from './context.ts';
import { generateMessageIDV2, proto } from '@whiskeysockets/baileys';
import { buildVcard, classify, mediaMessage, type MediaInput } from './content.ts';
import { buildPollVote, buildRichContent, RICH_CONTENT_FIELDS, RichContentError } from './rich-content.ts';
import { MEDIA_KINDS, type MediaKind } from './media.ts';
import { receivedMessagesView } from './message-view.ts';
import type { ChatState, PresenceType } from './signals.ts';
import { AccountExistsError } from './accounts.ts';
import { ScanError } from './pairing.ts';
import type { AccountRow } from './store.ts';
import { formatPhoneNumber, lidJid, parsePhoneNumber, pnJid } from './phone-number.ts';

const MAX_BODY = 1 << 20;
/** Bodies of message sends may carry base64 media. */
const MAX_MEDIA_BODY = 96 * 1024 * 1024;
const MAX_HISTORY = 200_000;
const MAX_TEXT = 65536;
const MAX_NAME = 100;

/** Runs a rich-content builder, turning its input errors into 400s. */
function richOrBadRequest<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof RichContentError) throw new HttpError(400, err.message);
    throw err;
  }
}

class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string): void {
  send(res, status, { message, statusCode: status, error: STATUS_CODES[status] ?? 'Error' });
}

/** Close codes `POST …/devices/:id/disconnect` can produce (Baileys' DisconnectReason values, brief A4). */
const DISCONNECT_CODES = [408, 428, 440, 500, 503, 515];

function readJson(req: IncomingMessage, maxBody = MAX_BODY): Promise<Json> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= maxBody) chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > maxBody) return reject(new HttpError(413, 'Request body is too large'));
      const raw = Buffer.concat(chunks).toString('utf8');
      if (!raw.trim()) return reject(new HttpError(400, 'Request body must be a JSON object'));
      try {
        const parsed: unknown = JSON.parse(raw);
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
          return reject(new HttpError(400, 'Request body must be a JSON object'));
        }
        resolve(parsed as Json);
      } catch {
        reject(new HttpError(400, 'Request body must be valid JSON'));
      }
    });
  });
}

function requireString(body: Json, key: string, max: number, field = key): string {
  const v = body[key];
  if (typeof v !== 'string' || !v.trim())
    throw new HttpError(400, `${field} is required and must be a non-empty string`);
  if (v.length > max) throw new HttpError(400, `${field} must be at most ${max} characters`);
  return v;
}

const CONTENT_FIELDS = ['text', ...MEDIA_KINDS, 'location', 'contact', ...RICH_CONTENT_FIELDS] as const;

function asObject(v: unknown, field: string): Json {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError(400, `${field} must be an object`);
  return v as Json;
}

function optionalString(o: Json, key: string, field: string, max: number): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new HttpError(400, `${field} must be a string`);
  if (v.length > max) throw new HttpError(400, `${field} must be at most ${max} characters`);
  return v;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function parseMedia(value: unknown, kind: MediaKind): MediaInput {
  const o = asObject(value, kind);
  const b64 = o.base64;
  if (typeof b64 !== 'string' || !b64 || !BASE64.test(b64.replace(/\s/g, ''))) {
    throw new HttpError(400, `${kind}.base64 is required and must be base64-encoded bytes`);
  }
  const data = Buffer.from(b64, 'base64');
  if (!data.length) throw new HttpError(400, `${kind}.base64 must not be empty`);
  const mimetype = o.mimetype;
  if (typeof mimetype !== 'string' || !/^[\w.+-]+\/[\w.+-]+(;.*)?$/.test(mimetype)) {
    throw new HttpError(400, `${kind}.mimetype is required and must be a MIME type (e.g. image/jpeg)`);
  }
  if (o.ptt !== undefined && kind !== 'audio') throw new HttpError(400, `${kind}.ptt is only allowed for audio`);
  if (o.ptt !== undefined && typeof o.ptt !== 'boolean') throw new HttpError(400, 'audio.ptt must be a boolean');
  return {
    kind,
    data,
    mimetype,
    filename: optionalString(o, 'filename', `${kind}.filename`, 255),
    caption: optionalString(o, 'caption', `${kind}.caption`, MAX_TEXT),
    ptt: o.ptt as boolean | undefined,
  };
}

function parseLocation(value: unknown): {
  latitude: number;
  longitude: number;
  name?: string | undefined;
  address?: string | undefined;
} {
  const o = asObject(value, 'location');
  const { latitude, longitude } = o;
  if (typeof latitude !== 'number' || !Number.isFinite(latitude) || latitude < -90 || latitude > 90) {
    throw new HttpError(400, 'location.latitude is required and must be a number in [-90, 90]');
  }
  if (typeof longitude !== 'number' || !Number.isFinite(longitude) || longitude < -180 || longitude > 180) {
    throw new HttpError(400, 'location.longitude is required and must be a number in [-180, 180]');
  }
  return {
    latitude,
    longitude,
    name: optionalString(o, 'name', 'location.name', 1000),
    address: optionalString(o, 'address', 'location.address', 1000),
  };
}

/** Create the request handler for the admin API (mounted on the sandbox's HTTP server). */
export function createAdminHandler(
  ctx: SandboxContext,
  info: () => { wsUrl: string; caCertPem: string },
): (req: IncomingMessage, res: ServerResponse) => void {
  const { accounts, store } = ctx;

  const accountFromPath = (raw: string): AccountRow => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      throw new HttpError(400, 'phoneNumber in the path is not valid URL encoding');
    }
    const pn = parsePhoneNumber(decoded);
    if (!pn) throw new HttpError(400, 'phoneNumber in the path must be an E.164 phone number');
    const account = accounts.get(pn);
    if (!account) throw new HttpError(404, 'Account not found');
    return account;
  };

  /** The `to` account of a body (400 if malformed or the sender itself, 404 if unknown). */
  const recipientOf = (body: Json, sender: AccountRow): AccountRow => {
    const toPn = parsePhoneNumber(body.to);
    if (!toPn) throw new HttpError(400, 'to is required and must be an E.164 phone number (e.g. +15550101)');
    const recipient = accounts.get(toPn);
    if (!recipient) throw new HttpError(404, 'Account not found');
    if (recipient.pn === sender.pn) throw new HttpError(400, 'to must be a different account than the sender');
    return recipient;
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://sandbox').pathname.replace(/\/+$/, '') || '/';
    const parts = path.split('/').filter(Boolean);

    if (path === '/') {
      if (method !== 'GET') throw new HttpError(405, 'Method not allowed');
      return send(res, 200, {
        name: 'switchboard-sandbox',
        rootPublicKey: ctx.identity.rootKey.public.toString('hex'),
        wsUrl: info().wsUrl,
        caCertPem: info().caCertPem,
        mediaHost: ctx.media.host,
        accounts: accounts.count(),
        online: ctx.delivery.onlineCount,
        pairing: ctx.pairing.waitingCount,
      });
    }
    if (path === '/faults/offline-marker') {
      // { withhold: boolean }: logins get no `<ib><offline/>` marker while set (issue #13: clients must not stall).
      if (method !== 'PUT') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      if (typeof body.withhold !== 'boolean') throw new HttpError(400, 'withhold must be a boolean');
      ctx.delivery.withholdOfflineMarker = body.withhold;
      res.writeHead(204).end();
      return;
    }
    if (parts[0] !== 'accounts' || parts.length > 5) throw new HttpError(404, 'Route not found');

    if (parts.length === 1) {
      if (method === 'GET')
        return send(
          res,
          200,
          accounts.list().map((a) => accounts.view(a)),
        );
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const pn = parsePhoneNumber(body.phoneNumber);
      if (!pn) throw new HttpError(400, 'phoneNumber is required and must be an E.164 phone number (e.g. +15550100)');
      const pushName = requireString(body, 'pushName', MAX_NAME).trim();
      try {
        return send(res, 201, accounts.view(accounts.create(pn, pushName)));
      } catch (err) {
        if (err instanceof AccountExistsError) throw new HttpError(409, 'Account already exists');
        throw err;
      }
    }

    const account = accountFromPath(parts[1] ?? '');
    const sub = parts[2];
    if (sub === undefined) {
      if (method !== 'GET') throw new HttpError(405, 'Method not allowed');
      return send(res, 200, accounts.view(account));
    }
    if (sub === 'devices' && parts.length === 4) {
      if (method !== 'DELETE') throw new HttpError(405, 'Method not allowed');
      const deviceId = Number(parts[3]);
      if (!Number.isInteger(deviceId) || deviceId < 1) throw new HttpError(400, 'deviceId must be a positive integer');
      if (!ctx.delivery.unlinkDevice(account, deviceId)) throw new HttpError(404, 'Device not found');
      res.writeHead(204).end();
      return;
    }
    if (sub === 'devices' && parts.length === 5 && parts[4] === 'disconnect') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const deviceId = Number(parts[3]);
      if (!Number.isInteger(deviceId) || deviceId < 1) throw new HttpError(400, 'deviceId must be a positive integer');
      const body = await readJson(req);
      const code = (body as { code?: unknown }).code;
      if (!Number.isInteger(code) || !DISCONNECT_CODES.includes(code as number)) {
        throw new HttpError(400, `body/code must be one of ${DISCONNECT_CODES.join(', ')}`);
      }
      if (!store.getDevice(account.pn, deviceId)) throw new HttpError(404, 'Device not found');
      if (!ctx.delivery.disconnectDevice(account, deviceId, code as number)) throw new HttpError(409, 'Device is not connected');
      res.writeHead(204).end();
      return;
    }
    if (sub === 'messages' && parts.length === 5 && parts[4] === 'expire-media') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const row = store.findMessageForPhone(account.pn, decodeURIComponent(parts[3] ?? ''));
      if (!row) throw new HttpError(404, 'Message not found');
      if (!ctx.media.expireMessageMedia(proto.Message.decode(row.message))) {
        throw new HttpError(404, 'Message has no live media');
      }
      res.writeHead(204).end();
      return;
    }
    if (parts.length >= 4) throw new HttpError(404, 'Route not found');
    if (sub === 'devices') {
      if (method !== 'GET') throw new HttpError(405, 'Method not allowed');
      return send(
        res,
        200,
        store.listDevices(account.pn).map((d) => ({
          deviceId: d.deviceId,
          jid: pnJid(account.pn, d.deviceId),
          lid: lidJid(account.lid, d.deviceId),
          platform: d.platform,
          online: ctx.delivery.isOnline(account.pn, d.deviceId),
          linkedAt: new Date(d.createdAt).toISOString(),
          lastSeenAt: d.lastSeenAt === null ? null : new Date(d.lastSeenAt * 1000).toISOString(),
        })),
      );
    }
    if (sub === 'scan') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const qr = requireString(body, 'qr', 4096);
      try {
        return send(res, 200, await ctx.pairing.scan(account, qr));
      } catch (err) {
        if (err instanceof ScanError) throw new HttpError(err.statusCode, err.message);
        throw err;
      }
    }
    if (sub === 'messages') {
      if (method === 'GET') return send(res, 200, receivedMessagesView(store, account.pn));
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req, MAX_MEDIA_BODY);
      const recipient = recipientOf(body, account);
      const kinds = CONTENT_FIELDS.filter((k) => body[k] !== undefined && body[k] !== null);
      if (kinds.length === 0) {
        throw new HttpError(400, `one of ${CONTENT_FIELDS.join(', ')} is required (text is a non-empty string)`);
      }
      if (kinds.length > 1) {
        throw new HttpError(400, `exactly one of ${CONTENT_FIELDS.join(', ')} is allowed (got ${kinds.join(', ')})`);
      }
      let contextInfo: proto.IContextInfo | undefined;
      if (body.replyTo !== undefined) {
        if (typeof body.replyTo !== 'string' || !body.replyTo) throw new HttpError(400, 'replyTo must be a message id');
        const quoted = store.findMessageInChat(account.pn, recipient.pn, body.replyTo);
        if (!quoted) throw new HttpError(400, 'replyTo is not a message in this conversation');
        const quotedMessage = proto.Message.decode(quoted.message);
        quotedMessage.messageContextInfo = null;
        contextInfo = { stanzaId: quoted.msgId, participant: pnJid(quoted.fromPn), quotedMessage };
      }
      const kind = kinds[0]!;
      let message: proto.IMessage;
      let mediaPlaintext: Buffer | undefined;
      if (kind === 'text') {
        const text = requireString(body, 'text', MAX_TEXT);
        message = contextInfo ? { extendedTextMessage: { text, contextInfo } } : { conversation: text };
      } else if (kind === 'location') {
        const l = parseLocation(body.location);
        message = {
          locationMessage: {
            degreesLatitude: l.latitude,
            degreesLongitude: l.longitude,
            ...(l.name ? { name: l.name } : {}),
            ...(l.address ? { address: l.address } : {}),
            ...(contextInfo ? { contextInfo } : {}),
          },
        };
      } else if (kind === 'contact') {
        const c = asObject(body.contact, 'contact');
        const name = requireString(c, 'name', MAX_NAME, 'contact.name').trim();
        const pn = parsePhoneNumber(c.phoneNumber);
        if (!pn) throw new HttpError(400, 'contact.phoneNumber must be an E.164 phone number');
        const vcard = buildVcard({ name, phoneNumber: formatPhoneNumber(pn) });
        message = { contactMessage: { displayName: name, vcard, ...(contextInfo ? { contextInfo } : {}) } };
      } else if ((RICH_CONTENT_FIELDS as readonly string[]).includes(kind)) {
        message = richOrBadRequest(() => buildRichContent(kind as (typeof RICH_CONTENT_FIELDS)[number], body[kind], contextInfo));
      } else {
        const input = parseMedia(body[kind] as unknown, kind as MediaKind);
        const hosted = await ctx.media.hostMedia(input.data, input.kind);
        message = mediaMessage(input, { ...hosted, fileLength: input.data.length }, contextInfo);
        mediaPlaintext = input.data;
      }
      if (body.status !== undefined && typeof body.status !== 'boolean') throw new HttpError(400, 'status must be a boolean');
      const statusBroadcast = body.status === true;
      if (body.undecryptable !== undefined && typeof body.undecryptable !== 'boolean') {
        throw new HttpError(400, 'undecryptable must be a boolean');
      }
      const undecryptableFirst = body.undecryptable === true;
      const { id } = await ctx.messaging.sendFromPhone(account, recipient, message, { mediaPlaintext, statusBroadcast, undecryptableFirst });
      return send(res, 201, { id });
    }
    if (sub === 'poll-votes') {
      // { to, pollId, options[] }: this phone votes on a poll of its conversation with `to` (issue #13).
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const recipient = recipientOf(body, account);
      const pollId = requireString(body, 'pollId', 128);
      const poll = store.findMessageInChat(account.pn, recipient.pn, pollId);
      if (!poll) throw new HttpError(400, 'pollId must be a poll in this conversation');
      const message = richOrBadRequest(() =>
        buildPollVote(
          proto.Message.decode(poll.message),
          pollId,
          { creatorJid: pnJid(poll.fromPn), voterJid: pnJid(account.pn), chatJid: pnJid(recipient.pn), creatorIsVoter: poll.fromPn === account.pn },
          body.options,
        ),
      );
      const { id } = await ctx.messaging.sendFromPhone(account, recipient, message);
      return send(res, 201, { id });
    }
    if (sub === 'reactions') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const recipient = recipientOf(body, account);
      const messageId = requireString(body, 'messageId', 128);
      if (typeof body.emoji !== 'string')
        throw new HttpError(400, 'emoji is required (a string; "" removes the reaction)');
      if (body.emoji.length > 32) throw new HttpError(400, 'emoji must be at most 32 characters');
      const target = store.findMessageInChat(account.pn, recipient.pn, messageId);
      if (!target) throw new HttpError(400, 'messageId is not a message in this conversation');
      const message: proto.IMessage = {
        reactionMessage: {
          key: { remoteJid: pnJid(recipient.pn), fromMe: target.fromPn === account.pn, id: messageId },
          text: body.emoji,
          senderTimestampMs: Date.now(),
        },
      };
      const { id } = await ctx.messaging.sendFromPhone(account, recipient, message);
      return send(res, 201, { id });
    }
    if (sub === 'edits') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const recipient = recipientOf(body, account);
      const messageId = requireString(body, 'messageId', 128);
      const text = requireString(body, 'text', MAX_TEXT);
      const target = store.getMessage(account.pn, messageId);
      if (!target || target.toPn !== recipient.pn || classify(proto.Message.decode(target.message)).type !== 'text') {
        throw new HttpError(400, 'messageId must be a text message this phone sent to `to`');
      }
      const message: proto.IMessage = {
        protocolMessage: {
          type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
          key: { remoteJid: pnJid(recipient.pn), fromMe: true, id: messageId },
          editedMessage: { conversation: text },
          timestampMs: Date.now(),
        },
      };
      const { id } = await ctx.messaging.sendFromPhone(account, recipient, message);
      return send(res, 201, { id });
    }
    if (sub === 'reads') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const sender = recipientOf(body, account);
      const ids = body.messageIds;
      if (
        !Array.isArray(ids) ||
        ids.length === 0 ||
        ids.length > 1000 ||
        !ids.every((i) => typeof i === 'string' && i)
      ) {
        throw new HttpError(400, 'messageIds is required and must be a non-empty array of message ids');
      }
      for (const id of ids as string[]) {
        const m = store.getMessage(sender.pn, id);
        if (!m || m.toPn !== account.pn)
          throw new HttpError(400, `messageIds: ${id} is not a message received from to`);
      }
      await ctx.signals.phoneRead(account, sender, ids as string[]);
      return send(res, 200, { ok: true });
    }
    if (sub === 'chatstate') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const to = recipientOf(body, account);
      const state = body.state;
      if (state !== 'composing' && state !== 'recording' && state !== 'paused') {
        throw new HttpError(400, 'state must be one of composing, recording, paused');
      }
      await ctx.signals.phoneChatstate(account, to, state as ChatState);
      return send(res, 200, { ok: true });
    }
    if (sub === 'presence') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      if (body.type !== 'available' && body.type !== 'unavailable') {
        throw new HttpError(400, 'type must be one of available, unavailable');
      }
      await ctx.signals.phonePresence(account, body.type as PresenceType);
      return send(res, 200, { ok: true });
    }
    if (sub === 'receipts') {
      if (method !== 'GET') throw new HttpError(405, 'Method not allowed');
      return send(
        res,
        200,
        store.listReceipts(account.pn).map((r) => ({
          from: formatPhoneNumber(r.fromPn),
          messageIds: r.msgIds,
          type: r.type,
          timestamp: r.ts,
        })),
      );
    }
    if (sub === 'chatstates') {
      if (method !== 'GET') throw new HttpError(405, 'Method not allowed');
      return send(
        res,
        200,
        store
          .listChatstates(account.pn)
          .map((c) => ({ from: formatPhoneNumber(c.fromPn), state: c.state, timestamp: c.ts })),
      );
    }
    if (sub === 'history') {
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const withPn = parsePhoneNumber(body.with);
      if (!withPn) throw new HttpError(400, 'with is required and must be an E.164 phone number (e.g. +15550101)');
      if (withPn === account.pn) throw new HttpError(400, 'with must be a different number than the account');
      const count = body.count;
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_HISTORY) {
        throw new HttpError(400, `count is required and must be an integer between 1 and ${MAX_HISTORY}`);
      }
      const now = Math.floor(Date.now() / 1000);
      const startAt = body.startAt ?? now - count;
      if (typeof startAt !== 'number' || !Number.isInteger(startAt) || startAt < 0) {
        throw new HttpError(400, 'startAt must be a unix time in seconds');
      }
      const rows = [];
      for (let i = 0; i < count; i++) {
        const fromPn = i % 2 === 0 ? withPn : account.pn;
        const toPn = i % 2 === 0 ? account.pn : withPn;
        const text = `History message ${i + 1} of ${count}`;
        rows.push({
          msgId: generateMessageIDV2(pnJid(fromPn)),
          fromPn,
          toPn,
          ts: startAt + i,
          text,
          message: Buffer.from(proto.Message.encode({ conversation: text }).finish()),
        });
      }
      store.insertMessagesBulk(rows);
      return send(res, 201, { count });
    }
    throw new HttpError(404, 'Route not found');
  };

  return (req, res) => {
    route(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) return sendError(res, err.statusCode, err.message);
      ctx.logger.error({ err, url: req.url, method: req.method }, 'admin API error');
      if (!res.headersSent) sendError(res, 500, 'Internal sandbox error');
      else res.destroy();
    });
  };
}
