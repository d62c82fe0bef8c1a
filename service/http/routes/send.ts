/**
 * Sending (interface-spec §4.3): `POST /api/connections/:id/send` sends a text and answers 201 with the stored
 * Message (its `id` is what the edit endpoint takes). Presence and pacing are the engine's send pipeline.
 */
import { Type } from '@sinclair/typebox';
import { ConnectionParams, ownedConnection } from '../connection-access.ts';
import type { ApiDeps } from '../deps.ts';
import { MessageSchema } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const SendTextBody = Type.Object(
  {
    chatId: Type.String({ minLength: 1, description: 'A JID or a phone number in international format' }),
    text: Type.String({ minLength: 1, maxLength: 65536 }),
    replyTo: Type.Optional(Type.String({ minLength: 1, description: 'Id of the message to quote' })),
    skipPresence: Type.Optional(Type.Boolean({ description: 'true: no read receipt, typing indicator or delay' })),
  },
  { additionalProperties: false },
);

export const sendRoutes: ApiPlugin<ApiDeps> = async (api, { store, engine }) => {
  api.post(
    '/connections/:id/send',
    { schema: { params: ConnectionParams, body: SendTextBody, response: { 201: MessageSchema } } },
    async (request, reply) => {
      const c = ownedConnection(store, request.user, request.params.id);
      const message = await engine.sendText(c.id, request.body);
      return reply.code(201).send(message);
    },
  );
};
