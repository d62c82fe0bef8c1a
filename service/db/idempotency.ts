/**
 * Table `idempotency_keys`: the `Idempotency-Key` of send and operation requests (docs/api.md "Idempotent
 * requests"), one row per user, connection and key, kept 24 h (`IDEMPOTENCY_TTL_MS`, pruned by the event retention).
 *
 * A row is reserved (`pending`) before the request acts, durably, so a duplicate finds it; the engine sets
 * `message_id` in the same transaction that records the request's message, before its frames can leave
 * (engine.ts `relay`), so "the message may have left" and "the row names it" are one fact on disk; the first
 * answer is stored when it is known (`done`).
 */
import type { Db } from './database.ts';

/** How long a key is remembered after its first use, in ms (24 h, as Stripe's). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** Which key a request carries: the key as sent, scoped to its user and connection. Structured-cloneable. */
export interface IdempotencyRef {
  userId: string;
  connectionId: string;
  key: string;
}

export interface IdempotencyRecord {
  /** SHA-256 hex of the request (route, parameters, body) first made with the key. */
  fingerprint: string;
  /** The route of that request, e.g. `POST /api/connections/:id/send`. */
  route: string;
  state: 'pending' | 'done';
  /** The Message the request answers with, once the engine recorded it for sending (it may have left since). */
  messageId: string | null;
  /** The first answer, once `done`. */
  answer: { statusCode: number; contentType: string | null; body: string } | null;
  /** ISO 8601 time of the first use. */
  createdAt: string;
}

/** An `idempotency_keys` row as either engine returns it (the columns of IdempotencyRecord). */
export interface IdempotencyRawRow {
  fingerprint: string;
  route: string;
  state: 'pending' | 'done';
  message_id: string | null;
  status_code: number | null;
  content_type: string | null;
  response: string | null;
  created_at: string;
}

/** The IdempotencyRecord of a raw `idempotency_keys` row (`answer` only once `done`). */
export function idempotencyOfRow(r: IdempotencyRawRow): IdempotencyRecord {
  return {
    fingerprint: r.fingerprint,
    route: r.route,
    state: r.state,
    messageId: r.message_id,
    answer:
      r.state === 'done' && r.status_code !== null
        ? { statusCode: r.status_code, contentType: r.content_type, body: r.response ?? '' }
        : null,
    createdAt: r.created_at,
  };
}

/** @param locked see deliveriesRepo: the repository's own writes outside `tx` hold the threads' write lock. */
export function idempotencyRepo(db: Db, locked: <T>(fn: () => T) => T = (fn) => fn()) {
  const q = {
    get: db.prepare(
      `SELECT fingerprint, route, state, message_id, status_code, content_type, response, created_at
       FROM idempotency_keys WHERE user_id = ? AND connection_id = ? AND key = ?`,
    ),
    reserve: db.prepare(
      `INSERT INTO idempotency_keys (user_id, connection_id, key, fingerprint, route, state, created_at)
       VALUES (@userId, @connectionId, @key, @fingerprint, @route, 'pending', @createdAt)
       ON CONFLICT (user_id, connection_id, key) DO UPDATE SET
         fingerprint = excluded.fingerprint, route = excluded.route, state = 'pending', message_id = NULL,
         status_code = NULL, content_type = NULL, response = NULL, created_at = excluded.created_at`,
    ),
    markRecorded: db.prepare(
      `UPDATE idempotency_keys SET message_id = @messageId
       WHERE user_id = @userId AND connection_id = @connectionId AND key = @key AND state = 'pending'`,
    ),
    complete: db.prepare(
      `UPDATE idempotency_keys SET state = 'done', status_code = @statusCode, content_type = @contentType, response = @body
       WHERE user_id = @userId AND connection_id = @connectionId AND key = @key`,
    ),
    release: db.prepare(`DELETE FROM idempotency_keys WHERE user_id = ? AND connection_id = ? AND key = ?`),
    prune: db.prepare(`DELETE FROM idempotency_keys WHERE created_at < ?`),
  };
  return {
    /** The row of a key, whatever its age (callers compare `createdAt` with the TTL). */
    get(ref: IdempotencyRef): IdempotencyRecord | undefined {
      const r = q.get.get(ref.userId, ref.connectionId, ref.key) as IdempotencyRawRow | undefined;
      return r && idempotencyOfRow(r);
    },
    /** Reserves a key for a request (`pending`), replacing an expired row of the same key. */
    reserve(ref: IdempotencyRef, request: { fingerprint: string; route: string; createdAt: string }): void {
      locked(() => q.reserve.run({ ...ref, ...request }));
    },
    /**
     * Names the Message a pending request answers with: call in the transaction that records its message for
     * sending (before any frame of it can leave). A key that is not pending (none, or done) is left alone.
     */
    markRecorded(ref: IdempotencyRef, messageId: string): void {
      locked(() => q.markRecorded.run({ ...ref, messageId }));
    },
    /** Stores the first answer of a request (`done`): later requests with the key get exactly it. */
    complete(ref: IdempotencyRef, answer: { statusCode: number; contentType: string | null; body: string }): void {
      locked(() => q.complete.run({ ...ref, ...answer }));
    },
    /** Forgets a key (the request did nothing, so the key may be used again). */
    release(ref: IdempotencyRef): void {
      locked(() => q.release.run(ref.userId, ref.connectionId, ref.key));
    },
    /** Deletes keys first used before `beforeIso`; returns how many. */
    prune(beforeIso: string): number {
      return locked(() => q.prune.run(beforeIso).changes);
    },
  };
}
