/**
 * TypeBox schemas shared by several route files: nullable helper, paging parameters, the error and success
 * bodies, and the spec's Message record (interface-spec §2.5). Resource-specific schemas live with their routes.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { MESSAGE_KINDS, MESSAGE_TYPES } from '../db/messages.ts';
import { AlbumSchema, ContactsSchema, LocationSchema, PollSchema, SelectionSchema } from '../events/payloads.ts';

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Page size of list endpoints: default 50, at most 500. */
export const Limit = Type.Integer({ minimum: 1, maximum: 500, default: 50 });
/** Number of items to skip. */
export const Offset = Type.Integer({ minimum: 0, default: 0 });

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });

/** `:id` of a connection-scoped route (plugins/connection-scope.ts resolves it to `request.connection`). */
export const ConnectionParams = Type.Object({ id: Type.String() });

export const MessageSchema = Type.Object({
  id: Type.String(),
  chatId: Type.String(),
  timestamp: Type.Integer(),
  fromMe: Type.Boolean(),
  senderJid: Type.String(),
  senderPushName: Type.String(),
  /** The spec's seven types; derived from `kind`. */
  type: Type.Union(MESSAGE_TYPES.map((t) => Type.Literal(t))),
  /** Precise kind (closed vocabulary, docs/api.md). */
  kind: Type.Union(MESSAGE_KINDS.map((t) => Type.Literal(t))),
  /** Proto field name of an `unsupported` message, else null. */
  rawType: Nullable(Type.String()),
  text: Type.String(),
  quotedMessageId: Nullable(Type.String()),
  media: Nullable(
    Type.Object({
      url: Type.String({
        format: 'uri',
        description:
          'Absolute media-proxy URL, `<public base URL>/connections/{id}/media/{filename}`: fetch it as given with the same ' +
          '`Authorization: Bearer` header. The base is the URL `serve` prints on its `API:` line, or `--public-url`.',
      }),
      mimetype: Type.String(),
      filename: Nullable(Type.String()),
      size: Nullable(Type.Integer()),
    }),
  ),
  location: Nullable(LocationSchema),
  contacts: Nullable(ContactsSchema),
  poll: Nullable(PollSchema),
  /** The option chosen in a buttons, list or template reply. */
  selection: Nullable(SelectionSchema),
  album: Nullable(AlbumSchema),
  /** Message id of the album this media message belongs to. */
  albumId: Nullable(Type.String()),
  ack: Nullable(Type.Integer()),
  mentions: Type.Array(Type.String(), {
    description: 'JIDs the message mentions (@-mentions in text or caption); phone-number JIDs where known, else LIDs',
  }),
  isForwarded: Type.Boolean({ description: 'The message was forwarded (by this account or by its sender)' }),
  /** Unix seconds of the latest edit, null when never edited. */
  editedAt: Nullable(Type.Integer()),
  /** Current reactions, one per sender. */
  reactions: Type.Array(Type.Object({ senderJid: Type.String(), emoji: Type.String(), timestamp: Type.Integer() })),
});
