/** `GET /api/connections/:id/contacts` (interface-spec §4.2): people and groups, by name; `offset` counts contacts. */
import { Type } from '@sinclair/typebox';
import { ConnectionParams, ownedConnection } from '../connection-access.ts';
import type { ApiDeps } from '../deps.ts';
import { Limit, Offset } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const ContactSchema = Type.Object({
  jid: Type.String(),
  name: Type.String(),
  phoneNumber: Type.String(),
  isGroup: Type.Boolean(),
});

export const contactRoutes: ApiPlugin<ApiDeps> = async (api, { store }) => {
  api.get(
    '/connections/:id/contacts',
    {
      schema: {
        params: ConnectionParams,
        querystring: Type.Object({ limit: Limit, offset: Offset }),
        response: { 200: Type.Array(ContactSchema) },
      },
    },
    async (request) => {
      const c = ownedConnection(store, request.user, request.params.id);
      return store.contacts.list(c.id, request.query);
    },
  );
};
