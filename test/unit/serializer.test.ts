/**
 * The response serialiser's schema rewrite (service/http/serializer.ts): nullable unions become type lists and
 * literal unions enums, and a page of Messages serialises to exactly what the unrewritten schema gives.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { MessageSchema, Nullable } from '../../service/http/schemas.ts';
import { serializerSchema } from '../../service/http/serializer.ts';

const compile = (schema: unknown) => SerializerSelector()(undefined, {})({ method: 'GET', url: '/', httpStatus: '200', schema });
const Page = Type.Object({ messages: Type.Array(MessageSchema), nextBefore: Nullable(Type.String()) });

const message = (i: number) => ({
  id: `false_15550101@s.whatsapp.net_KEY${i}`,
  chatId: '15550101@s.whatsapp.net',
  timestamp: 1_700_000_000 + i,
  fromMe: i % 2 === 0,
  senderJid: '15550101@s.whatsapp.net',
  senderPushName: 'Alice "A" \u00e9',
  type: i % 3 === 0 ? 'image' : 'text',
  kind: i % 3 === 0 ? 'image' : 'poll',
  rawType: null,
  text: `line ${i}\n\u2028 <b>`,
  quotedMessageId: i % 4 === 0 ? 'false_x_Q' : null,
  media: i % 3 === 0 ? { url: 'http://127.0.0.1:7575/api/connections/c/media/m', mimetype: 'image/png', filename: null, size: 10 } : null,
  location: i === 1 ? { latitude: 1.5, longitude: -2.25, name: null, address: 'Main St', url: null, isLive: false } : null,
  contacts: null,
  poll: i % 3 === 0 ? null : { name: 'Lunch?', selectableCount: 1, options: [{ name: 'yes', votes: 1, voters: ['15550102@s.whatsapp.net'] }] },
  selection: null,
  album: null,
  albumId: null,
  ack: i % 2 === 0 ? 3 : null,
  mentions: [],
  isForwarded: false,
  editedAt: null,
  reactions: [{ senderJid: '15550102@s.whatsapp.net', emoji: '👍', timestamp: 5 }],
});

describe('serializerSchema', () => {
  it('turns nullable unions into type lists and literal unions into enums', () => {
    const out = serializerSchema(JSON.parse(JSON.stringify(MessageSchema))) as { properties: Record<string, Record<string, unknown>> };
    expect(out.properties.rawType).toEqual({ type: ['string', 'null'] });
    expect(out.properties.media).toMatchObject({ type: ['object', 'null'], required: expect.arrayContaining(['url']) });
    expect(out.properties.type).toEqual({ type: 'string', enum: ['text', 'image', 'video', 'audio', 'document', 'location', 'contact'] });
    expect(JSON.stringify(out)).not.toContain('anyOf');
  });

  it('leaves other unions alone', () => {
    const mixed = { anyOf: [{ type: 'string' }, { type: 'integer' }] };
    expect(serializerSchema(mixed)).toEqual(mixed);
    const nullableUnion = { anyOf: [{ anyOf: [{ type: 'string' }, { type: 'integer' }] }, { type: 'null' }] };
    expect(serializerSchema(nullableUnion)).toEqual(nullableUnion);
  });

  it('serialises a page of Messages exactly as the original schema does', () => {
    const page = { messages: Array.from({ length: 12 }, (_, i) => message(i)), nextBefore: null };
    const original = compile(JSON.parse(JSON.stringify(Page)))(page);
    const rewritten = compile(serializerSchema(JSON.parse(JSON.stringify(Page))))(page);
    expect(rewritten).toBe(original);
    expect(JSON.parse(rewritten)).toEqual(page);
  });
});
