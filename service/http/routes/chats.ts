/** `GET /api/connections/:id/chats` (interface-spec §4.2): chats by most recent message; `offset` counts chats. */
import { Type } from '@sinclair/typebox';
import { ConnectionParams, ownedConnection } from '../connection-access.ts';
import type { ApiDeps } from '../deps.ts';
import { Limit, Nullable, Offset } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const ChatSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  isGroup: Type.Boolean(),
  lastMessage: Nullable(Type.Object({ body: Type.String(), timestamp: Type.Integer(), fromMe: Type.Boolean() })),
  unread: Type.Integer(),
});

const ChatsQuery = Type.Object({
  limit: Limit,
  offset: Offset,
  unread_only: Type.Boolean({ default: false, description: 'true: only chats with unread messages' }),
  include_status: Type.Boolean({ default: false, description: 'true: also list status posts (status@broadcast)' }),
});

export const chatRoutes: ApiPlugin<ApiDeps> = async (api, { store }) => {
  api.get(
    '/connections/:id/chats',
    { schema: { params: ConnectionParams, querystring: ChatsQuery, response: { 200: Type.Array(ChatSchema) } } },
    async (request) => {
      const c = ownedConnection(store, request.user, request.params.id);
      const { limit, offset, unread_only, include_status } = request.query;
      return store.chats.list(c.id, { limit, offset, unreadOnly: unread_only, includeStatus: include_status });
    },
  );
};
