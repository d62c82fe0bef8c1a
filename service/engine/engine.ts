/**
 * The engine: one `Session` per connection, started from the database at boot and driven by the API.
 * Implements `Engine` (engine/types.ts). In sandbox mode it trusts the sandbox's Noise root key by setting
 * Baileys' exported `WA_CERT_DETAILS.PUBLIC_KEY` (brief §0.2; never in live mode).
 */
import { WA_CERT_DETAILS, isJidGroup, jidNormalizedUser, proto, type WAMessage } from '@whiskeysockets/baileys';
import { parseMessageId, type Message } from '../db/messages.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { humanizeBeforeSend } from './send-pipeline.ts';
import { Session } from './session.ts';
import type { Engine, EngineOptions, Profile, SendTextInput } from './types.ts';

const DEFAULT_TYPING_DELAY = { min: 800, max: 2500 };

export function createEngine(opts: EngineOptions): Engine & { session(connectionId: string): Session | undefined } {
  const { store, logger } = opts;
  if (opts.waRootPublicKey) WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(opts.waRootPublicKey);
  const sessions = new Map<string, Session>();
  const typingDelayMs = opts.typingDelayMs ?? DEFAULT_TYPING_DELAY;
  const baileysLogLevel = process.env.SWITCHBOARD_BAILEYS_LOG_LEVEL ?? 'warn';

  function start(connectionId: string): void {
    const conn = store.connections.get(connectionId);
    if (!conn || conn.status === 'stopped') throw notFound('Connection not found');
    if (sessions.has(connectionId)) return;
    const session = new Session(conn, { store, logger: logger.child({ component: 'engine' }), waUrl: opts.waUrl, baileysLogLevel });
    sessions.set(connectionId, session);
    session.start();
  }

  async function stop(connectionId: string, o: { logout?: boolean } = {}): Promise<void> {
    const session = sessions.get(connectionId);
    sessions.delete(connectionId);
    if (session) await session.stop({ logout: o.logout });
    else if (o.logout) store.authState.clear(connectionId);
  }

  /** The online session of a connection, or a 409 explaining why it cannot act now. */
  function onlineSession(connectionId: string): Session {
    const session = sessions.get(connectionId);
    const status = session?.status ?? store.connections.get(connectionId)?.status ?? 'stopped';
    if (!session || status !== 'online' || !session.socket) {
      throw conflict(`Connection is not online (status: ${status})`);
    }
    return session;
  }

  /**
   * Resolves an API chatId (JID, or phone number in international format) to the JID Baileys sends to.
   * Phone numbers not yet known to the connection are checked with a usync contact query.
   */
  async function resolveChat(session: Session, chatId: string): Promise<{ jid: string; chatId: string }> {
    const input = chatId.trim();
    if (/^\+?[\d\s().-]+$/.test(input)) {
      const digits = input.replace(/\D/g, '');
      if (digits.length < 6 || digits.length > 15) throw badRequest('chatId is not a valid international phone number');
      const jid = `${digits}@s.whatsapp.net`;
      const known = store.contacts.has(session.connectionId, jid);
      if (!known) {
        const [result] = (await session.socket!.onWhatsApp(jid)) ?? [];
        if (!result?.exists) throw badRequest(`+${digits} is not on WhatsApp`);
        return { jid: jidNormalizedUser(result.jid), chatId: jidNormalizedUser(result.jid) };
      }
      return { jid, chatId: jid };
    }
    const m = /^([^@\s]+)@(s\.whatsapp\.net|c\.us|lid|g\.us)$/.exec(input);
    if (!m) throw badRequest('chatId must be a JID or a phone number in international format');
    const jid = m[2] === 'c.us' ? `${m[1]}@s.whatsapp.net` : input;
    if (isJidGroup(jid)) return { jid, chatId: jid };
    const normalized = jidNormalizedUser(jid);
    const ctx = session.modelContext();
    const pn = normalized.endsWith('@lid') ? (ctx.pnForLid(normalized) ?? normalized) : normalized;
    return { jid: normalized, chatId: pn };
  }

  /** The stored WAMessage a `replyTo` id refers to (same chat), for quoting. */
  function quotedMessage(connectionId: string, replyTo: string, chatId: string): WAMessage {
    const parsed = parseMessageId(replyTo);
    const raw = parsed ? store.messages.getRaw(connectionId, replyTo) : undefined;
    if (!parsed || !raw) throw badRequest('replyTo: message not found');
    if (parsed.chatId !== chatId) throw badRequest('replyTo: message belongs to another chat');
    return proto.WebMessageInfo.decode(raw) as WAMessage;
  }

  return {
    start,
    startAll() {
      for (const conn of store.connections.listActive()) {
        if (conn.status === 'logged_out' || conn.status === 'failed') continue;
        try {
          start(conn.id);
        } catch (err) {
          logger.error({ err, connectionId: conn.id }, 'failed to start session');
        }
      }
    },
    async restart(connectionId) {
      await stop(connectionId);
      start(connectionId);
    },
    stop,
    currentQr: (connectionId) => sessions.get(connectionId)?.qr,
    profile(connectionId): Profile | undefined {
      const session = sessions.get(connectionId);
      const me = session?.me;
      if (!session || session.status !== 'online' || !me) return undefined;
      return { id: me.jid, pushName: me.name };
    },
    async sendText(connectionId, input: SendTextInput): Promise<Message> {
      const session = onlineSession(connectionId);
      const { jid, chatId } = await resolveChat(session, input.chatId);
      const quoted = input.replyTo ? quotedMessage(connectionId, input.replyTo, chatId) : undefined;
      const sock = session.socket!;
      if (!input.skipPresence) {
        await humanizeBeforeSend(
          sock,
          { store, connectionId, chatJid: jid, chatId, textLength: input.text.length, logger },
          { typingDelayMs },
        );
      }
      const sent = await sock.sendMessage(jid, { text: input.text }, quoted ? { quoted } : {});
      if (!sent) throw conflict('Message could not be sent');
      return session.recordSent(sent);
    },
    session: (connectionId) => sessions.get(connectionId),
    async close() {
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all(all.map((s) => s.stop()));
    },
  };
}
