/**
 * Reading messages (interface-spec §4.2): a chat's history newest first with keyset paging (`before` is the
 * opaque `nextBefore` of the previous page), and one message by id. `around=<messageId>` returns the page centred
 * on a message and `after=<nextAfter>` the newer messages that follow a page, both with `nextBefore` and
 * `nextAfter` (issue 15: jumping from a search hit into the thread).
 */
import { Type } from '@sinclair/typebox';
import { decodeCursor, type ChatPage, type Message } from '../../db/messages.ts';
import { badRequest, notFound } from '../../errors.ts';
import { canonicalChatIdIn } from '../../engine/chat-id.ts';
import type { ApiDeps } from '../deps.ts';
import { Limit, MessageSchema, Nullable } from '../schemas.ts';
import { compileSerializer } from '../serializer.ts';
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

export const PageSchema = Type.Object({
  messages: Type.Array(MessageSchema),
  nextBefore: Nullable(Type.String()),
  historyStartsAt: Nullable(Type.Integer()),
  nextAfter: Type.Optional(
    Nullable(Type.String({ description: 'With `around`/`after` only: cursor of the newer messages, null at the newest' })),
  ),
});

const messageJson = compileSerializer(MessageSchema);
const frameJson = compileSerializer(PageSchema);
const EMPTY_FRAME = '{"messages":[]';

/**
 * The body of a page exactly as the response schema serialises it: the frame (cursors) by that serializer, the
 * messages as SQLite rendered them (db/message-json.ts) or, where it did not, by the Message serializer.
 */
export function pageJson(page: ChatPage<string | Message> & { nextAfter?: string | null }): string {
  const frame = frameJson({ ...page, messages: [] });
  if (!frame.startsWith(EMPTY_FRAME)) throw new Error('unexpected page frame'); // messages is the first property
  let out = '{"messages":[';
  for (let i = 0; i < page.messages.length; i++) {
    const m = page.messages[i]!;
    if (i > 0) out += ',';
    out += typeof m === 'string' ? m : messageJson(m);
  }
  return out + ']' + frame.slice(EMPTY_FRAME.length);
}

export const messageRoutes: ApiPlugin<ApiDeps> = async (api, { asyncStore }) => {
  const store = asyncStore.read;
  api.get(
    '/connections/:id/chats/:chatId/messages',
    { schema: { params: ChatParams, querystring: PageQuery, response: { 200: PageSchema } } },
    async (request, reply) => {
      const c = request.connection;
      const { limit, before, after, around } = request.query;
      const chatId = await canonicalChatIdIn(store, c.id, request.params.chatId);
      if ([before, after, around].filter((v) => v !== undefined).length > 1) {
        throw badRequest('querystring must have at most one of before, after and around');
      }
      const pages = store.messages.rendered;
      let page;
      if (around !== undefined) {
        const at = await store.messages.positionOf(c.id, chatId, around);
        if (!at) throw notFound('Message not found');
        page = await pages.pageAround(c.id, chatId, limit, at);
      } else if (after !== undefined) {
        const from = decodeCursor(after);
        if (!from) throw badRequest('querystring/after is not a valid cursor');
        page = await pages.pageAfter(c.id, chatId, limit, from);
      } else {
        const cursor = before === undefined ? undefined : decodeCursor(before);
        if (before !== undefined && !cursor) throw badRequest('querystring/before is not a valid cursor');
        page = await pages.page(c.id, chatId, limit, cursor);
      }
      // A string with a JSON content type is sent as it is (Fastify skips the serializer): already the exact body,
      // which the type provider cannot know (it types `send` by the response schema).
      return reply.type('application/json; charset=utf-8').send(pageJson(page) as never);
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
      const chatId = await canonicalChatIdIn(store, c.id, request.query.chatId);
      const message = await store.messages.get(c.id, request.params.messageId);
      if (!message || message.chatId !== chatId) throw notFound('Message not found');
      return message;
    },
  );
};
