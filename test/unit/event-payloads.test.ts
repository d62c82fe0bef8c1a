/**
 * Event payload schemas (service/events/payloads.ts; issues 12 and 13: documented in the OpenAPI document): every
 * event type the service appends to the event log has one, no schema names a type nobody emits, the webhook
 * subscription list is the same set, and the message payloads the real builder makes from the cited WAMessage
 * corpus (every kind and addressing form) validate against the `message` schema, while a payload with an
 * undocumented field or an unknown kind does not.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mediaUrl } from '../../service/db/media-url.ts';
import { eventPayloadOf } from '../../service/engine/event-payloads.ts';
import { toStoredMessage, type ModelContext } from '../../service/engine/message-model.ts';
import { EVENT_PAYLOAD_SCHEMAS } from '../../service/events/payloads.ts';
import { WEBHOOK_EVENT_TYPES } from '../../service/http/routes/webhooks.ts';
import { TEST_EVENT } from '../../service/webhooks/outbox.ts';
import { eventSchemaErrors } from '../helpers/event-schemas.ts';
import { loadWAMessageFixtures, toWAMessage } from '../helpers/wamessage-fixtures.ts';

const serviceDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../service');

/** Every `.ts` file under service/ except the sandbox (a separate program with no event log). */
function serviceSources(dir = serviceDir): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'sandbox' ? [] : serviceSources(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The event types passed to `events.append(userId, connectionId, <type>, …)` in the service's code. */
function appendedTypes(): { types: Set<string>; unresolved: string[] } {
  const types = new Set<string>();
  const unresolved: string[] = [];
  for (const file of serviceSources()) {
    const src = fs.readFileSync(file, 'utf8');
    for (const m of src.matchAll(/\b(?:#events|events)\.append\(([^{]*)/g)) {
      const typeArg = m[1]!.split(',')[2]?.trim() ?? '';
      const literals = [...typeArg.matchAll(/'([^']+)'/g)].map((l) => l[1]!);
      if (literals.length) literals.forEach((t) => types.add(t));
      else if (typeArg === 'TEST_EVENT') types.add(TEST_EVENT);
      else if (!file.endsWith(path.join('events', 'log.ts'))) unresolved.push(`${path.relative(serviceDir, file)}: ${m[0].slice(0, 80)}`);
    }
  }
  return { types, unresolved };
}

const ctx: ModelContext = {
  mediaUrl: (file) => mediaUrl('/api', 'c1', file),
  ownJid: '15550100@s.whatsapp.net',
  ownLid: '209999999999999@lid',
  pnForLid: (lid) => (lid === '201234567890123@lid' ? '15550101@s.whatsapp.net' : undefined),
};

describe('event payload schemas', () => {
  it('cover every event type the service appends, and only those', () => {
    const { types, unresolved } = appendedTypes();
    expect(unresolved).toEqual([]);
    for (const t of ['message', 'message.ack', 'message.revoked', 'poll.vote', 'group.participants', 'call.ended', 'session.status']) {
      expect(types, `the scan finds ${t}`).toContain(t);
    }
    expect([...types].sort()).toEqual(Object.keys(EVENT_PAYLOAD_SCHEMAS).sort());
  });

  it('are the event types webhooks subscribe to', () => {
    expect([...WEBHOOK_EVENT_TYPES].sort()).toEqual(Object.keys(EVENT_PAYLOAD_SCHEMAS).sort());
  });

  it('match the message payloads built from every fixture of the WAMessage corpus (media, polls, locations, forwards…)', () => {
    const payloads = loadWAMessageFixtures()
      .map((f) => toStoredMessage(toWAMessage(f), ctx))
      .filter((m) => m !== undefined)
      .flatMap((m) => [
        { event: m.fromMe ? 'message.sent' : 'message', payload: eventPayloadOf(m, ctx.ownJid) },
        { event: 'message.waiting', payload: eventPayloadOf({ ...m, kind: 'undecryptable', type: 'text', text: '', media: null }, ctx.ownJid) },
        { event: 'message', payload: eventPayloadOf({ ...m, isForwarded: true }, null) },
      ]);
    expect(payloads.length).toBeGreaterThanOrEqual(100);
    const fields = new Set(payloads.flatMap((p) => Object.keys(p.payload)));
    for (const f of ['media', 'location', 'contacts', 'poll', 'selection', 'album', 'albumId', 'rawType', 'isForwarded']) expect(fields, f).toContain(f);
    expect(eventSchemaErrors(payloads)).toEqual([]);
  });

  it('refuse an undocumented field, a wrong kind, a missing field and an unknown event type', () => {
    const m = toStoredMessage(toWAMessage(loadWAMessageFixtures().find((f) => f.kind === 'text')!), ctx)!;
    const ok = eventPayloadOf(m, ctx.ownJid);
    expect(eventSchemaErrors([{ event: 'message', payload: ok }])).toEqual([]);
    const bad = [
      { event: 'message', payload: { ...ok, surprise: 1 } },
      { event: 'message', payload: { ...ok, kind: 'pollUpdate' } },
      { event: 'message.ack', payload: { id: ok.id, chatId: ok.chatId } },
      { event: 'group.participants', payload: { groupId: 'g@g.us', action: 'modify', participants: [], by: null } },
      { event: 'message.deleted', payload: {} },
    ];
    expect(eventSchemaErrors(bad)).toHaveLength(bad.length);
  });
});
