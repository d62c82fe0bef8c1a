/**
 * Server-ack tracking of the messages a session sends (part of `Session`, session.ts).
 *
 * The server acknowledges each message stanza it has taken with `<ack class="message" id=keyId>`; an `error`
 * attribute means it refused it (brief §B6). rc14 turns only the error into a status update (there is no SERVER_ACK
 * from acks), so the session listens for these nodes itself (`CB:ack,class:message` on the socket's `ws`), records
 * ack 2 (SERVER_ACK) with a `message.ack` event, and settles the send that waits for it.
 */
import { proto, type BinaryNode } from '@whiskeysockets/baileys';
import type { Logger } from 'pino';
import type { Store } from '../db/store.ts';
import type { EventLog } from '../events/log.ts';

/** How a sent message's server acknowledgement ended (see `ServerAcks.expect`). */
export type ServerAckOutcome = 'accepted' | 'closed' | 'timeout' | { error: string };

/** A wait for one message's server ack (`ServerAcks.expect`). */
export interface ServerAckWait {
  done: Promise<ServerAckOutcome>;
  /** Stops waiting (the send failed): settles `done` with 'closed'. */
  cancel(): void;
  /** The message has left: the timeout starts again from now. */
  sent(): void;
}

export class ServerAcks {
  /** Waiters by message key id. */
  readonly #waiters = new Map<string, (outcome: ServerAckOutcome) => void>();

  constructor(
    private readonly d: { store: Store; events: EventLog; connectionId: string; userId: string; log: Logger },
  ) {}

  /**
   * Starts waiting for the server's `<ack class="message" id=keyId>`; call it before the message is sent. Settles with
   * 'accepted', `{ error }`, 'closed' (the socket closed first) or 'timeout' (after `timeoutMs`); `cancel()` stops
   * waiting (send failed). `sent()` restarts the timeout once the message has left: Baileys' preparation of a first
   * send to a big group (device lists, prekeys, one `pkmsg` per member device) must not eat into the time the server
   * has to answer.
   */
  expect(keyId: string, timeoutMs: number): ServerAckWait {
    let settle!: (outcome: ServerAckOutcome) => void;
    let timer: NodeJS.Timeout | undefined;
    const done = new Promise<ServerAckOutcome>((resolve) => {
      timer = setTimeout(() => settle('timeout'), timeoutMs);
      settle = (outcome) => {
        clearTimeout(timer);
        if (this.#waiters.get(keyId) === settle) this.#waiters.delete(keyId);
        resolve(outcome);
      };
    });
    this.#waiters.set(keyId, settle);
    const sent = () => {
      if (this.#waiters.get(keyId) !== settle) return; // settled already
      clearTimeout(timer);
      timer = setTimeout(() => settle('timeout'), timeoutMs);
    };
    return { done, cancel: () => settle('closed'), sent };
  }

  /** Settles every wait with `outcome` (the socket is gone: 'closed'). */
  settleAll(outcome: ServerAckOutcome): void {
    for (const settle of [...this.#waiters.values()]) settle(outcome);
  }

  /**
   * Handles a `<ack class="message">` node from the socket: for a message someone waits for, records the acceptance
   * (before rc14 handles a receipt that may follow in the same chunk, so acks stay in order) and settles the wait.
   */
  onAckNode(node: BinaryNode): void {
    const keyId = node.attrs.id;
    const waiter = keyId ? this.#waiters.get(keyId) : undefined;
    if (!keyId || !waiter) return;
    if (!node.attrs.error) this.#record(keyId);
    waiter(node.attrs.error ? { error: node.attrs.error } : 'accepted');
  }

  /**
   * Records the server's acceptance of the message with key id `keyId` this service sent: ack 2 (SERVER_ACK) and a
   * `message.ack` event, unless a receipt already moved it further. Reactions and edits have no stored message.
   */
  #record(keyId: string): void {
    const { store, connectionId, userId, log } = this.d;
    try {
      const message = store.messages.findByKeyId(connectionId, keyId);
      if (!message?.fromMe) return;
      store.tx(() => {
        if (store.messages.setAck(connectionId, message.id, proto.WebMessageInfo.Status.SERVER_ACK)) {
          this.d.events.append(userId, connectionId, 'message.ack', {
            id: message.id,
            chatId: message.chatId,
            ack: proto.WebMessageInfo.Status.SERVER_ACK,
          });
        }
      });
    } catch (err) {
      // Called from the socket's frame handler: never let it throw there (a full disk is handled by the lifecycle's
      // commit-failure handling).
      log.warn({ err, keyId }, 'the server acknowledgement could not be recorded');
    }
  }
}
