/**
 * The sandbox admin HTTP API (JSON) — a binding contract other programs depend on.
 *
 *   GET  /                                → 200 { name, rootPublicKey (hex), wsUrl, caCertPem, mediaHost, accounts,
 *                                             online, pairing, linkCodes (companions waiting for a phone code) }
 *   GET  /accounts                        → 200 [{ phoneNumber, jid, lid, pushName }]
 *   POST /accounts { phoneNumber, pushName } → 201 account | 400 | 409
 *   GET  /accounts/:phoneNumber           → 200 account | 404            (extra)
 *   GET  /accounts/:phoneNumber/devices   → 200 [{ deviceId, jid, lid, platform, online, linkedAt, lastSeenAt }] (extra)
 *   DELETE /accounts/:phoneNumber/devices/:deviceId → 204 | 404 `Device not found` — unlink a companion as
 *                                           the phone would; a connected client is closed with 401 (extra)
 *   POST /accounts/:phoneNumber/devices/:deviceId/disconnect { code } → 204 | 400 | 404 | 409 `Device is not
 *                                           connected` — drop its connection as the server would: 428 silent
 *                                           close, 440 conflict/replaced, else <stream:error code> (extra)
 *   POST /accounts/:phoneNumber/scan { qr } → 200 { jid, lid, deviceId } once pairing succeeded (qr: rc14's five-field
 *                                            `…linked_devices#` form or older Baileys' four fields, pairing.ts)
 *                                            | 400 (bad/unknown/rotated QR) | 404 | 409 | 502 | 504
 *   POST /accounts/:phoneNumber/link-code { code } → 200 { jid, lid, deviceId } once that phone entered the code a
 *                                            companion showed ("Link with phone number instead") and pairing
 *                                            succeeded | 400 (malformed or wrong code, no companion waiting for a
 *                                            code for this phone) | 404 | 409 | 502 | 504
 *   (messages also take poll { name, options[], selectableCount? } | liveLocation { latitude, longitude, caption? } |
 *    contacts [{ name, phoneNumber }…] | listReply { id, title } | buttonsReply { id, text } (rich-content.ts);
 *    status: true posts it as a status; undecryptable: true makes its first delivery undecryptable)
 *   (messages — 1:1 and group — also take album: [{ image } | { video }] (2–30, media as above) instead of content:
 *    the album message, then each item linked to it (album.ts) → 201 { id (the album's), itemIds })
 *   POST /accounts/:phoneNumber/poll-votes { to, pollId, options[] } → 201 { id } — vote on a poll ([] withdraws); `to`
 *     a phone number or a group id (a poll in that group)
 *   PUT  /faults/offline-marker { withhold } → 204 — while true, logins get no `<ib><offline/>` marker
 *   PUT  /faults/message-acks { withhold } → 204 — while true, companion messages are handled but not acknowledged
 *                                           (`<ack class="message">` held back; sent when set back to false)
 *   GET  /accounts/:phoneNumber/statuses  → 200 [{ id, from, timestamp, type, text, backgroundColor?, font?, media? }]
 *        the status posts of the last 24 h that phone received (its status list), oldest first (statuses.ts)
 *   POST /faults/drop-unlinked            → 200 { dropped } — every client waiting to be linked (QR or phone code)
 *                                           loses its connection without a word, as in a network drop
 *   POST /accounts/:phoneNumber/messages  → 201 { id } (after the row is committed) | 400 | 404 | 403 `Blocked by
 *        the recipient` (the `to` account blocked this phone)
 *   POST /accounts/:phoneNumber/calls { to, isVideo? } → 201 call — that phone calls `to` (an `<offer>` to its online
 *        companions); call = { id, from, to, isVideo, status: ringing|rejected|ended, rejected, offeredTo, timestamp }
 *   GET  /accounts/:phoneNumber/calls     → 200 [call] placed or received by that phone (in memory)
 *   POST /accounts/:phoneNumber/calls/:callId/end → 200 call | 404 `Call not found` — the caller hangs up (`<terminate>`)
 *   GET  /accounts/:phoneNumber/blocklist → 200 [phone] the accounts that phone blocked (blocklist IQs of its companions)
 *   GET  /accounts/:phoneNumber/profile   → 200 { phoneNumber, jid, lid, pushName, about, aboutSetAt, picture: { id, url,
 *        previewUrl, size, sha256, setAt } | null } — the profile as the server keeps it (and contacts see it)
 *   PATCH /accounts/:phoneNumber/profile { pushName?, about? (null or "" clears), picture?: { base64 } (JPEG kept as
 *        is, PNG converted to JPEG) | null (removes) } → 200 profile | 400 — as if the phone changed it; a picture
 *        change is announced to the contacts' companions (`<notification type="picture">`)
 *   GET  /accounts/:phoneNumber/profile/picture → 200 image/jpeg | 404 `No profile picture`
 *        { to, replyTo?, forwarded? (contextInfo.isForwarded), and exactly one of: text | image | video | audio |
 *        document | sticker | location | contact }
 *        media = { base64, mimetype, filename?, caption?, ptt? (audio only) }; location = { latitude, longitude,
 *        name?, address? }; contact = { name, phoneNumber } (a vCard is built); replyTo = id of an earlier
 *        message in that conversation (either direction)
 *   GET  /accounts/:phoneNumber/messages  → 200 [{ id, from, to, text, timestamp, type, replyTo, media?, location?,
 *        contact?, reaction?, edit?, revoke?, forwarded?, reactions: [{from, emoji}], edits: [{text, timestamp}], revoked,
 *        readBy: [phone], groupId?, mentions?: [phone] }] received by that phone, oldest first (media.base64 =
 *        decrypted bytes, or null if the phone could not download/verify it)
 *   POST /accounts/:phoneNumber/messages/:id/expire-media → 204 | 404 — delete the hosted blob of that
 *        message's media (sent or received by that phone), so downloads get 404 until a media re-upload
 *   POST /accounts/:phoneNumber/reactions { to, messageId, emoji } → 201 { id }; emoji "" removes
 *   POST /accounts/:phoneNumber/edits { to, messageId, text } → 201 { id } (only that phone's own text messages)
 *   POST /accounts/:phoneNumber/revokes { to, messageId } → 201 { id } — deletes for everyone one of the messages that
 *        phone sent to `to` (a REVOKE protocol message)
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
 *   POST /groups { creator, subject, participants: [phone], addressingMode?: pn|lid, notify?: boolean } → 201
 *        { id: '<id>@g.us' } | 400 | 404 (an unknown account); the creator is the group's superadmin; `notify: false`
 *        sends members' companions no `<create>` notification (they learn of the group from its first message)
 *   GET  /groups?member=                  → 200 [group] every group (or those `member` is in), oldest first
 *   GET  /groups/:groupId                 → 200 { id, subject, description, owner, createdAt (unix s), addressingMode,
 *        inviteCode, announce, locked, ephemeral, participants: [{ phoneNumber, jid, lid, role: member|admin|superadmin,
 *        isAdmin }] } | 404
 *   GET  /accounts/:phoneNumber/group-iqs → 200 { total, byKind: { query, participating, create, … } } — the `w:g2`
 *        IQs that phone's companions sent since the sandbox started, by the IQ's first child
 *   GET  /groups/:groupId/metadata-queries → 200 { total, byPhone: { '+<digits>': n } } — the `w:g2` metadata
 *        queries (`<query request="interactive"/>`) of that group the server answered since the sandbox started, per
 *        asking phone (its companions): a client that caches group metadata asks once, not on every send
 *   PATCH /groups/:groupId { by, subject?, description? (null or "" deletes), announce?: boolean (only admins
 *        send), locked?: boolean (only admins edit), ephemeral?: seconds (0 = off) } → 200 group | 400 | 403 (not a
 *        member; not an admin for announce/locked, or for anything in a locked group) | 404
 *   POST /groups/:groupId/participants { by, action: add|remove|promote|demote, participants: [phone] }
 *        → 200 [{ phoneNumber, status }] (200, 404 not a member/unknown, 409 already a member, 403 the creator)
 *        | 403 `Not a group admin` | 404
 *   POST /groups/:groupId/messages { from, and one of: text | image | video | audio | document | location | contact
 *        (as for accounts, plus replyTo? and mentions?: [phone]) | reaction: { messageId, emoji } | edit:
 *        { messageId, text } | revoke: { messageId } } → 201 { id } | 400 | 403 (not a member) | 404
 *   POST /groups/:groupId/reads { by, messageIds } → 200 { ok } — `by`'s phone read those group messages: read
 *        receipts (with `participant`) to each sender's companions
 *   Group messages appear in GET /accounts/:phoneNumber/messages of every member phone that received them, with
 *   `groupId` ('<id>@g.us') and `to` = the group id. A group id in a path is `<id>` or `<id>@g.us` (URL-encoded).
 *
 * Every request: `Host` must be this server's port on a loopback name (or its bound address), an `Origin` header
 * must be this server's own origin (403 `Host not allowed` / `Origin not allowed`), and a request body must be
 * `application/json` (415). Routing is find-my-way's; an unknown path is 404, a known path with another method 405.
 *
 * Phone numbers are accepted as `+15550100`, `15550100` or `+1 555 0100` (URL-encoded in paths);
 * responses use `+<digits>`. Errors are `{ message, statusCode, error }` (error = HTTP status text);
 * 400 messages name the offending field; an unknown account is 404 `Account not found`.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';
import type { SandboxContext } from './context.ts';
import { generateMessageIDV2, proto } from '@whiskeysockets/baileys';
import { buildVcard, classify, mediaMessage, type MediaInput } from './content.ts';
import { buildPollVote, buildRichContent, RICH_CONTENT_FIELDS, RichContentError } from './rich-content.ts';
import { albumChild, albumParent, MAX_ALBUM_ITEMS } from './album.ts';
import { MEDIA_KINDS, type MediaKind } from './media.ts';
import { receivedMessagesView } from './message-view.ts';
import type { ChatState, PresenceType } from './signals.ts';
import { AccountExistsError } from './accounts.ts';
import { ScanError } from './pairing.ts';
import { normaliseLinkCode } from './link-code.ts';
import { MAX_ABOUT, ProfileInputError } from './profiles.ts';
import type { AccountRow, GroupRow, MessageRow } from './store.ts';
import { parseHost } from '../net/host.ts';
import {
  GroupError,
  MAX_DESCRIPTION,
  MAX_EPHEMERAL,
  MAX_SUBJECT,
  PARTICIPANT_ACTIONS,
  groupJid,
  parseGroupId,
  type ParticipantAction,
} from './groups.ts';
import { formatPhoneNumber, lidJid, memberJid, parsePhoneNumber, pnJid } from './phone-number.ts';

const MAX_BODY = 1 << 20;
/** Bodies of message sends may carry base64 media. */
const MAX_MEDIA_BODY = 96 * 1024 * 1024;
const MAX_HISTORY = 200_000;
const MAX_TEXT = 65536;
const MAX_NAME = 100;
/** Bodies of profile updates may carry a base64 picture. */
const MAX_PICTURE_BODY = 16 * 1024 * 1024;

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

