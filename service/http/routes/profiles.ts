/**
 * Profiles (issue 14 item 4; `GET /me` is interface-spec §4.1 with `about` and `pictureUrl` added): a contact's
 * profile (`GET /connections/:id/contacts/:jid/profile`), the account's own (`GET`/`PATCH /connections/:id/me`) and
 * its picture (`PUT /connections/:id/me/picture`). Pictures are files of the connection's media folder, served by
 * the media proxy (`pictureUrl`, same Bearer auth). The engine's profiles.ts does the work.
 */
import { Type } from '@sinclair/typebox';
import { MAX_ABOUT, MAX_PUSH_NAME } from '../../engine/profiles.ts';
import { MEDIA_LIMITS } from '../../engine/outgoing.ts';
import type { ConnectionRow } from '../../db/connections.ts';
import { conflict } from '../../errors.ts';
import type { ApiDeps } from '../deps.ts';
import { OPERATION } from '../plugins/idempotency.ts';
import { ConnectionParams, Nullable, WHATSAPP_ERRORS } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const pictureUrl = Nullable(
  Type.String({
    description: 'Media-proxy URL of the picture (`<public URL>/connections/:id/media/profile-…`, like message media; Bearer auth); null when there is none or it is hidden',
  }),
);

/** The account's own profile (interface-spec §2.2 plus `about` and `pictureUrl`). */
export const ProfileSchema = Type.Object({
  id: Type.String({ description: 'The account’s JID' }),
  pushName: Type.String({ description: 'Display name' }),
  about: Nullable(Type.String({ description: 'About text; null when none is set (or WhatsApp did not answer)' })),
  pictureUrl,
});

const ContactProfileSchema = Type.Object({
  jid: Type.String({ description: 'The contact’s phone-number JID (a LID whose number is unknown stays a LID)' }),
  name: Nullable(Type.String({ description: 'Saved name, else push name; null when neither is known' })),
  pushName: Nullable(Type.String({ description: 'The name the contact set for itself (arrives with its messages)' })),
  about: Nullable(Type.String({ description: 'About text; null when none is set or it is hidden' })),
  pictureUrl,
});

const Refresh = Type.Object({
  refresh: Type.Boolean({ default: false, description: 'true: ask WhatsApp again instead of using the 24 h cache' }),
});

const UpdateBody = Type.Object(
  {
    pushName: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_PUSH_NAME, description: `The name contacts see (1–${MAX_PUSH_NAME} characters)` })),
    about: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_ABOUT, description: `About text (1–${MAX_ABOUT} characters)` })),
  },
  { additionalProperties: false },
);

const PictureBody = Type.Object(
  {
    base64: Type.Optional(Type.String({ minLength: 1, description: 'JPEG or PNG, base64 (a data: URL works too)' })),
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'https:// URL of a JPEG or PNG the service downloads' })),
  },
  { additionalProperties: false },
);

const ContactParams = Type.Object({ id: Type.String(), jid: Type.String({ description: 'A user JID or an international number' }) });

export const profileRoutes: ApiPlugin<ApiDeps> = async (api, { engine }) => {
  /**
   * The connection of a `/me` route (connection-scope.ts resolved it), unless it is not online: then 409
   * `Connection is not online (status: <status>)`, the send routes' message (engine.ts): the session's status, else
   * the stored one.
   */
  const online = (c: ConnectionRow) => {
    const live = engine.liveStatus(c.id)?.status;
    if (c.status !== 'online' || live !== 'online') {
      throw conflict(`Connection is not online (status: ${live && live !== 'online' ? live : c.status})`);
    }
    return c.id;
  };

  api.get(
    '/connections/:id/me',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description:
          'The linked account’s profile. `about` and `pictureUrl` come from a 24 h cache (`?refresh=true` asks WhatsApp again) ' +
          'and are null when WhatsApp does not answer. 409 unless the connection is online.',
        params: ConnectionParams,
        querystring: Refresh,
        response: { 200: ProfileSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => engine.ownProfile(online(request.connection), { refresh: request.query.refresh }),
  );

  api.patch(
    '/connections/:id/me',
    {
      config: OPERATION,
      schema: {
        description:
          'Changes the account’s push name (an app-state change, as WhatsApp’s own apps make it) and/or its about text; ' +
          'answers the updated profile. Contacts see the new name on the account’s next messages.',
        params: ConnectionParams,
        body: UpdateBody,
        response: { 200: ProfileSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => engine.updateOwnProfile(online(request.connection), request.body),
  );

  api.put(
    '/connections/:id/me/picture',
    {
      bodyLimit: Math.ceil((MEDIA_LIMITS.image * 4) / 3) + 64 * 1024,
      config: OPERATION,
      schema: {
        description:
          'Sets the account’s profile picture from exactly one of `base64` or `url` (https, fetched through the outbound URL ' +
          'policy): a JPEG or PNG (by its bytes), cropped to a square and resized to 640×640. Answers the updated profile.',
        params: ConnectionParams,
        body: PictureBody,
        response: { 200: ProfileSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => engine.setOwnPicture(online(request.connection), request.body),
  );

  api.get(
    '/connections/:id/contacts/:jid/profile',
    {
      config: { waQuery: true }, // asks WhatsApp: paced per connection (plugins/wa-query-pace.ts)
      schema: {
        description:
          'A contact’s name, about text and picture. About and picture are asked from WhatsApp and cached for 24 h ' +
          '(`?refresh=true` asks again; a picture change the contact makes is noticed at once); the picture is served by the ' +
          'media proxy at `pictureUrl`. 400 for a group or a number not on WhatsApp.',
        params: ContactParams,
        querystring: Refresh,
        response: { 200: ContactProfileSchema, ...WHATSAPP_ERRORS },
      },
    },
    async (request) => {
      return engine.contactProfile(request.connection.id, request.params.jid, { refresh: request.query.refresh });
    },
  );
};
