/**
 * TypeBox schemas shared by several route files: nullable helper, paging parameters, the error and success
 * bodies, and the spec's Message record (interface-spec §2.5). Resource-specific schemas live with their routes.
 */
import { Type, type TSchema } from '@sinclair/typebox';

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Page size of list endpoints: default 50, at most 500. */
export const Limit = Type.Integer({ minimum: 1, maximum: 500, default: 50 });
/** Number of items to skip. */
export const Offset = Type.Integer({ minimum: 0, default: 0 });

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });

export const MessageSchema = Type.Object({
  id: Type.String(),
  chatId: Type.String(),
  timestamp: Type.Integer(),
  fromMe: Type.Boolean(),
  senderJid: Type.String(),
  senderPushName: Type.String(),
  type: Type.String(),
  text: Type.String(),
  quotedMessageId: Nullable(Type.String()),
  media: Nullable(
    Type.Object({
      url: Type.String(),
      mimetype: Type.String(),
      filename: Nullable(Type.String()),
      size: Nullable(Type.Integer()),
    }),
  ),
  ack: Nullable(Type.Integer()),
  isForwarded: Type.Boolean({ description: 'The message was forwarded (by this account or by its sender)' }),
  /** Unix seconds of the latest edit, null when never edited. */
  editedAt: Nullable(Type.Integer()),
  /** Current reactions, one per sender. */
  reactions: Type.Array(Type.Object({ senderJid: Type.String(), emoji: Type.String(), timestamp: Type.Integer() })),
});
