/**
 * Checks events against their documented payload schemas (service/events/payloads.ts, the same schemas the OpenAPI
 * document carries): `eventSchemaErrors` lists, for each event that does not match, its type, seq and TypeBox's
 * first errors; an undocumented type is an error too.
 */
import { Value } from '@sinclair/typebox/value';
import { EVENT_PAYLOAD_SCHEMAS, type EventType } from '../../service/events/payloads.ts';

/** An event as the stream, `GET /events` or a webhook carries it. */
export interface EventLike {
  event: string;
  payload: unknown;
  seq?: number;
}

const isEventType = (t: string): t is EventType => Object.hasOwn(EVENT_PAYLOAD_SCHEMAS, t);

/** What is wrong with `events` against their payload schemas, one line per bad event ([] when all match). */
export function eventSchemaErrors(events: readonly EventLike[]): string[] {
  const errors: string[] = [];
  for (const e of events) {
    if (!isEventType(e.event)) {
      errors.push(`${e.event} (seq ${e.seq}): no payload schema for this event type`);
      continue;
    }
    const schema = EVENT_PAYLOAD_SCHEMAS[e.event];
    if (Value.Check(schema, e.payload)) continue;
    const first = [...Value.Errors(schema, e.payload)].slice(0, 3).map((x) => `${x.path || '/'} ${x.message}`);
    errors.push(`${e.event} (seq ${e.seq}): ${first.join('; ')} in ${JSON.stringify(e.payload)}`);
  }
  return errors;
}

/** Every event of the caller's log, read through `GET /events` a page of 1,000 at a time (`get` is an API GET). */
export async function loggedEvents(get: (route: string) => Promise<{ status: number; body: unknown }>): Promise<EventLike[]> {
  const all: EventLike[] = [];
  for (let after = 0; ; ) {
    const res = await get(`/events?after=${after}&limit=1000`);
    if (res.status !== 200) throw new Error(`GET /events answered ${res.status}`);
    const page = res.body as { events: EventLike[]; nextAfter: number };
    all.push(...page.events);
    if (page.events.length < 1000) return all;
    after = page.nextAfter;
  }
}
