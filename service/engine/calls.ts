/**
 * Incoming calls of one session (issue 14 item 8): Baileys' `call` events (rc14 lib/Socket/messages-recv.js
 * handleCall: `<call><offer call-id call-creator><video/>?</offer></call>`, later `terminate`/`timeout`/`reject`/
 * `accept` for the same call-id) become `call.received` `{ callId, from, isVideo, isGroup, timestamp }` and
 * `call.ended` `{ callId, from, reason }` events; a call is rejected with Baileys `rejectCall(callId, creator)`
 * (`<call><reject call-id call-creator count="0"/></call>`), by the API or automatically when the connection has
 * `rejectCalls` (then `rejectCallsMessage`, if any, is sent to the caller as a text).
 */
import type { WACallEvent, WASocket } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';
import { notFound, ServiceError } from '../errors.ts';

interface Offer {
  /** The caller as Baileys names it (PN or LID JID): where the rejection goes. */
  creator: string;
  /** The caller's phone-number JID when known. */
  from: string;
}

export interface CallBookDeps {
  store: Store;
  events: EventLog;
  logger: Logger;
  connectionId: string;
  userId: string;
  /** The PN JID of a caller JID (LIDs mapped when known). */
  toPn(jid: string): string;
}

/** Open call offers of one session and what happens to them. */
export class CallBook {
  readonly #offers = new Map<string, Offer>();

  constructor(private readonly d: CallBookDeps) {}

  /** Handles a batch of Baileys `call` events. */
  onCalls(sock: WASocket, calls: WACallEvent[]): void {
    const { store, connectionId, userId } = this.d;
    for (const c of calls) {
      if (c.status === 'offer') {
        if (this.#offers.has(c.id)) continue;
        const creator = c.from;
        const from = c.callerPn ? this.d.toPn(c.callerPn) : this.d.toPn(creator);
        this.#offers.set(c.id, { creator, from });
        this.d.events.append(userId, connectionId, 'call.received', {
          callId: c.id,
          from,
          isVideo: !!c.isVideo,
          isGroup: !!c.isGroup,
          timestamp: Math.floor(c.date.getTime() / 1000),
        });
        const conn = store.connections.get(connectionId);
        if (conn?.rejectCalls) {
          this.reject(sock, c.id, conn.rejectCallsMessage).catch((err: unknown) =>
            this.d.logger.warn({ err, connectionId, callId: c.id }, 'automatic call rejection failed'),
          );
        }
      } else if (c.status === 'reject' || c.status === 'accept' || c.status === 'timeout' || c.status === 'terminate') {
        this.#end(c.id, c.status === 'terminate' ? 'ended' : c.status === 'reject' ? 'rejected' : c.status === 'accept' ? 'accepted' : 'missed');
      }
    }
  }

  /**
   * Rejects an open call and, with `message`, sends it to the caller as a text.
   * @throws ServiceError 404 `Call not found` (unknown or already ended), 502 when the rejection fails.
   */
  async reject(sock: WASocket, callId: string, message?: string | null): Promise<void> {
    const offer = this.#offers.get(callId);
    if (!offer) throw notFound('Call not found');
    try {
      await sock.rejectCall(callId, offer.creator);
    } catch (err) {
      throw new ServiceError(502, `The call could not be rejected: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.#end(callId, 'rejected');
    if (message) await sock.sendMessage(offer.from, { text: message });
  }

  #end(callId: string, reason: 'ended' | 'rejected' | 'accepted' | 'missed'): void {
    const offer = this.#offers.get(callId);
    if (!offer) return;
    this.#offers.delete(callId);
    this.d.events.append(this.d.userId, this.d.connectionId, 'call.ended', { callId, from: offer.from, reason });
  }
}