/** Read a JSON object body. @throws HttpError 415 unless `Content-Type` is `application/json`, 413, 400. */
function readJson(req: IncomingMessage, maxBody = MAX_BODY): Promise<Json> {
  const type = req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    req.resume();
    return Promise.reject(new HttpError(415, 'Content-Type must be application/json'));
  }
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

/** Runs a rich-content builder (polls, live locations, contact arrays, list/buttons replies), turning its input errors into 400s. */
function richOrBadRequest<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof RichContentError) throw new HttpError(400, err.message);
    throw err;
  }
}

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

/** The sandbox's own origins and Host names for a request's local socket (loopback names and the bound address). */
function ownNames(req: IncomingMessage): string[] {
  const address = req.socket.localAddress;
  const v4 = address ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const local = v4 ?? (address?.includes(':') ? `[${address.toLowerCase()}]` : address);
  return ['127.0.0.1', 'localhost', '[::1]', ...(local ? [local] : [])];
}

/**
 * Whether `Host` names this server's port on a loopback name or the address it is bound to (no DNS rebinding);
 * also checked on the protocol WebSocket's upgrade (whose `Origin` is Baileys' own, `https://web.whatsapp.com`).
 */
export function hostAllowed(req: IncomingMessage): boolean {
  const host = parseHost(req.headers.host);
  return !!host && host.port === req.socket.localPort && ownNames(req).includes(host.name);
}

