/**
 * Reading messages (interface-spec §4.2): a chat's history newest first with keyset paging (`before` is the
 * opaque `nextBefore` of the previous page), and one message by id.
 */
import { Type } from '@sinclair/typebox';
import { decodeCursor } from '../../db/messages.ts';
import { badRequest, notFound } from '../../errors.ts';
import { canonicalChatId } from '../../engine/chat-id.ts';
import { ownedConnection } from '../connection-access.ts';
import type { ApiDeps } from '../deps.ts';
import { Limit, MessageSchema, Nullable } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const ChatIdDescription = 'A JID (@s.whatsapp.net, @c.us, @lid, @g.us) or a phone number in international format';
const ChatParams = Type.Object({ id: Type.String(), chatId: Type.String({ description: ChatIdDescription }) });
const MessageParams = Type.Object({ id: Type.String(), messageId: Type.String() });

const PageQuery = Type.Object({
  limit: Limit,
  before: Type.Optional(Type.String({ description: 'nextBefore of the previous page' })),
});

const PageSchema = Type.Object({
  messages: Type.Array(MessageSchema),
  nextBefore: Nullable(Type.String()),
  historyStartsAt: Nullable(Type.Integer()),
});

export const messageRoutes: ApiPlugin<ApiDeps> = async (api, { store }) => {
  api.get(
    '/connections/:id/chats/:chatId/messages',
    { schema: { params: ChatParams, querystring: PageQuery, response: { 200: PageSchema } } },
    async (request) => {
      const c = ownedConnection(store, request.user, request.params.id);
      const { limit, before } = request.query;
      const cursor = before === undefined ? undefined : decodeCursor(before);
      if (before !== undefined && !cursor) throw badRequest('querystring/before is not a valid cursor');
      return store.messages.page(c.id, canonicalChatId(store, c.id, request.params.chatId), limit, cursor);
    },
  );

  api.get(
    '/connections/:id/messages/:messageId',
    {
      schema: {
        params: MessageParams,
        querystring: Type.Object({ chatId: Type.String({ description: ChatIdDescription }) }),
        response: { 200: MessageSchema },
      },
    },
    async (request) => {
      const c = ownedConnection(store, request.user, request.params.id);
      const chatId = canonicalChatId(store, c.id, request.query.chatId);
      const message = store.messages.get(c.id, request.params.messageId);
      if (!message || message.chatId !== chatId) throw notFound('Message not found');
      return message;
    },
  );
};
