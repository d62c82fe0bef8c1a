/**
 * The payload of every event type the service logs (interface-spec §6; docs/api.md "Events"), as TypeBox schemas:
 * one definition for the types the engine builds payloads with (`EventPayload<E>`, checked by `EventLog.append`
 * at compile time), the OpenAPI document's `components.schemas` (http/openapi.ts) and the tests that validate
 * real payloads. The same payload travels in a `GET /events` record, a WebSocket frame and a webhook body.
 *
 * Payloads are closed (`additionalProperties: false`): a field the service adds must be added here, and so to the
 * document. Optional fields are absent, not null, when they do not apply.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { CONNECTION_STATUSES } from '../db/connections.ts';
import { MESSAGE_KINDS, MESSAGE_TYPES } from '../db/messages.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Jid = (description: string) => Type.String({ description });
const UnixSeconds = (description = 'Unix seconds') => Type.Integer({ description });
const closed = { additionalProperties: false } as const;

// ---- structured content of a Message (shared with the Message record, http/schemas.ts) ----

/** A location pin or live location (a live location's caption is the message's text). */
export const LocationSchema = Type.Object({
  latitude: Type.Number(),
  longitude: Type.Number(),
  name: Nullable(Type.String()),
  address: Nullable(Type.String()),
  url: Nullable(Type.String()),
  isLive: Type.Boolean(),
});
/** The cards of a contact message (one card or an array). */
export const ContactsSchema = Type.Array(Type.Object({ name: Type.String(), phoneNumbers: Type.Array(Type.String()), vcard: Type.String() }));
/** A poll with its aggregated votes (the latest vote of each voter counts). */
export const PollSchema = Type.Object({
  name: Type.String(),
  selectableCount: Type.Integer(),
  options: Type.Array(Type.Object({ name: Type.String(), votes: Type.Integer(), voters: Type.Array(Type.String()) })),
});
/** The option chosen in a buttons, list or template reply. */
export const SelectionSchema = Type.Object({ id: Type.String(), title: Type.String() });
/** An album message's announced item counts. */
export const AlbumSchema = Type.Object({ expectedImages: Type.Integer(), expectedVideos: Type.Integer() });

// ---- payloads ----

/** `message`, `message.sent` and `message.waiting`: the spec's §6.1 fields plus the Message's own (engine/event-payloads.ts). */
export const MessagePayloadSchema = Type.Object(
  {
    id: Type.String({ description: 'The Message id (`<fromMe>_<chatId>_<key id>`)' }),
    chatId: Jid('The chat (a user JID, phone-number form where known, or a group `…@g.us`)'),
    from: Jid('Sender: the contact for incoming messages (in groups the participant), the own JID for sent ones'),
    to: Jid('Recipient: the own JID for incoming 1:1 messages, the chat for sent ones and in groups'),
    body: Type.String({ description: 'Text or caption; "" for media without caption, undecryptable and revoked messages' }),
    timestamp: UnixSeconds(),
    fromMe: Type.Boolean(),
    type: Type.Union(
      MESSAGE_TYPES.map((t) => Type.Literal(t)),
      { description: 'The spec’s seven types, derived from `kind`' },
    ),
    kind: Type.Union(
      MESSAGE_KINDS.map((t) => Type.Literal(t)),
      { description: 'The precise kind (docs/api.md); `undecryptable` on `message.waiting`' },
    ),
    rawType: Type.Optional(Type.String({ description: 'Proto field name of an `unsupported` message' })),
    pushName: Type.String({ description: 'The sender’s push name (same as senderPushName)' }),
    senderJid: Jid('The sender as on the Message: in groups the participant (phone-number JID where known, else the LID)'),
    senderPushName: Type.String(),
    mentions: Type.Array(Type.String(), { description: 'JIDs the message mentions' }),
    quotedMessageId: Nullable(Type.String()),
    hasMedia: Type.Boolean(),
    media: Type.Optional(
      Type.Object(
        {
          url: Type.String({ description: 'Media-proxy URL (fetch with the same Bearer token)' }),
          mimetype: Type.String(),
          filename: Nullable(Type.String()),
          size: Nullable(Type.Integer()),
        },
        closed,
      ),
    ),
    location: Type.Optional(LocationSchema),
    contacts: Type.Optional(ContactsSchema),
    poll: Type.Optional(PollSchema),
    selection: Type.Optional(SelectionSchema),
    album: Type.Optional(AlbumSchema),
    albumId: Type.Optional(Type.String({ description: 'Message id of the album this media message belongs to' })),
    isForwarded: Type.Optional(Type.Literal(true, { description: 'Present only on forwarded messages' })),
  },
  closed,
);

/** One of the connection statuses (db/connections.ts). */
const ConnectionStatus = (options?: { description: string }) => Type.Union(CONNECTION_STATUSES.map((s) => Type.Literal(s)), options);

const MessageRef = {
  id: Type.String({ description: 'The Message id' }),
  chatId: Type.String(),
};

/**
 * Every event type and its payload schema, in the order the types are listed to clients (the webhook `events`
 * description, the console's pickers): the keys are the types webhooks subscribe to (http/routes/webhooks.ts).
 */