/**
 * The guard in front of every admin route (issue 20): `Host` must name this server's port on a loopback name
 * (or the address it is bound to) — no DNS rebinding; an `Origin` header, on any method, must be this server's
 * own origin (`http://<name>:<port>`) — no other web page may drive a simulated phone. 403 otherwise.
 */
function checkHostAndOrigin(req: IncomingMessage): void {
  const port = req.socket.localPort;
  const names = ownNames(req);
  if (!hostAllowed(req)) throw new HttpError(403, 'Host not allowed');
  const origin = req.headers.origin;
  if (origin !== undefined && !names.some((n) => origin === `http://${n}:${port}`)) {
    throw new HttpError(403, 'Origin not allowed');
  }
}

type Params = Record<string, string | undefined>;
type Route = (req: IncomingMessage, res: ServerResponse, params: Params) => Promise<void> | void;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Create the request handler for the admin API (mounted on the sandbox's HTTP server). */
export function createAdminHandler(
  ctx: SandboxContext,
  info: () => { wsUrl: string; caCertPem: string },
): (req: IncomingMessage, res: ServerResponse) => void {
  const { accounts, store } = ctx;
  const router = FindMyWay({ ignoreTrailingSlash: true, ignoreDuplicateSlashes: true });
  const on = (method: (typeof METHODS)[number], path: string, route: Route): void =>
    router.on(method, path, route as unknown as FindMyWay.Handler<FindMyWay.HTTPVersion.V1>);

  const accountOf = (raw: string | undefined): AccountRow => {
    const pn = parsePhoneNumber(raw);
    if (!pn) throw new HttpError(400, 'phoneNumber in the path must be an E.164 phone number');
    const account = accounts.get(pn);
    if (!account) throw new HttpError(404, 'Account not found');
    return account;
  };

  /** An account named in a body field (400 if malformed, 404 if unknown). */
  const bodyAccount = (body: Json, field: string): AccountRow => {
    const pn = parsePhoneNumber(body[field]);
    if (!pn) throw new HttpError(400, `${field} is required and must be an E.164 phone number (e.g. +15550101)`);
    const account = accounts.get(pn);
    if (!account) throw new HttpError(404, 'Account not found');
    return account;
  };

  /** The `to` account of a body (400 if malformed or the sender itself, 404 if unknown). */
  const recipientOf = (body: Json, sender: AccountRow): AccountRow => {
    const recipient = bodyAccount(body, 'to');
    if (recipient.pn === sender.pn) throw new HttpError(400, 'to must be a different account than the sender');
    return recipient;
  };

  const groupOf = (raw: string | undefined): GroupRow => {
    const id = parseGroupId(raw);
    if (!id) throw new HttpError(400, 'groupId in the path must be a group id (e.g. 120363012345678901@g.us)');
    const group = ctx.groups.get(id);
    if (!group) throw new HttpError(404, 'Group not found');
    return group;
  };

  const participantsOf = (body: Json): AccountRow[] => {
    const raw = body.participants;
    if (!Array.isArray(raw) || raw.length > 1024) {
      throw new HttpError(400, 'participants is required and must be an array of phone numbers');
    }
    return raw.map((v, i) => {
      const pn = parsePhoneNumber(v);
      if (!pn) throw new HttpError(400, `participants[${i}] must be an E.164 phone number`);
      const a = accounts.get(pn);
      if (!a) throw new HttpError(404, 'Account not found');
      return a;
    });
  };

  const deviceIdOf = (raw: string | undefined): number => {
    const deviceId = Number(raw);
    if (!Number.isInteger(deviceId) || deviceId < 1) throw new HttpError(400, 'deviceId must be a positive integer');
    return deviceId;
  };

  const noContent = (res: ServerResponse): void => {
    res.writeHead(204).end();
  };

  // ---- info and accounts --------------------------------------------------------------------

  on('GET', '/', (_req, res) =>
    send(res, 200, {
      name: 'switchboard-sandbox',
      rootPublicKey: ctx.identity.rootKey.public.toString('hex'),
      wsUrl: info().wsUrl,
      caCertPem: info().caCertPem,
      mediaHost: ctx.media.host,
      accounts: accounts.count(),
      online: ctx.delivery.onlineCount,
      pairing: ctx.pairing.waitingCount,
      linkCodes: ctx.linkCodes.waitingCount,
    }),
  );

  on('GET', '/accounts', (_req, res) =>
    send(
      res,
      200,
      accounts.list().map((a) => accounts.view(a)),
    ),
  );

  on('POST', '/accounts', async (req, res) => {
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
  });

  on('GET', '/accounts/:phoneNumber', (_req, res, p) => send(res, 200, accounts.view(accountOf(p.phoneNumber))));

  on('GET', '/accounts/:phoneNumber/devices', (_req, res, p) => {
    const account = accountOf(p.phoneNumber);
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
  });

  on('DELETE', '/accounts/:phoneNumber/devices/:deviceId', (_req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const deviceId = deviceIdOf(p.deviceId);
    if (!ctx.delivery.unlinkDevice(account, deviceId)) throw new HttpError(404, 'Device not found');
    noContent(res);
  });

  on('POST', '/accounts/:phoneNumber/devices/:deviceId/disconnect', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const deviceId = deviceIdOf(p.deviceId);
    const body = await readJson(req);
    const code = (body as { code?: unknown }).code;
    if (!Number.isInteger(code) || !DISCONNECT_CODES.includes(code as number)) {
      throw new HttpError(400, `body/code must be one of ${DISCONNECT_CODES.join(', ')}`);
    }
    if (!store.getDevice(account.pn, deviceId)) throw new HttpError(404, 'Device not found');
    if (!ctx.delivery.disconnectDevice(account, deviceId, code as number)) throw new HttpError(409, 'Device is not connected');
    noContent(res);
  });

  on('POST', '/accounts/:phoneNumber/scan', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const qr = requireString(body, 'qr', 4096);
    try {
      return send(res, 200, await ctx.pairing.scan(account, qr));
    } catch (err) {
      if (err instanceof ScanError) throw new HttpError(err.statusCode, err.message);
      throw err;
    }
  });

  on('POST', '/accounts/:phoneNumber/link-code', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const code = typeof body.code === 'string' ? normaliseLinkCode(body.code) : undefined;
    if (!code) throw new HttpError(400, 'code is required and must be the 8 letters or digits the device shows (e.g. ABCD-EFGH)');
    try {
      return send(res, 200, await ctx.linkCodes.enter(account, code));
    } catch (err) {
      if (err instanceof ScanError) throw new HttpError(err.statusCode, err.message);
      throw err;
    }
  });

  // ---- 1:1 messages and signals -------------------------------------------------------------

  on('GET', '/accounts/:phoneNumber/messages', (_req, res, p) =>
    send(res, 200, receivedMessagesView(store, accountOf(p.phoneNumber).pn)),
  );

  on('GET', '/accounts/:phoneNumber/statuses', (_req, res, p) => send(res, 200, ctx.statuses.view(accountOf(p.phoneNumber).pn)));

  on('POST', '/accounts/:phoneNumber/calls', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const callee = recipientOf(body, account);
    if (body.isVideo !== undefined && typeof body.isVideo !== 'boolean') throw new HttpError(400, 'isVideo must be a boolean');
    return send(res, 201, ctx.calls.place(account, callee, body.isVideo === true));
  });

  on('GET', '/accounts/:phoneNumber/calls', (_req, res, p) => send(res, 200, ctx.calls.list(accountOf(p.phoneNumber).pn)));

  on('POST', '/accounts/:phoneNumber/calls/:callId/end', (_req, res, p) => {
    const call = ctx.calls.end(accountOf(p.phoneNumber), p.callId ?? '');
    if (!call) throw new HttpError(404, 'Call not found');
    return send(res, 200, call);
  });

  on('GET', '/accounts/:phoneNumber/group-iqs', (_req, res, p) => send(res, 200, ctx.groups.iqCounts(accountOf(p.phoneNumber).pn)));

  on('GET', '/accounts/:phoneNumber/blocklist', (_req, res, p) => {
    const account = accountOf(p.phoneNumber);
    return send(res, 200, ctx.blocklist.list(account.pn).map(formatPhoneNumber));
  });

  // ---- profiles (profiles.ts) --------------------------------------------------------------------

  on('GET', '/accounts/:phoneNumber/profile', (_req, res, p) => send(res, 200, ctx.profiles.view(accountOf(p.phoneNumber))));

  on('GET', '/accounts/:phoneNumber/profile/picture', (_req, res, p) => {
    const bytes = ctx.profiles.pictureBytes(accountOf(p.phoneNumber).pn);
    if (!bytes) throw new HttpError(404, 'No profile picture');
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': bytes.length });
    res.end(bytes);
  });

  on('PATCH', '/accounts/:phoneNumber/profile', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req, MAX_PICTURE_BODY);
    const unknown = Object.keys(body).filter((k) => !['pushName', 'about', 'picture'].includes(k));
    if (unknown.length) throw new HttpError(400, `unknown field ${unknown[0]!} (pushName, about, picture)`);
    const pushName = body.pushName === undefined ? undefined : requireString(body, 'pushName', MAX_NAME).trim();
    if (body.about !== undefined && body.about !== null && typeof body.about !== 'string') throw new HttpError(400, 'about must be a string or null');
    const about = body.about as string | null | undefined;
    if (typeof about === 'string' && [...about].length > MAX_ABOUT) throw new HttpError(400, `about must be at most ${MAX_ABOUT} characters`);
    let picture: Buffer | null | undefined;
    if (body.picture === null) picture = null;
    else if (body.picture !== undefined) {
      const b64 = asObject(body.picture, 'picture').base64;
      if (typeof b64 !== 'string' || !b64 || !BASE64.test(b64.replace(/\s/g, ''))) {
        throw new HttpError(400, 'picture.base64 is required and must be base64-encoded JPEG or PNG bytes');
      }
      picture = Buffer.from(b64, 'base64');
    }
    // the picture first: it is the one part that can still be refused (400), and then nothing has changed
    try {
      if (picture) await ctx.profiles.setPicture(account, picture);
    } catch (err) {
      if (err instanceof ProfileInputError) throw new HttpError(400, err.message);
      throw err;
    }
    if (picture === null) ctx.profiles.removePicture(account);
    if (about !== undefined) ctx.profiles.setAbout(account.pn, about);
    if (pushName !== undefined) accounts.setPushName(account.pn, pushName);
    return send(res, 200, ctx.profiles.view(accounts.get(account.pn)!));
  });

  on('POST', '/accounts/:phoneNumber/messages', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req, MAX_MEDIA_BODY);
    const recipient = recipientOf(body, account);
    if (ctx.blocklist.blocks(recipient.pn, account.pn)) throw new HttpError(403, 'Blocked by the recipient');
    let contextInfo: proto.IContextInfo | undefined;
    if (body.replyTo !== undefined) {
      if (typeof body.replyTo !== 'string' || !body.replyTo) throw new HttpError(400, 'replyTo must be a message id');
      const quoted = store.findMessageInChat(account.pn, recipient.pn, body.replyTo);
      if (!quoted) throw new HttpError(400, 'replyTo is not a message in this conversation');
      contextInfo = quoteOf(quoted, pnJid(quoted.fromPn));
    }
    if (body.forwarded !== undefined) {
      if (typeof body.forwarded !== 'boolean') throw new HttpError(400, 'forwarded must be a boolean');
      if (body.forwarded) contextInfo = { ...contextInfo, isForwarded: true, forwardingScore: 1 };
    }
    if (body.album !== undefined) {
      if (body.status !== undefined || body.undecryptable !== undefined) {
        throw new HttpError(400, 'album cannot be combined with status or undecryptable');
      }
      const album = await sendAlbum(ctx, body, pnJid(recipient.pn), contextInfo, (message, mediaPlaintext) =>
        ctx.messaging.sendFromPhone(account, recipient, message, { mediaPlaintext }),
      );
      return send(res, 201, album);
    }
    const { message, mediaPlaintext } = await buildContent(ctx, body, contextInfo);
    if (body.status !== undefined && typeof body.status !== 'boolean') throw new HttpError(400, 'status must be a boolean');
    if (body.undecryptable !== undefined && typeof body.undecryptable !== 'boolean') {
      throw new HttpError(400, 'undecryptable must be a boolean');
    }
    const { id } = await ctx.messaging.sendFromPhone(account, recipient, message, {
      mediaPlaintext,
      statusBroadcast: body.status === true,
      undecryptableFirst: body.undecryptable === true,
    });
    return send(res, 201, { id });
  });

  // { to, pollId, options[] }: this phone votes on a poll of its conversation with `to` (issue #13), a phone number
  // or a group id (the vote then goes to the group, addressed as the group addresses its members); [] withdraws.
  on('POST', '/accounts/:phoneNumber/poll-votes', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const pollId = requireString(body, 'pollId', 128);
    if (typeof body.to === 'string' && parseGroupId(body.to)) {
      const group = groupOf(body.to);
      const poll = store.findGroupMessage(group.id, pollId);
      if (!poll) throw new HttpError(400, 'pollId must be a poll in this group');
      const jidOf = (pn: string): string => {
        const a = accounts.get(pn);
        return a ? memberJid(group.addressingMode, a) : pnJid(pn);
      };
      const creatorIsVoter = poll.fromPn === account.pn;
      const message = richOrBadRequest(() =>
        buildPollVote(
          proto.Message.decode(poll.message),
          pollId,
          {
            creatorJid: jidOf(poll.fromPn),
            voterJid: jidOf(account.pn),
            chatJid: groupJid(group.id),
            creatorIsVoter,
            ...(!creatorIsVoter && { participantJid: jidOf(poll.fromPn) }),
          },
          body.options,
        ),
      );
      const { id } = await ctx.groups.sendFromPhone(account, group, message);
      return send(res, 201, { id });
    }
    const recipient = recipientOf(body, account);
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
  });

  // { withhold: boolean }: logins get no `<ib><offline/>` marker while set (issue #13: clients must not stall).
  on('PUT', '/faults/offline-marker', async (req, res) => {
    const body = await readJson(req);
    if (typeof body.withhold !== 'boolean') throw new HttpError(400, 'withhold must be a boolean');
    ctx.delivery.withholdOfflineMarker = body.withhold;
    noContent(res);
  });

  // { withhold: boolean }: companion messages get no server ack while set (a lost or late answer); the held acks go
  // out when it is set back to false.
  on('PUT', '/faults/message-acks', async (req, res) => {
    const body = await readJson(req);
    if (typeof body.withhold !== 'boolean') throw new HttpError(400, 'withhold must be a boolean');
    ctx.messaging.withholdAcks = body.withhold;
    noContent(res);
  });

  // Every client waiting to be linked loses its connection without a word, as in a network drop.
  on('POST', '/faults/drop-unlinked', (_req, res) => send(res, 200, { dropped: ctx.pairing.dropWaiting() }));

  on('POST', '/accounts/:phoneNumber/messages/:id/expire-media', (_req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const row = store.findMessageForPhone(account.pn, p.id ?? '');
    if (!row) throw new HttpError(404, 'Message not found');
    if (!ctx.media.expireMessageMedia(proto.Message.decode(row.message))) {
      throw new HttpError(404, 'Message has no live media');
    }
    noContent(res);
  });

  on('POST', '/accounts/:phoneNumber/reactions', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const recipient = recipientOf(body, account);
    const messageId = requireString(body, 'messageId', 128);
    const emoji = emojiOf(body);
    const target = store.findMessageInChat(account.pn, recipient.pn, messageId);
    if (!target) throw new HttpError(400, 'messageId is not a message in this conversation');
    const message: proto.IMessage = {
      reactionMessage: {
        key: { remoteJid: pnJid(recipient.pn), fromMe: target.fromPn === account.pn, id: messageId },
        text: emoji,
        senderTimestampMs: Date.now(),
      },
    };
    const { id } = await ctx.messaging.sendFromPhone(account, recipient, message);
    return send(res, 201, { id });
  });

  on('POST', '/accounts/:phoneNumber/edits', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const recipient = recipientOf(body, account);
    const messageId = requireString(body, 'messageId', 128);
    const text = requireString(body, 'text', MAX_TEXT);
    const target = store.getMessage(account.pn, messageId);
    if (!target || target.toPn !== recipient.pn || classify(proto.Message.decode(target.message)).type !== 'text') {
      throw new HttpError(400, 'messageId must be a text message this phone sent to `to`');
    }
    const { id } = await ctx.messaging.sendFromPhone(account, recipient, editOf(pnJid(recipient.pn), messageId, text));
    return send(res, 201, { id });
  });

  on('POST', '/accounts/:phoneNumber/revokes', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const recipient = recipientOf(body, account);
    const messageId = requireString(body, 'messageId', 128);
    const target = store.getMessage(account.pn, messageId);
    if (!target || target.toPn !== recipient.pn) throw new HttpError(400, 'messageId must be a message this phone sent to `to`');
    const { id } = await ctx.messaging.sendFromPhone(account, recipient, revokeOf(pnJid(recipient.pn), messageId));
    return send(res, 201, { id });
  });

  on('POST', '/accounts/:phoneNumber/reads', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const sender = recipientOf(body, account);
    const ids = body.messageIds;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > 1000 || !ids.every((i) => typeof i === 'string' && i)) {
      throw new HttpError(400, 'messageIds is required and must be a non-empty array of message ids');
    }
    for (const id of ids as string[]) {
      const m = store.getMessage(sender.pn, id);
      if (!m || m.toPn !== account.pn) throw new HttpError(400, `messageIds: ${id} is not a message received from to`);
    }
    await ctx.signals.phoneRead(account, sender, ids as string[]);
    return send(res, 200, { ok: true });
  });

  on('POST', '/accounts/:phoneNumber/chatstate', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    const to = recipientOf(body, account);
    const state = body.state;
    if (state !== 'composing' && state !== 'recording' && state !== 'paused') {
      throw new HttpError(400, 'state must be one of composing, recording, paused');
    }
    await ctx.signals.phoneChatstate(account, to, state as ChatState);
    return send(res, 200, { ok: true });
  });

  on('POST', '/accounts/:phoneNumber/presence', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
    const body = await readJson(req);
    if (body.type !== 'available' && body.type !== 'unavailable') {
      throw new HttpError(400, 'type must be one of available, unavailable');
    }
    await ctx.signals.phonePresence(account, body.type as PresenceType);
    return send(res, 200, { ok: true });
  });

  on('GET', '/accounts/:phoneNumber/receipts', (_req, res, p) =>
    send(
      res,
      200,
      store.listReceipts(accountOf(p.phoneNumber).pn).map((r) => ({
        from: formatPhoneNumber(r.fromPn),
        messageIds: r.msgIds,
        type: r.type,
        timestamp: r.ts,
      })),
    ),
  );

  on('GET', '/accounts/:phoneNumber/chatstates', (_req, res, p) =>
    send(
      res,
      200,
      store
        .listChatstates(accountOf(p.phoneNumber).pn)
        .map((c) => ({ from: formatPhoneNumber(c.fromPn), state: c.state, timestamp: c.ts })),
    ),
  );

  on('POST', '/accounts/:phoneNumber/history', async (req, res, p) => {
    const account = accountOf(p.phoneNumber);
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
  });

  // ---- groups -------------------------------------------------------------------------------

  on('POST', '/groups', async (req, res) => {
    const body = await readJson(req);
    const creator = bodyAccount(body, 'creator');
    const subject = requireString(body, 'subject', MAX_SUBJECT).trim();
    const members = participantsOf(body);
    const mode = body.addressingMode ?? 'pn';
    if (mode !== 'pn' && mode !== 'lid') throw new HttpError(400, 'addressingMode must be one of pn, lid');
    const notify = body.notify ?? true;
    if (typeof notify !== 'boolean') throw new HttpError(400, 'notify must be a boolean');
    const group = ctx.groups.create(creator, subject, members, mode, notify);
    return send(res, 201, { id: groupJid(group.id) });
  });

  on('GET', '/groups', (req, res) => {
    const member = new URL(req.url ?? '/', 'http://sandbox').searchParams.get('member');
    let groups: GroupRow[];
    if (member === null) groups = store.listGroups();
    else {
      const pn = parsePhoneNumber(member);
      if (!pn) throw new HttpError(400, 'member must be an E.164 phone number');
      groups = store.listGroupsOf(pn);
    }
    return send(
      res,
      200,
      groups.map((g) => ctx.groups.view(g)),
    );
  });

  on('GET', '/groups/:groupId', (_req, res, p) => send(res, 200, ctx.groups.view(groupOf(p.groupId))));

  on('GET', '/groups/:groupId/metadata-queries', (_req, res, p) => send(res, 200, ctx.groups.metadataQueries(groupOf(p.groupId))));

  on('PATCH', '/groups/:groupId', async (req, res, p) => {
    const group = groupOf(p.groupId);
    const body = await readJson(req);
    const by = bodyAccount(body, 'by');
    const subject = optionalString(body, 'subject', 'subject', MAX_SUBJECT);
    const description = body.description === null ? null : optionalString(body, 'description', 'description', MAX_DESCRIPTION);
    const flag = (key: 'announce' | 'locked'): boolean | undefined => {
      const v = body[key];
      if (v !== undefined && typeof v !== 'boolean') throw new HttpError(400, `${key} must be a boolean`);
      return v;
    };
    const announce = flag('announce');
    const locked = flag('locked');
    const ephemeral = body.ephemeral;
    if (
      ephemeral !== undefined &&
      (typeof ephemeral !== 'number' || !Number.isInteger(ephemeral) || ephemeral < 0 || ephemeral > MAX_EPHEMERAL)
    ) {
      throw new HttpError(400, `ephemeral must be an integer number of seconds between 0 and ${MAX_EPHEMERAL}`);
    }
    if ([subject, description, announce, locked, ephemeral].every((v) => v === undefined)) {
      throw new HttpError(400, 'one of subject, description, announce, locked, ephemeral is required');
    }
    if (subject !== undefined && !subject.trim()) throw new HttpError(400, 'subject must be a non-empty string');
    if (subject !== undefined) ctx.groups.setSubject(group, by, subject.trim());
    if (description !== undefined) ctx.groups.setDescription(ctx.groups.require(group.id), by, description || null);
    if (announce !== undefined || locked !== undefined || ephemeral !== undefined) {
      ctx.groups.updateSettings(ctx.groups.require(group.id), by, {
        announce,
        locked,
        ephemeral: ephemeral as number | undefined,
      });
    }
    return send(res, 200, ctx.groups.view(ctx.groups.require(group.id)));
  });

  on('POST', '/groups/:groupId/participants', async (req, res, p) => {
    const group = groupOf(p.groupId);
    const body = await readJson(req);
    const by = bodyAccount(body, 'by');
    const action = body.action;
    if (typeof action !== 'string' || !(PARTICIPANT_ACTIONS as readonly string[]).includes(action)) {
      throw new HttpError(400, `action must be one of ${PARTICIPANT_ACTIONS.join(', ')}`);
    }
    const raw = body.participants;
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > 1024) {
      throw new HttpError(400, 'participants is required and must be a non-empty array of phone numbers');
    }
    const targets = raw.map((v, i) => {
      const pn = parsePhoneNumber(v);
      if (!pn) throw new HttpError(400, `participants[${i}] must be an E.164 phone number`);
      return { jid: pnJid(pn), pn, account: accounts.get(pn) };
    });
    const results = ctx.groups.updateParticipants(group, by, action as ParticipantAction, targets);
    return send(
      res,
      200,
      results.map((r, i) => ({ phoneNumber: formatPhoneNumber(targets[i]!.pn), status: r.status })),
    );
  });

  on('POST', '/groups/:groupId/reads', async (req, res, p) => {
    const group = groupOf(p.groupId);
    const body = await readJson(req);
    const by = bodyAccount(body, 'by');
    const ids = body.messageIds;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > 1000 || !ids.every((i) => typeof i === 'string' && i)) {
      throw new HttpError(400, 'messageIds is required and must be a non-empty array of message ids');
    }
    const rows = (ids as string[]).map((id) => {
      const m = store.findGroupMessage(group.id, id);
      if (!m || m.fromPn === by.pn) throw new HttpError(400, `messageIds: ${id} is not a message \`by\` received in this group`);
      return m;
    });
    await ctx.signals.phoneReadGroup(by, groupJid(group.id), memberJid(group.addressingMode, by), rows);
    return send(res, 200, { ok: true });
  });

  on('POST', '/groups/:groupId/messages', async (req, res, p) => {
    const group = groupOf(p.groupId);
    const body = await readJson(req, MAX_MEDIA_BODY);
    const from = bodyAccount(body, 'from');
    const gjid = groupJid(group.id);
    const mode = group.addressingMode;
    const senderJid = (pn: string): string => {
      const a = accounts.get(pn);
      return a ? memberJid(mode, a) : pnJid(pn);
    };
    const targetOf = (o: Json, field: string) => {
      const messageId = requireString(o, 'messageId', 128, `${field}.messageId`);
      const target = store.findGroupMessage(group.id, messageId);
      if (!target) throw new HttpError(400, `${field}.messageId is not a message in this group`);
      return target;
    };
    let message: proto.IMessage;
    let mediaPlaintext: Buffer | undefined;
    if (body.reaction !== undefined) {
      const r = asObject(body.reaction, 'reaction');
      const target = targetOf(r, 'reaction');
      const emoji = emojiOf(r, 'reaction.emoji');
      const fromMe = target.fromPn === from.pn;
      message = {
        reactionMessage: {
          key: { remoteJid: gjid, fromMe, id: target.msgId, ...(fromMe ? {} : { participant: senderJid(target.fromPn) }) },
          text: emoji,
          senderTimestampMs: Date.now(),
        },
      };
    } else if (body.edit !== undefined) {
      const e = asObject(body.edit, 'edit');
      const target = targetOf(e, 'edit');
      const text = requireString(e, 'text', MAX_TEXT, 'edit.text');
      if (target.fromPn !== from.pn || classify(proto.Message.decode(target.message)).type !== 'text') {
        throw new HttpError(400, 'edit.messageId must be a text message `from` sent to this group');
      }
      message = editOf(gjid, target.msgId, text);
    } else if (body.revoke !== undefined) {
      const target = targetOf(asObject(body.revoke, 'revoke'), 'revoke');
      if (target.fromPn !== from.pn) throw new HttpError(400, 'revoke.messageId must be a message `from` sent');
      message = revokeOf(gjid, target.msgId);
    } else {
      let contextInfo: proto.IContextInfo | undefined;
      if (body.replyTo !== undefined) {
        if (typeof body.replyTo !== 'string' || !body.replyTo) throw new HttpError(400, 'replyTo must be a message id');
        const quoted = store.findGroupMessage(group.id, body.replyTo);
        if (!quoted) throw new HttpError(400, 'replyTo is not a message in this group');
        contextInfo = quoteOf(quoted, senderJid(quoted.fromPn));
      }
      if (body.mentions !== undefined) {
        if (!Array.isArray(body.mentions) || body.mentions.length > 1024) {
          throw new HttpError(400, 'mentions must be an array of phone numbers');
        }
        const mentionedJid = body.mentions.map((v, i) => {
          const pn = parsePhoneNumber(v);
          if (!pn) throw new HttpError(400, `mentions[${i}] must be an E.164 phone number`);
          return senderJid(pn);
        });
        contextInfo = { ...contextInfo, mentionedJid };
      }
      if (body.album !== undefined) {
        const album = await sendAlbum(ctx, body, gjid, contextInfo, (m, mediaPlaintext) =>
          ctx.groups.sendFromPhone(from, group, m, { mediaPlaintext }),
        );
        return send(res, 201, album);
      }
      ({ message, mediaPlaintext } = await buildContent(ctx, body, contextInfo));
    }
    const { id } = await ctx.groups.sendFromPhone(from, group, message, { mediaPlaintext });
    return send(res, 201, { id });
  });

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    checkHostAndOrigin(req);
    const method = (req.method ?? 'GET') as (typeof METHODS)[number];
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const found = METHODS.includes(method) ? router.find(method, path) : null;
    if (!found) {
      if (METHODS.some((m) => m !== method && router.find(m, path))) throw new HttpError(405, 'Method not allowed');
      throw new HttpError(404, 'Route not found');
    }
    await (found.handler as unknown as Route)(req, res, found.params);
  };

  return (req, res) => {
    route(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) return sendError(res, err.statusCode, err.message);
      if (err instanceof GroupError) return sendError(res, err.code, err.message);
      ctx.logger.error({ err, url: req.url, method: req.method }, 'admin API error');
      if (!res.headersSent) sendError(res, 500, 'Internal sandbox error');
      else res.destroy();
    });
  };
}

