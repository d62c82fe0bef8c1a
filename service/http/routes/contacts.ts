/**
 * `GET /api/connections/:id/contacts` (interface-spec §4.2): people and groups, by name; `offset` counts contacts.
 * `POST /api/connections/:id/contacts/check` (addition): whether numbers are on WhatsApp, with JID and LID.
 */
import { Type } from '@sinclair/typebox';
import { ConnectionParams, Limit, Nullable, Offset, WHATSAPP_ERRORS } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { MAX_NUMBERS_PER_CHECK } from '../../engine/number-check.ts';
import type { ApiPlugin } from '../type-provider.ts';

const ContactSchema = Type.Object({
  jid: Type.String(),
  name: Type.String(),
  phoneNumber: Type.String(),
  isGroup: Type.Boolean(),
});

const NumberCheckSchema = Type.Object({
  phoneNumber: Type.String({ description: 'The number in international format, e.g. +15550101' }),
  exists: Type.Boolean(),
  jid: Nullable(Type.String({ description: 'The account’s phone-number JID, null when not on WhatsApp' })),
  lid: Nullable(Type.String({ description: 'The account’s LID when WhatsApp tells it, else null' })),
  checkedAt: Type.String({ description: 'When WhatsApp answered (answers are reused for 24 h)' }),
});

export const contactRoutes: ApiPlugin<ApiDeps> = async (api, { asyncStore, engine }) => {
  api.post(
    '/connections/:id/contacts/check',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description:
          'Whether each number is on WhatsApp, answered by one usync query (numbers answered in the last 24 h come from a cache). Numbers are international numbers or user JIDs.',
        params: ConnectionParams,
        body: Type.Object(
          { phoneNumbers: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: MAX_NUMBERS_PER_CHECK }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Array(NumberCheckSchema), ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.checkNumbers(c.id, request.body.phoneNumbers);
    },
  );

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
      const c = request.connection;
      return asyncStore.read.contacts.list(c.id, request.query);
    },
  );
};
