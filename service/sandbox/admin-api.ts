/**
 * The sandbox admin HTTP API (JSON) — a binding contract other programs depend on.
 *
 *   GET  /                                → 200 { name, rootPublicKey (hex), wsUrl, accounts, online, pairing }
 *   GET  /accounts                        → 200 [{ phoneNumber, jid, lid, pushName }]
 *   POST /accounts { phoneNumber, pushName } → 201 account | 400 | 409
 *   GET  /accounts/:phoneNumber           → 200 account | 404            (extra)
 *   GET  /accounts/:phoneNumber/devices   → 200 [{ deviceId, jid, lid, platform, online, linkedAt, lastSeenAt }] (extra)
 *   DELETE /accounts/:phoneNumber/devices/:deviceId → 204 | 404 `Device not found` — unlink a companion as
 *                                           the phone would; a connected client is closed with 401 (extra)
 *   POST /accounts/:phoneNumber/scan { qr } → 200 { jid, lid, deviceId } once pairing succeeded
 *                                            | 400 (bad/unknown/rotated QR) | 404 | 409 | 502 | 504
 *   POST /accounts/:phoneNumber/messages { to, text } → 201 { id } (after the row is committed) | 400 | 404
 *   GET  /accounts/:phoneNumber/messages  → 200 [{ id, from, to, text, timestamp }] received by that phone, oldest first
 *
 * Phone numbers are accepted as `+15550100`, `15550100` or `+1 555 0100` (URL-encoded in paths);
 * responses use `+<digits>`. Errors are `{ message, statusCode, error }` (error = HTTP status text);
 * 400 messages name the offending field; an unknown account is 404 `Account not found`.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { SandboxContext } from './context.ts';
import { AccountExistsError } from './accounts.ts';
import { ScanError } from './pairing.ts';
import type { AccountRow } from './store.ts';
import { formatPhoneNumber, lidJid, parsePhoneNumber, pnJid } from './phone-number.ts';

const MAX_BODY = 1 << 20;
const MAX_TEXT = 65536;
const MAX_NAME = 100;

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

function readJson(req: IncomingMessage): Promise<Json> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > MAX_BODY) return reject(new HttpError(413, 'Request body is too large'));
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

function requireString(body: Json, field: string, max: number): string {
  const v = body[field];
  if (typeof v !== 'string' || !v.trim())
    throw new HttpError(400, `${field} is required and must be a non-empty string`);
  if (v.length > max) throw new HttpError(400, `${field} must be at most ${max} characters`);
  return v;
}

/** Create the request handler for the admin API (mounted on the sandbox's HTTP server). */
export function createAdminHandler(
  ctx: SandboxContext,
  info: () => { wsUrl: string },
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
        accounts: accounts.count(),
        online: ctx.delivery.onlineCount,
        pairing: ctx.pairing.waitingCount,
      });
    }
    if (parts[0] !== 'accounts' || parts.length > 4) throw new HttpError(404, 'Route not found');

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
    if (parts.length === 4) throw new HttpError(404, 'Route not found');
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
      if (method === 'GET') {
        return send(
          res,
          200,
          store.listReceived(account.pn).map((m) => ({
            id: m.msgId,
            from: formatPhoneNumber(m.fromPn),
            to: formatPhoneNumber(m.toPn),
            text: m.text ?? '',
            timestamp: m.ts,
          })),
        );
      }
      if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
      const body = await readJson(req);
      const toPn = parsePhoneNumber(body.to);
      if (!toPn) throw new HttpError(400, 'to is required and must be an E.164 phone number (e.g. +15550101)');
      const text = requireString(body, 'text', MAX_TEXT);
      const recipient = accounts.get(toPn);
      if (!recipient) throw new HttpError(404, 'Account not found');
      if (recipient.pn === account.pn) throw new HttpError(400, 'to must be a different account than the sender');
      const { id } = await ctx.messaging.sendFromPhone(account, recipient, text);
      return send(res, 201, { id });
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
