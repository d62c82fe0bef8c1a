/**
 * Groups API (beyond the spec; issue 12, names after WAHA's where it has them): the groups the account is in, one
 * group with its members, create, rename/describe, add/remove/promote/demote members, leave, invite code.
 * `:groupId` is `120363…@g.us` (URL-encoded) or its digits alone; participants are international numbers or user
 * JIDs. Every route needs the connection online (409 otherwise). Errors: 404 `Group not found` (unknown, or the
 * account is not in it), 403 `Not a group admin` (WhatsApp refused an admin action), 502 a failed request.
 */
import { Type } from '@sinclair/typebox';
import { ConnectionParams, Limit, Nullable, Offset, SuccessSchema, WHATSAPP_ERRORS } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { OPERATION } from '../plugins/idempotency.ts';
import type { ApiPlugin } from '../type-provider.ts';

/** Longest subject WhatsApp accepts (characters). */
const MAX_SUBJECT = 100;
/** Longest description WhatsApp accepts (characters). */
const MAX_DESCRIPTION = 2048;
/** Most participants one request names (WhatsApp's group size limit is larger; requests are split by callers). */
const MAX_PARTICIPANTS = 256;

const GroupParams = Type.Object({
  id: Type.String(),
  groupId: Type.String({ description: 'Group JID `120363…@g.us` (URL-encoded) or its digits' }),
});

const GroupSummarySchema = Type.Object({
  id: Type.String({ description: 'Group JID `…@g.us` (the chatId of its chat)' }),
  subject: Type.String(),
  description: Nullable(Type.String()),
  owner: Nullable(Type.String({ description: 'Creator: phone-number JID where known, else LID' })),
  createdAt: Nullable(Type.String({ description: 'ISO 8601' })),
  participantsCount: Type.Integer(),
  addressingMode: Type.Union([Type.Literal('pn'), Type.Literal('lid')], {
    description: '`pn`: members named by phone number; `lid`: members named by LID',
  }),
});

const ParticipantSchema = Type.Object({
  jid: Type.String({ description: 'Phone-number JID where known, else LID' }),
  phoneNumber: Nullable(Type.String({ description: 'International format, null when only the LID is known' })),
  lid: Nullable(Type.String()),
  name: Nullable(Type.String({ description: 'Contact name or push name' })),
  isAdmin: Type.Boolean(),
  isSuperAdmin: Type.Boolean({ description: 'The group creator' }),
});

const GroupSchema = Type.Composite([GroupSummarySchema, Type.Object({ participants: Type.Array(ParticipantSchema) })]);

const Participants = Type.Array(
  Type.String({ minLength: 1, maxLength: 64, description: 'International number (+15550101) or user JID' }),
  { minItems: 1, maxItems: MAX_PARTICIPANTS },
);

const CreateBody = Type.Object(
  { subject: Type.String({ minLength: 1, maxLength: MAX_SUBJECT }), participants: Participants },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    subject: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_SUBJECT })),
    description: Type.Optional(Type.String({ maxLength: MAX_DESCRIPTION, description: '"" removes the description' })),
  },
  { additionalProperties: false },
);
const ParticipantsBody = Type.Object(
  {
    action: Type.Union([Type.Literal('add'), Type.Literal('remove'), Type.Literal('promote'), Type.Literal('demote')]),
    participants: Participants,
  },
  { additionalProperties: false },
);
const ParticipantResultSchema = Type.Object({
  jid: Type.String(),
  phoneNumber: Nullable(Type.String()),
  status: Type.Integer({
    description: "WhatsApp's code for this participant: 200 done, 403 not allowed, 404 not a member or unknown, 409 already a member",
  }),
});

export const groupRoutes: ApiPlugin<ApiDeps> = async (api, { engine }) => {
  api.get(
    '/connections/:id/groups',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description: 'The groups the account is in, by subject (asked from WhatsApp). `offset` counts groups.',
        params: ConnectionParams,
        querystring: Type.Object({ limit: Limit, offset: Offset }),
        response: { 200: Type.Array(GroupSummarySchema), ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.listGroups(c.id, request.query);
    },
  );

  api.post(
    '/connections/:id/groups',
    {
      config: OPERATION,
      schema: {
        description: 'Creates a group with the account as its creator (superadmin) and the participants as members.',
        params: ConnectionParams,
        body: CreateBody,
        response: { 201: GroupSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request, reply) => {
      const c = request.connection;
      return reply.code(201).send(await engine.createGroup(c.id, request.body));
    },
  );

  api.get(
    '/connections/:id/groups/:groupId',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description: 'One group with its members and their admin roles (kept current from WhatsApp’s group notifications).',
        params: GroupParams,
        response: { 200: GroupSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.group(c.id, request.params.groupId);
    },
  );

  api.patch(
    '/connections/:id/groups/:groupId',
    {
      config: OPERATION,
      schema: {
        description: 'Renames the group and/or changes its description. 403 `Not a group admin` when the group only lets admins edit.',
        params: GroupParams,
        body: UpdateBody,
        response: { 200: GroupSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.updateGroup(c.id, request.params.groupId, request.body);
    },
  );

  api.post(
    '/connections/:id/groups/:groupId/participants',
    {
      config: OPERATION,
      schema: {
        description: 'Adds, removes, promotes or demotes members (admins only: 403 `Not a group admin`); one result per participant.',
        params: GroupParams,
        body: ParticipantsBody,
        response: { 200: Type.Array(ParticipantResultSchema), ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.updateParticipants(c.id, request.params.groupId, request.body);
    },
  );

  api.post(
    '/connections/:id/groups/:groupId/leave',
    { config: OPERATION, schema: { description: 'The account leaves the group.', params: GroupParams, response: { 200: SuccessSchema, ...WHATSAPP_ERRORS } } },
    async (request) => {
      const c = request.connection;
      await engine.leaveGroup(c.id, request.params.groupId);
      return { success: true as const };
    },
  );

  api.get(
    '/connections/:id/groups/:groupId/invite-code',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description: 'The group’s current invite code and link (admins only: 403 `Not a group admin`).',
        params: GroupParams,
        response: { 200: Type.Object({ code: Type.String(), url: Type.String() }), ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      const c = request.connection;
      return engine.groupInviteCode(c.id, request.params.groupId);
    },
  );
};
