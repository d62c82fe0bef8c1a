/** `GET /api/connections/:id/chats` (interface-spec §4.2): chats by most recent message; `offset` counts chats. */
import { Type } from '@sinclair/typebox';
import { MESSAGE_KINDS } from '../../db/messages.ts';
import { ConnectionParams, Limit, Nullable, Offset } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import type { ApiPlugin } from '../type-provider.ts';

export const ChatSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  isGroup: Type.Boolean(),
  lastMessage: Type.Object(
    {
      body: Type.String({ description: 'Its current text: an edit replaces it; "" once deleted for everyone' }),
      timestamp: Type.Integer(),
      fromMe: Type.Boolean(),
      id: Nullable(Type.String({ description: 'Addition: the message id; null when no message of the chat is stored' })),
      kind: Nullable(
        Type.Union(
          MESSAGE_KINDS.map((t) => Type.Literal(t)),
          { description: 'Addition: the message kind (`revoked` once deleted for everyone); null when none is stored' },
        ),
      ),
    },
    {
      description:
        'The newest stored message, following its edits and revokes; with none stored: body "", the last activity the ' +
        'phone reported (else 0), fromMe false, id and kind null',
    },
  ),
  unread: Type.Integer(),
});

const ChatsQuery = Type.Object({
  limit: Limit,
  offset: Offset,
  unread_only: Type.Boolean({ default: false, description: 'true: only chats with unread messages' }),
  q: Type.Optional(
    Type.String({ maxLength: 100, description: 'Only chats whose name, contact name or number contains this (case-insensitive)' }),
  ),
  include_status: Type.Boolean({ default: false, description: 'true: also list status posts (status@broadcast)' }),
});

export const chatRoutes: ApiPlugin<ApiDeps> = async (api, { asyncStore }) => {
  api.get(
    '/connections/:id/chats',
    { schema: { params: ConnectionParams, querystring: ChatsQuery, response: { 200: Type.Array(ChatSchema) } } },
    async (request, reply) => {
      const c = request.connection;
      const { limit, offset, unread_only, include_status, q } = request.query;
      const json = await asyncStore.read.chats.listJson(c.id, { limit, offset, unreadOnly: unread_only, includeStatus: include_status, q });
      // Rendered by SQLite as the response schema would serialise it (db/chats.ts): sent as it is.
      return reply.type('application/json; charset=utf-8').send(json as never);
    },
  );
};
