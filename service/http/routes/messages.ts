/**
 * Reading messages (interface-spec §4.2): a chat's history newest first with keyset paging (`before` is the
 * opaque `nextBefore` of the previous page), and one message by id. `around=<messageId>` returns the page centred
 * on a message and `after=<nextAfter>` the newer messages that follow a page, both with `nextBefore` and
 * `nextAfter` (issue 15: jumping from a search hit into the thread).
 */
import { Type } from '@sinclair/typebox';
import { decodeCursor } from '../../db/messages.ts';
import { badRequest, notFound } from '../../errors.ts';
import { canonicalChatId } from '../../engine/chat-id.ts';
import type { ApiDeps } from '../deps.ts';
import { Limit, MessageSchema, Nullable } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const ChatIdDescription = 'A JID (@s.whatsapp.net, @c.us, @lid, @g.us) or a phone number in international format';
const ChatParams = Type.Object({ id: Type.String(), chatId: Type.String({ description: ChatIdDescription }) });
const MessageParams = Type.Object({ id: Type.String(), messageId: Type.String() });

const PageQuery = Type.Object({
  limit: Limit,
  before: Type.Optional(Type.String({ description: 'nextBefore of the previous page' })),
  after: Type.Optional(Type.String({ description: 'nextAfter of a page: the newer messages that follow it' })),
  around: Type.Optional(Type.String({ description: 'A message id: the page centred on that message' })),
});

const PageSchema = Type.Object({
  messages: Type.Array(MessageSchema),
  nextBefore: Nullable(Type.String()),
  historyStartsAt: Nullable(Type.Integer()),
  nextAfter: Type.Optional(
    Nullable(Type.String({ description: 'With `around`/`after` only: cursor of the newer messages, null at the newest' })),
  ),
});

export const messageRoutes: ApiPlugin<ApiDeps> = async (api, { store }) => {
  api.get(
    '/connections/:id/chats/:chatId/messages',
    { schema: { params: ChatParams, querystring: PageQuery, response: { 200: PageSchema } } },
    async (request) => {
      const c = request.connection;
      const { limit, before, after, around } = request.query;
      const chatId = canonicalChatId(store, c.id, request.params.chatId);
      if ([before, after, around].filter((v) => v !== undefined).length > 1) {
        throw badRequest('querystring must have at most one of before, after and around');
      }
      if (around !== undefined) {
        const at = store.messages.positionOf(c.id, chatId, around);
        if (!at) throw notFound('Message not found');
        return store.messages.pageAround(c.id, chatId, limit, at);
      }
      if (after !== undefined) {
        const from = decodeCursor(after);
        if (!from) throw badRequest('querystring/after is not a valid cursor');
        return store.messages.pageAfter(c.id, chatId, limit, from);
      }
      const cursor = before === undefined ? undefined : decodeCursor(before);
      if (before !== undefined && !cursor) throw badRequest('querystring/before is not a valid cursor');
      return store.messages.page(c.id, chatId, limit, cursor);
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
      const c = request.connection;
      const chatId = canonicalChatId(store, c.id, request.query.chatId);
      const message = store.messages.get(c.id, request.params.messageId);
      if (!message || message.chatId !== chatId) throw notFound('Message not found');
      return message;
    },
  );
};