export const EVENT_PAYLOAD_SCHEMAS = {
  'session.status': Type.Object(
    {
      status: ConnectionStatus(),
      previous: Nullable(ConnectionStatus({ description: 'null when re-announced' })),
      reason: Nullable(Type.String({ description: 'Why, in words (e.g. `deleted`, `logged out on the phone`)' })),
    },
    { ...closed, description: 'A connection’s status changed' },
  ),
  message: Type.Object(MessagePayloadSchema.properties, {
    ...closed,
    description: 'A message from someone else arrived (`fromMe` false)',
  }),
  'message.sent': Type.Object(MessagePayloadSchema.properties, {
    ...closed,
    description: 'An own message was stored (`fromMe` true): sent through this API or from another of the account’s devices',
  }),
  'message.ack': Type.Object(
    { ...MessageRef, ack: Type.Integer({ minimum: 0, maximum: 5, description: '0 error, 1 pending, 2 server, 3 delivered, 4 read, 5 played' }) },
    { ...closed, description: 'An own message’s delivery status rose' },
  ),
  'message.reaction': Type.Object(
    {
      ...MessageRef,
      from: Jid('Who reacted'),
      fromMe: Type.Boolean(),
      emoji: Type.String({ description: '"" when the reaction was removed' }),
      removed: Type.Boolean(),
      timestamp: UnixSeconds(),
    },
    { ...closed, description: 'A reaction to a stored message was set or removed (`id` is the reacted-to message)' },
  ),
  'message.edited': Type.Object(
    {
      ...MessageRef,
      from: Jid('The message’s sender'),
      fromMe: Type.Boolean(),
      body: Type.String({ description: 'The new text' }),
      previousBody: Type.String(),
      editedAt: UnixSeconds(),
    },
    { ...closed, description: 'A stored message’s text was edited by its sender' },
  ),
  'call.received': Type.Object(
    { callId: Type.String(), from: Jid('The caller'), isVideo: Type.Boolean(), isGroup: Type.Boolean(), timestamp: UnixSeconds() },
    { ...closed, description: 'An incoming call is ringing' },
  ),
  'call.ended': Type.Object(
    {
      callId: Type.String(),
      from: Jid('The caller'),
      reason: Type.Union(['ended', 'rejected', 'accepted', 'missed'].map((r) => Type.Literal(r)), {
        description: 'ended by the caller, rejected (here or automatically), accepted on another device, missed',
      }),
    },
    { ...closed, description: 'An incoming call is over' },
  ),
  'message.revoked': Type.Object(
    { ...MessageRef, from: Jid('The message’s sender'), fromMe: Type.Boolean() },
    { ...closed, description: 'A stored message was deleted for everyone' },
  ),
  'message.waiting': Type.Object(MessagePayloadSchema.properties, {
    ...closed,
    description: 'A message that could not be decrypted yet (`kind` undecryptable); a `message` with the same id follows when it is',
  }),
  'poll.vote': Type.Object(
    {
      id: Type.String({ description: 'The poll message’s id' }),
      chatId: Type.String(),
      voter: Jid('Who voted'),
      selectedOptions: Type.Array(Type.String(), { description: 'Option names now chosen by the voter ([] withdrew the vote)' }),
      timestamp: UnixSeconds(),
    },
    { ...closed, description: 'A vote on a stored poll (aggregated onto the poll message)' },
  ),
  'presence.update': Type.Object(
    {
      chatId: Type.String(),
      participant: Jid('Whose presence'),
      presence: Type.Union(['unavailable', 'available', 'composing', 'recording', 'paused'].map((p) => Type.Literal(p))),
      lastSeen: Type.Optional(UnixSeconds('Unix seconds, when WhatsApp told it')),
    },
    { ...closed, description: 'A contact’s presence or chat state (typing, recording) in a chat' },
  ),
  'group.update': Type.Object(
    {
      groupId: Type.String(),
      subject: Type.Optional(Type.String({ description: 'The new subject, when it changed' })),
      description: Type.Optional(Nullable(Type.String({ description: 'The new description, when it changed (null: removed)' }))),
      by: Nullable(Jid('Who changed it, when known')),
    },
    { ...closed, description: 'A group’s subject or description changed, or became known (a group first seen through its messages; `by` null)' },
  ),
  'group.participants': Type.Object(
    {
      groupId: Type.String(),
      action: Type.Union(['add', 'remove', 'promote', 'demote'].map((a) => Type.Literal(a))),
      participants: Type.Array(Type.String(), { description: 'The members concerned (phone-number JIDs where known)' }),
      by: Nullable(Jid('Who did it, when known')),
    },
    { ...closed, description: 'Members were added, removed, promoted or demoted' },
  ),
  'webhook.test': Type.Object(
    { webhookId: Type.String(), message: Type.String() },
    { ...closed, description: 'Sent by `POST /webhooks/:id/test` to that webhook only' },
  ),
} satisfies Record<string, TObject>;

/** An event type the service logs. */
export type EventType = keyof typeof EVENT_PAYLOAD_SCHEMAS;
/** The payload of event type `E`. */
export type EventPayload<E extends EventType> = Static<(typeof EVENT_PAYLOAD_SCHEMAS)[E]>;
/** The payload `EventLog.append` takes for `event`: the documented shape for a known type, any record otherwise. */
export type PayloadFor<E extends string> = E extends EventType ? EventPayload<E> : Record<string, unknown>;

/** PascalCase name of an event type, for OpenAPI component names: `message.ack` → `MessageAck`. */
export function eventTypeName(type: string): string {
  return type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}