/** `contextInfo` quoting an earlier message (a reply). */
function quoteOf(quoted: MessageRow, participant: string): proto.IContextInfo {
  const quotedMessage = proto.Message.decode(quoted.message);
  quotedMessage.messageContextInfo = null;
  return { stanzaId: quoted.msgId, participant, quotedMessage };
}

/** A MESSAGE_EDIT protocol message for one of the sender's own messages in chat `remoteJid`. */
function editOf(remoteJid: string, messageId: string, text: string): proto.IMessage {
  return {
    protocolMessage: {
      type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
      key: { remoteJid, fromMe: true, id: messageId },
      editedMessage: { conversation: text },
      timestampMs: Date.now(),
    },
  };
}

/** A REVOKE protocol message (delete for everyone) of one of the sender's own messages in chat `remoteJid`. */
function revokeOf(remoteJid: string, messageId: string): proto.IMessage {
  return { protocolMessage: { type: proto.Message.ProtocolMessage.Type.REVOKE, key: { remoteJid, fromMe: true, id: messageId } } };
}

function emojiOf(o: Json, field = 'emoji'): string {
  if (typeof o.emoji !== 'string') throw new HttpError(400, `${field} is required (a string; "" removes the reaction)`);
  if (o.emoji.length > 32) throw new HttpError(400, `${field} must be at most 32 characters`);
  return o.emoji;
}

