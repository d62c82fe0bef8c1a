/**
 * Status posts ("stories", beyond the spec: it names no route for them; paths after WAHA's `status/text` and
 * `status/image`): `POST /connections/:id/status/text` and `POST /connections/:id/status/image`. A post goes to
 * `status@broadcast` with the list of contacts who may see it (Baileys `statusJidList`): by default every individual
 * contact of the connection, or `contacts`. Answers 201 with the stored Message (chatId `status@broadcast`), once
 * WhatsApp's server acknowledged it, like a send. The engine's operations.ts `postStatus` does the work.
 */
import { Type } from '@sinclair/typebox';
import { MEDIA_LIMITS } from '../../engine/outgoing.ts';
import { STATUS_FONTS } from '../../engine/operations.ts';
import { ConnectionParams, MessageSchema } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { keyOf, MESSAGE } from '../plugins/idempotency.ts';
import type { ApiPlugin } from '../type-provider.ts';

/** Longest text status WhatsApp's apps accept (characters). */
export const MAX_STATUS_TEXT = 700;
/** Most contacts one post names. */
const MAX_STATUS_CONTACTS = 1024;

const contacts = Type.Optional(
  Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    minItems: 1,
    maxItems: MAX_STATUS_CONTACTS,
    description:
      'Who may see the post: international numbers or user JIDs. Default: every individual contact of the connection ' +
      '(`GET /connections/:id/contacts`, phone-number JIDs)',
  }),
);

const TextStatusBody = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: MAX_STATUS_TEXT }),
    backgroundColor: Type.Optional(
      Type.String({
        pattern: '^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{8})$',
        description: 'Background colour, `#RRGGBB` or `#AARRGGBB`',
      }),
    ),
    font: Type.Optional(
      Type.Union(
        STATUS_FONTS.map((f) => Type.Literal(f)),
        {
          description:
            'Font: 0 system, 1 system text, 2 FB script, 6 system bold, 7 Morning Breeze, 8 Calistoga, 9 Exo 2 extra bold, 10 Courier Prime bold',
        },
      ),
    ),
    contacts,
  },
  { additionalProperties: false },
);

const ImageStatusBody = Type.Object(
  {
    url: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4096, description: 'https:// URL the service downloads the image from' }),
    ),
    base64: Type.Optional(Type.String({ minLength: 1, description: 'The image, base64 (a data: URL works too)' })),
    mimetype: Type.Optional(
      Type.String({ minLength: 3, maxLength: 255, description: 'Detected from the bytes when absent' }),
    ),
    caption: Type.Optional(Type.String({ maxLength: MAX_STATUS_TEXT })),
    contacts,
  },
  { additionalProperties: false },
);

const DESCRIPTION =
  'Posts a status (`status@broadcast`, shown for 24 h on the status list of the contacts it names). Answers 201 with ' +
  'the stored Message (chatId `status@broadcast`, `fromMe`) once WhatsApp’s server acknowledged it. 400 for bad input ' +
  'or when there is no contact to show it to; 409 when the connection is not online; 502 when WhatsApp refused it.';

export const statusRoutes: ApiPlugin<ApiDeps> = async (api, { engine }) => {
  api.post(
    '/connections/:id/status/text',
    {
      config: MESSAGE,
      schema: {
        tags: ['messaging'],
        summary: 'Post a text status (story)',
        description: DESCRIPTION,
        params: ConnectionParams,
        body: TextStatusBody,
        response: { 201: MessageSchema },
      },
    },
    async (request, reply) => {
      const c = request.connection;
      return reply.code(201).send(await engine.postStatus(c.id, { type: 'text', ...request.body }, keyOf(request)));
    },
  );

  api.post(
    '/connections/:id/status/image',
    {
      bodyLimit: Math.ceil((MEDIA_LIMITS.image * 4) / 3) + 64 * 1024,
      config: MESSAGE,
      schema: {
        tags: ['messaging'],
        summary: 'Post an image status (story)',
        description: `${DESCRIPTION} The image comes as exactly one of \`url\` or \`base64\`, checked like \`send-image\`'s (16 MiB).`,
        params: ConnectionParams,
        body: ImageStatusBody,
        response: { 201: MessageSchema },
      },
    },
    async (request, reply) => {
      const c = request.connection;
      return reply.code(201).send(await engine.postStatus(c.id, { type: 'image', ...request.body }, keyOf(request)));
    },
  );
};
