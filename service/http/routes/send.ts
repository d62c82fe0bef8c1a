/**
 * Sending (interface-spec §4.3): text, image, document, video, audio, location, contact and poll messages,
 * reactions and edits. Every send answers 201 with the stored Message (its `id` is what the edit and react endpoints take).
 * Media comes as exactly one of `url` (https, fetched by the service) or `base64`; limits and type checks are the
 * engine's (engine/outgoing.ts). Presence and pacing are the engine's send pipeline. Every route here takes an
 * `Idempotency-Key` (plugins/idempotency.ts), which the engine's relay ties to the message it records.
 */
import { Type, type TProperties } from '@sinclair/typebox';
import { badRequest } from '../../errors.ts';
import { MEDIA_LIMITS } from '../../engine/outgoing.ts';
import type { MediaKind } from '../../engine/types.ts';
import { ConnectionParams, MessageSchema, WHATSAPP_ERRORS } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { keyOf, MESSAGE } from '../plugins/idempotency.ts';
import type { ApiPlugin } from '../type-provider.ts';

const common = {
  chatId: Type.String({ minLength: 1, description: 'A JID or a phone number in international format' }),
  replyTo: Type.Optional(Type.String({ minLength: 1, description: 'Id of the message to quote' })),
  skipPresence: Type.Optional(Type.Boolean({ description: 'true: no read receipt, typing indicator or delay' })),
} satisfies TProperties;

const strict = <T extends TProperties>(props: T) => Type.Object(props, { additionalProperties: false });

/** @-mentions of a text or caption (WhatsApp shows them as links to the members). */
const mentions = Type.Optional(
  Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    maxItems: 256,
    description: 'Who the text or caption @-mentions: international numbers or user JIDs (the text names them as @<digits>)',
  }),
);

const SendTextBody = strict({ ...common, mentions, text: Type.String({ minLength: 1, maxLength: 65536 }) });

const mediaFields = {
  url: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'https:// URL the service downloads the file from' })),
  base64: Type.Optional(Type.String({ minLength: 1, description: 'The file, base64 (a data: URL works too)' })),
  mimetype: Type.Optional(Type.String({ minLength: 3, maxLength: 255, description: 'Detected from the bytes when absent' })),
  filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  caption: Type.Optional(Type.String({ maxLength: 4096 })),
} satisfies TProperties;

const MediaBody = strict({ ...common, ...mediaFields, mentions });
const AudioBody = strict({
  ...common,
  ...mediaFields,
  ptt: Type.Optional(Type.Boolean({ description: 'true: send as a voice note (push-to-talk)' })),
});
const LocationBody = strict({
  ...common,
  latitude: Type.Number({ minimum: -90, maximum: 90 }),
  longitude: Type.Number({ minimum: -180, maximum: 180 }),
  name: Type.Optional(Type.String({ maxLength: 1000 })),
  address: Type.Optional(Type.String({ maxLength: 1000 })),
});
const ContactBody = strict({
  ...common,
  name: Type.String({ minLength: 1, maxLength: 256 }),
  phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'International format, e.g. +15550101' }),
});
const PollBody = strict({
  ...common,
  name: Type.String({ minLength: 1, maxLength: 255, description: 'The question' }),
  options: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 2, maxItems: 12, description: '2 to 12 distinct options' }),
  selectableCount: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 12, default: 1, description: 'How many options a voter may pick (1 = single choice)' }),
  ),
});
const ReactBody = strict({
  chatId: common.chatId,
  skipPresence: Type.Optional(
    Type.Boolean({ description: 'Accepted like on every send; a reaction shows no typing indicator or delay either way' }),
  ),
  messageId: Type.String({ minLength: 1 }),
  emoji: Type.String({ maxLength: 32, description: 'One emoji; "" removes your reaction' }),
});
const EditBody = strict({ chatId: common.chatId, text: Type.String({ minLength: 1, maxLength: 65536 }) });
const EditParams = Type.Object({ id: Type.String(), messageId: Type.String() });

/** Body limit of a media route: the file as base64 plus room for the other fields. */
const bodyLimitFor = (kind: MediaKind) => Math.ceil((MEDIA_LIMITS[kind] * 4) / 3) + 64 * 1024;

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

export const sendRoutes: ApiPlugin<ApiDeps> = async (api, { engine }) => {
  const created = {
    params: ConnectionParams,
    response: { 201: MessageSchema, ...WHATSAPP_ERRORS },
    description:
      "Answers once WhatsApp's server acknowledged the message (ack ≥ 2): a 2xx means the server has it. Without the " +
      'acknowledgement within 10 s (the connection dropped) the answer is 201 with ack 1 (pending); a refusal is a 502; a ' +
      'group WhatsApp does not know is a 404 `Chat not found`.',
  };

  api.post('/connections/:id/send', { config: MESSAGE, schema: { ...created, body: SendTextBody } }, async (request, reply) => {
    const c = request.connection;
    return reply.code(201).send(await engine.send(c.id, { ...request.body, type: 'text' }, keyOf(request)));
  });

  for (const kind of ['image', 'video', 'document'] as const) {
    api.post(
      `/connections/:id/send-${kind}`,
      { bodyLimit: bodyLimitFor(kind), config: MESSAGE, schema: { ...created, body: MediaBody } },
      async (request, reply) => {
        const c = request.connection;
        return reply.code(201).send(await engine.send(c.id, { ...request.body, type: kind }, keyOf(request)));
      },
    );
  }

  api.post(
    '/connections/:id/send-audio',
    { bodyLimit: bodyLimitFor('audio'), config: MESSAGE, schema: { ...created, body: AudioBody } },
    async (request, reply) => {
      const c = request.connection;
      return reply.code(201).send(await engine.send(c.id, { ...request.body, type: 'audio' }, keyOf(request)));
    },
  );

  api.post('/connections/:id/send-location', { config: MESSAGE, schema: { ...created, body: LocationBody } }, async (request, reply) => {
    const c = request.connection;
    return reply.code(201).send(await engine.send(c.id, { ...request.body, type: 'location' }, keyOf(request)));
  });

  api.post('/connections/:id/send-contact', { config: MESSAGE, schema: { ...created, body: ContactBody } }, async (request, reply) => {
    const c = request.connection;
    return reply.code(201).send(await engine.send(c.id, { ...request.body, type: 'contact' }, keyOf(request)));
  });

  api.post('/connections/:id/send-poll', { config: MESSAGE, schema: { ...created, body: PollBody } }, async (request, reply) => {
    const c = request.connection;
    return reply.code(201).send(await engine.send(c.id, { ...request.body, type: 'poll' }, keyOf(request)));
  });

  api.post('/connections/:id/react', { config: MESSAGE, schema: { ...created, body: ReactBody } }, async (request, reply) => {
    const c = request.connection;
    const { emoji } = request.body;
    if (emoji !== '' && ([...segmenter.segment(emoji)].length !== 1 || !/\p{Extended_Pictographic}|\p{Regional_Indicator}/u.test(emoji))) {
      throw badRequest('body/emoji must be a single emoji, or "" to remove your reaction');
    }
    const { chatId, messageId } = request.body;
    return reply.code(201).send(await engine.react(c.id, { chatId, messageId, emoji }, keyOf(request)));
  });

  api.put(
    '/connections/:id/messages/:messageId',
    { config: MESSAGE, schema: { params: EditParams, body: EditBody, response: { 200: MessageSchema, ...WHATSAPP_ERRORS } } },
    async (request) => {
      const c = request.connection;
      return engine.editMessage(c.id, request.params.messageId, request.body, keyOf(request));
    },
  );
};