/**
 * Sends `body.album` (2–30 items, each `{ image }` or `{ video }` media as for a single send) the way a phone does
 * (album.ts): the album message (with `contextInfo`: a reply, mentions), then every item linked to it. Everything
 * is checked before the first message leaves. Returns the album's id and its items' ids in order.
 */
async function sendAlbum(
  ctx: SandboxContext,
  body: Json,
  remoteJid: string,
  contextInfo: proto.IContextInfo | undefined,
  sendOne: (message: proto.IMessage, mediaPlaintext?: Buffer) => Promise<{ id: string }>,
): Promise<{ id: string; itemIds: string[] }> {
  const others = CONTENT_FIELDS.filter((k) => body[k] !== undefined && body[k] !== null);
  if (others.length > 0) throw new HttpError(400, `album cannot be combined with ${others.join(', ')}`);
  const raw = body.album;
  if (!Array.isArray(raw) || raw.length < 2 || raw.length > MAX_ALBUM_ITEMS) {
    throw new HttpError(400, `album must be an array of 2 to ${MAX_ALBUM_ITEMS} items ({ image } or { video })`);
  }
  const items = raw.map((item, i) => {
    const o = asObject(item, `album[${i}]`);
    const kinds = (['image', 'video'] as const).filter((k) => o[k] !== undefined);
    if (kinds.length !== 1 || Object.keys(o).length !== 1) throw new HttpError(400, `album[${i}] must have exactly one of image, video`);
    return parseMedia(o[kinds[0]!], kinds[0]!);
  });
  const images = items.filter((m) => m.kind === 'image').length;
  const parent = await sendOne(albumParent({ images, videos: items.length - images }, contextInfo));
  const itemIds: string[] = [];
  for (const [i, input] of items.entries()) {
    const hosted = await ctx.media.hostMedia(input.data, input.kind);
    const media = mediaMessage(input, { ...hosted, fileLength: input.data.length });
    itemIds.push((await sendOne(albumChild(media, remoteJid, parent.id, i), input.data)).id);
  }
  return { id: parent.id, itemIds };
}

