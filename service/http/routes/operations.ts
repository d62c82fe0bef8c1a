/**
 * Everyday operations (issue 14, additions to interface-spec §4.3): delete for everyone
 * (`DELETE /connections/:id/messages/:messageId?chatId=`), forward (`POST /connections/:id/forward`) and stickers
 * (`POST /connections/:id/send-sticker`), the block list (`POST /connections/:id/contacts/:jid/block|unblock`,
 * `GET /connections/:id/blocklist`). The engine's operations.ts does the work; this file is the HTTP contract.
 */
import { Type } from '@sinclair/typebox';
import { MEDIA_LIMITS } from '../../engine/outgoing.ts';
import { ConnectionParams, MessageSchema, WHATSAPP_ERRORS } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { keyOf, MESSAGE, OPERATION } from '../plugins/idempotency.ts';
import type { ApiPlugin } from '../type-provider.ts';

const MessageParams = Type.Object({ id: Type.String(), messageId: Type.String() });
const chatId = Type.String({ minLength: 1, maxLength: 256, description: 'A JID or a phone number in international format' });

const ForwardBody = Type.Object(
  {
    chatId,
    messageId: Type.String({ minLength: 1, maxLength: 512, description: 'Id of the stored message to forward' }),
    fromChatId: Type.String({ minLength: 1, maxLength: 256, description: 'The chat the message is in' }),
    skipPresence: Type.Optional(
      Type.Boolean({ description: 'Accepted like on every send; a forward shows no typing indicator or delay either way' }),
    ),
  },
  { additionalProperties: false },
);

const StickerBody = Type.Object(
  {
    chatId,
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'https:// URL the service downloads the image from' })),
    base64: Type.Optional(Type.String({ minLength: 1, description: 'The image, base64 (a data: URL works too)' })),
    replyTo: Type.Optional(Type.String({ minLength: 1, description: 'Id of the message to quote' })),
    skipPresence: Type.Optional(Type.Boolean({ description: 'true: no read receipt, typing indicator or delay' })),
  },
  { additionalProperties: false },
);

const ContactParams = Type.Object({ id: Type.String(), jid: Type.String({ description: 'A user JID or an international number' }) });
const BlockState = Type.Object({ jid: Type.String(), blocked: Type.Boolean() });

export const operationRoutes: ApiPlugin<ApiDeps> = async (api, { engine }) => {
  api.delete(
    '/connections/:id/messages/:messageId',
    {
      config: MESSAGE,
      schema: {
        description:
          'Deletes a message for everyone (a revoke): your own message, or in a group where you are admin another member’s. ' +
          'Answers the Message with `kind` `revoked` and `type` `text` (no text, no media) once the server has the revoke; a `message.revoked` event follows. ' +
          '403 for someone else’s message in a 1:1 chat, or for another member’s message in a group where you are not admin; deleting an already deleted message answers it unchanged.',
        params: MessageParams,
        querystring: Type.Object({ chatId }),
        response: { 200: MessageSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.revokeMessage(c.id, request.params.messageId, request.query.chatId, keyOf(request));
    },
  );

  api.post(
    '/connections/:id/forward',
    {
      config: MESSAGE,
      schema: {
        description:
          'Forwards a stored message to a chat; the new Message has `isForwarded: true`. Media is forwarded by reference ' +
          '(no download or upload) and the local copy, when on disk, is kept for the new message too.',
        params: ConnectionParams,
        body: ForwardBody,
        response: { 201: MessageSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request, reply) => {
      const c = request.connection;
      return reply.code(201).send(await engine.forward(c.id, request.body, keyOf(request)));
    },
  );

  for (const action of ['block', 'unblock'] as const) {
    api.post(
      `/connections/:id/contacts/:jid/${action}`,
      {
        config: OPERATION,
        schema: {
          description: `${action === 'block' ? 'Blocks' : 'Unblocks'} a user (on WhatsApp's server: a blocked user's messages no longer reach this account). Answers the user's JID and the new state.`,
          params: ContactParams,
          response: { 200: BlockState, ...WHATSAPP_ERRORS },
        },
      },
      async (request) => {
        const c = request.connection;
        return engine.setBlocked(c.id, request.params.jid, action === 'block');
      },
    );
  }

  api.get(
    '/connections/:id/blocklist',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description: 'The JIDs this account blocked, as WhatsApp’s server keeps them.',
        params: ConnectionParams,
        response: { 200: Type.Array(Type.String()), ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.blocklist(c.id);
    },
  );

  api.post(
    '/connections/:id/calls/:callId/reject',
    {
      config: OPERATION,
      schema: {
        description:
          'Rejects an incoming call that is still ringing (its id is the `callId` of the `call.received` event); a `call.ended` event with reason `rejected` follows. 404 `Call not found` once it ended.',
        params: Type.Object({ id: Type.String(), callId: Type.String({ minLength: 1, maxLength: 128 }) }),
        response: { 200: Type.Object({ callId: Type.String(), rejected: Type.Literal(true) }), ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      await engine.rejectCall(c.id, request.params.callId);
      return { callId: request.params.callId, rejected: true as const };
    },
  );

  api.post(
    '/connections/:id/send-sticker',
    {
      bodyLimit: Math.ceil((MEDIA_LIMITS.image * 4) / 3) + 64 * 1024,
      config: MESSAGE,
      schema: {
        description:
          'Sends a sticker from exactly one of `url` or `base64`: WebP is sent as is, PNG and JPEG are converted to a 512×512 WebP ' +
          '(fitted, transparent background). Answers like the other sends: 201, the stored Message with `kind` `sticker` and ' +
          '`type` `image` (`type` is always one of the spec’s seven).',
        params: ConnectionParams,
        body: StickerBody,
        response: { 201: MessageSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request, reply) => {
      const c = request.connection;
      return reply.code(201).send(await engine.sendSticker(c.id, request.body, keyOf(request)));
    },
  );
};
