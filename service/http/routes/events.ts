/**
 * `GET /events` (an addition to the spec): the caller's event log, in `seq` order, for catching up after a
 * disconnect without the WebSocket. `after` = last seq seen (default 0), `limit` 1–1000 (default 100),
 * `events` = comma list of types, `connectionId` = one connection. Response `{ events, nextAfter, lastSeq }`:
 * pass `nextAfter` as `after` for the next page; when `events` is shorter than `limit`, the log is read up to
 * `lastSeq`. Events older than the retention (default 7 days) are pruned; `oldestSeq` tells where it starts.
 */
import { Type } from '@sinclair/typebox';
import { badRequest } from '../../errors.ts';
import type { ApiDeps } from '../deps.ts';
import { EVENT_RECORD } from '../openapi.ts';
import { Nullable } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

/**
 * One logged event. Serialized as is; the OpenAPI document shows it as the discriminated union of the event types
 * and their payloads (`EVENT_RECORD` marks it for http/openapi.ts, events/payloads.ts has the payloads).
 */
export const EventSchema = Type.Object(
  {
    seq: Type.Integer(),
    event: Type.String(),
    connectionId: Nullable(Type.String()),
    payload: Type.Record(Type.String(), Type.Unknown()),
    timestamp: Type.String(),
  },
  { [EVENT_RECORD]: true },
);

const EventsQuery = Type.Object(
  {
    after: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Return events with a greater seq' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    events: Type.Optional(Type.String({ maxLength: 1024, description: 'Comma-separated event types to include' })),
    connectionId: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const EventsPage = Type.Object({
  events: Type.Array(EventSchema),
  nextAfter: Type.Integer({ description: 'Pass as `after` to continue' }),
  lastSeq: Type.Integer({ description: 'Seq of the newest event in the log when this page was read' }),
  oldestSeq: Nullable(Type.Integer({ description: 'Oldest seq still stored (older ones were pruned)' })),
});

/** Parses a comma list of event types (`events=` on /events and /ws). @throws 400 */
export function parseEventTypes(raw: string | undefined, field: string): string[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const types = [...new Set(raw.split(',').map((t) => t.trim()).filter(Boolean))];
  for (const t of types) {
    if (!/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/.test(t)) throw badRequest(`${field} has an invalid event type ${JSON.stringify(t)}`);
  }
  return types.length ? types : undefined;
}

export const eventRoutes: ApiPlugin<ApiDeps> = async (api, { asyncStore }) => {
  const store = asyncStore.read;
  api.get('/events', { schema: { querystring: EventsQuery, response: { 200: EventsPage } } }, async (request) => {
    const userId = request.user.id;
    const after = request.query.after ?? 0;
    const limit = request.query.limit ?? 100;
    const types = parseEventTypes(request.query.events, 'querystring/events');
    // The end of the log first, then the page: a commit (of a session thread, or on another engine's host) may fall
    // between the two reads, so the page can reach past `end`; it then ends at the log's end as that read saw it.
    const end = await store.events.lastSeq(userId);
    if (after > end) throw badRequest(`querystring/after is beyond the end of the event log (last seq ${end})`);
    const events = await store.events.afterFiltered(userId, after, limit, { types, connectionId: request.query.connectionId });
    const lastSeq = Math.max(end, events.at(-1)?.seq ?? 0);
    const nextAfter = events.length === limit ? events.at(-1)!.seq : lastSeq;
    return { events, nextAfter, lastSeq, oldestSeq: (await store.events.firstSeq(userId)) ?? null };
  });
};
