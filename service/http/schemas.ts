/**
 * TypeBox schemas shared by several route files: nullable helper, paging parameters, the error and success
 * bodies, the error responses (one description per status, declared in one place), and the spec's Message record
 * (interface-spec §2.5). Resource-specific schemas live with their routes.
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

/** The spec's error body (interface-spec §7, plugins/errors.ts) as a response with `description`. */
export const ErrorResponse = (description: string) =>
  Type.Object(
    {
      message: Type.String(),
      statusCode: Type.Integer(),
      error: Type.String({ description: 'HTTP status text, e.g. "Not Found"' }),
    },
    { description },
  );

/**
 * What each error status the API answers means, as the OpenAPI document describes it wherever a route does not say
 * more. The statuses every route (or every route of a kind) can answer are added by openapi.ts; a route declares the
 * others with {@link errorResponses}.
 */
export const ERROR_STATUS_TEXT = {
  400: 'Invalid request: the message names the field, e.g. `body/chatId is required`',
  401: 'Missing or bad credentials (the messages are listed in docs/auth.md)',
  402: 'No free connection slot: `No free connection slot: N of N in use` (PUT /billing/slots adds slots)',
  403: 'The resource belongs to another user; or the request’s Host or Origin is not allowed',
  404: 'Not found, e.g. `Connection not found`',
  409: 'Not possible in the current state, e.g. `Connection is not online (status: starting)`',
  413: 'The request body is larger than the route accepts',
  415: 'Unsupported Content-Type: bodies are JSON',
  416: 'Range Not Satisfiable (`Content-Range: bytes */<size>`)',
  426: 'This endpoint needs a WebSocket upgrade',
  429: 'Rate limit exceeded; see the `retry-after` and `x-ratelimit-*` headers',
  500: 'Unexpected failure (logged by the service; the body reveals nothing internal: `Internal Server Error`)',
  502: 'WhatsApp (or the payment provider) refused the request or did not answer; the message says what failed',
  422: 'The `Idempotency-Key` was used for another request (another route, parameters or body) in the last 24 h',
  503:
    'Unavailable for now; retry after the `retry-after` seconds: the database stayed locked by another writer past the ' +
    'main thread’s wait (`The database is busy …`: nothing was changed), or the identity provider cannot be reached (JWTs)',
  507: 'Storage is unavailable (the data directory is full or not writable): nothing was changed; retry once space is freed',
} as const;
export type ErrorStatus = keyof typeof ERROR_STATUS_TEXT;

/**
 * Error responses for a route schema's `response`: each status with its standard description
 * (ERROR_STATUS_TEXT), or `[status, description]` where the route says more.
 * @example response: { 200: Thing, ...errorResponses(409, [503, 'Worker is booting, please retry in a few seconds']) }
 */
export function errorResponses(...entries: Array<ErrorStatus | readonly [ErrorStatus, string]>): Record<number, ReturnType<typeof ErrorResponse>> {
  const out: Record<number, ReturnType<typeof ErrorResponse>> = {};
  for (const e of entries) {
    const [status, description] = typeof e === 'number' ? [e, ERROR_STATUS_TEXT[e]] : e;
    out[status] = ErrorResponse(description);
  }
  return out;
}

/**
 * The errors of a route that acts through the connection's WhatsApp session: 409 while it is not online, 502 when
 * WhatsApp refuses or does not answer.
 */
export const WHATSAPP_ERRORS = errorResponses(
  [409, 'The connection is not online: `Connection is not online (status: …)`'],
  [502, 'WhatsApp refused the request or did not answer; the message says what failed'],
);

/** A response whose body is a file or a stream of `contentTypes` (no JSON), for the OpenAPI document. */
export const BinaryResponse = (description: string, contentTypes: readonly string[] = ['application/octet-stream']) => ({
  description,
  content: Object.fromEntries(contentTypes.map((t) => [t, { schema: { type: 'string', format: 'binary' } }])),
});

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
