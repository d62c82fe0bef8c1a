/** PostgreSQL twin of service/db/idempotency.ts (same methods, same results, Promises). */
import { idempotencyOfRow, type IdempotencyRawRow, type idempotencyRepo } from '../../idempotency.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

export function pgIdempotencyRepo({ sql }: PgScope): Async<ReturnType<typeof idempotencyRepo>> {
  return {
    async get(ref) {
      const [r] = await sql<IdempotencyRawRow[]>`SELECT fingerprint, route, state, message_id, status_code, content_type, response, created_at
        FROM idempotency_keys WHERE user_id = ${ref.userId} AND connection_id = ${ref.connectionId} AND key = ${ref.key}`;
      return r && idempotencyOfRow(r);
    },
    async reserve(ref, request) {
      await sql`INSERT INTO idempotency_keys (user_id, connection_id, key, fingerprint, route, state, created_at)
        VALUES (${ref.userId}, ${ref.connectionId}, ${ref.key}, ${request.fingerprint}, ${request.route}, 'pending', ${request.createdAt})
        ON CONFLICT (user_id, connection_id, key) DO UPDATE SET
          fingerprint = excluded.fingerprint, route = excluded.route, state = 'pending', message_id = NULL,
          status_code = NULL, content_type = NULL, response = NULL, created_at = excluded.created_at`;
    },
    async markRecorded(ref, messageId) {
      await sql`UPDATE idempotency_keys SET message_id = ${messageId}
        WHERE user_id = ${ref.userId} AND connection_id = ${ref.connectionId} AND key = ${ref.key} AND state = 'pending'`;
    },
    async complete(ref, answer) {
      await sql`UPDATE idempotency_keys SET state = 'done', status_code = ${answer.statusCode}, content_type = ${answer.contentType},
        response = ${answer.body} WHERE user_id = ${ref.userId} AND connection_id = ${ref.connectionId} AND key = ${ref.key}`;
    },
    async release(ref) {
      await sql`DELETE FROM idempotency_keys WHERE user_id = ${ref.userId} AND connection_id = ${ref.connectionId} AND key = ${ref.key}`;
    },
    async prune(beforeIso) {
      return (await sql`DELETE FROM idempotency_keys WHERE created_at < ${beforeIso}`).count;
    },
  };
}