/**
 * The message a phone sends for a body with exactly one content field (text | media | location | contact), with an
 * optional `contextInfo` (reply, mentions); media are uploaded to the media host first.
 */
async function buildContent(
  ctx: SandboxContext,
  body: Json,
  contextInfo: proto.IContextInfo | undefined,
): Promise<{ message: proto.IMessage; mediaPlaintext: Buffer | undefined }> {
  const kinds = CONTENT_FIELDS.filter((k) => body[k] !== undefined && body[k] !== null);
  if (kinds.length === 0) {
    throw new HttpError(400, `one of ${CONTENT_FIELDS.join(', ')} is required (text is a non-empty string)`);
  }
  if (kinds.length > 1) {
    throw new HttpError(400, `exactly one of ${CONTENT_FIELDS.join(', ')} is allowed (got ${kinds.join(', ')})`);
  }
  const kind = kinds[0]!;
  if (kind === 'text') {
    const text = requireString(body, 'text', MAX_TEXT);
    return {
      message: contextInfo ? { extendedTextMessage: { text, contextInfo } } : { conversation: text },
      mediaPlaintext: undefined,
    };
  }
  if (kind === 'location') {
    const l = parseLocation(body.location);
    return {
      message: {
        locationMessage: {
          degreesLatitude: l.latitude,
          degreesLongitude: l.longitude,
          ...(l.name ? { name: l.name } : {}),
          ...(l.address ? { address: l.address } : {}),
          ...(contextInfo ? { contextInfo } : {}),
        },
      },
      mediaPlaintext: undefined,
    };
  }
  if (kind === 'contact') {
    const c = asObject(body.contact, 'contact');
    const name = requireString(c, 'name', MAX_NAME, 'contact.name').trim();
    const pn = parsePhoneNumber(c.phoneNumber);
    if (!pn) throw new HttpError(400, 'contact.phoneNumber must be an E.164 phone number');
    const vcard = buildVcard({ name, phoneNumber: formatPhoneNumber(pn) });
    return {
      message: { contactMessage: { displayName: name, vcard, ...(contextInfo ? { contextInfo } : {}) } },
      mediaPlaintext: undefined,
    };
  }
  if ((RICH_CONTENT_FIELDS as readonly string[]).includes(kind)) {
    return {
      message: richOrBadRequest(() => buildRichContent(kind as (typeof RICH_CONTENT_FIELDS)[number], body[kind], contextInfo)),
      mediaPlaintext: undefined,
    };
  }
  const input = parseMedia(body[kind], kind as MediaKind);
  const hosted = await ctx.media.hostMedia(input.data, input.kind);
  return {
    message: mediaMessage(input, { ...hosted, fileLength: input.data.length }, contextInfo),
    mediaPlaintext: input.data,
  };
}
