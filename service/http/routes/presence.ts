/**
 * Presence (interface-spec §4.4): read receipts for a chat's unread incoming messages (its unread counter drops
 * to 0) and the typing indicator. Body `{ chatId }` for all three; answers 200 `{ success: true }`.
 */
import { Type } from '@sinclair/typebox';
import { ConnectionParams, SuccessSchema, WHATSAPP_ERRORS } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { OPERATION } from '../plugins/idempotency.ts';
import type { ApiPlugin } from '../type-provider.ts';

const ChatBody = Type.Object(
  { chatId: Type.String({ minLength: 1, description: 'A JID or a phone number in international format' }) },
  { additionalProperties: false },
);

export const presenceRoutes: ApiPlugin<ApiDeps> = async (api, { engine }) => {
  const schema = { params: ConnectionParams, body: ChatBody, response: { 200: SuccessSchema, ...WHATSAPP_ERRORS } };

  api.post('/connections/:id/mark-read', { config: OPERATION, schema }, async (request) => {
    const c = request.connection;
    await engine.markRead(c.id, request.body.chatId);
    return { success: true as const };
  });

  api.post('/connections/:id/typing', { config: OPERATION, schema }, async (request) => {
    const c = request.connection;
    await engine.setTyping(c.id, request.body.chatId, true);
    return { success: true as const };
  });

  api.post('/connections/:id/typing/stop', { config: OPERATION, schema }, async (request) => {
    const c = request.connection;
    await engine.setTyping(c.id, request.body.chatId, false);
    return { success: true as const };
  });
};
