/**
 * The machine's settings (issue 18 item 2; docs/settings.md): `GET /settings`, `PATCH /settings` and
 * `POST /settings/restart`. They belong to the machine, not to a user, so only its **owner** — the first local
 * user of the data dir (the desktop app's `operator`, or the first user `switchboard token create` made) — may read
 * or change them; anyone else gets 403. The fields and their checks come from the settings table
 * (config/settings-table.ts) through config/machine-settings.ts: a refused change (400, 409) writes nothing.
 * The Stripe secret key is write-only: it goes to the OS keychain and is never answered.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import {
  DESKTOP_SETTING_NAMES,
  SettingsError,
  type MachineSettings,
  type SettingsPatch,
} from '../../config/machine-settings.ts';
import { DESKTOP_SETTINGS } from '../../config/settings-table.ts';
import type { Store as AsyncStore } from '../../db/store-api.ts';
import { badRequest, conflict, forbidden } from '../../errors.ts';
import type { ApiDeps } from '../deps.ts';
import { ErrorResponse as ErrorBody, Nullable } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

/**
 * The answer to a settings refusal (config/machine-settings.ts): a value the next start would refuse is a 400 that
 * names its body field first (`body/port: invalid value "x": …`); a setting a flag or variable of this process
 * holds, no keychain for the Stripe key, or a settings.json that cannot be used is a 409.
 */
async function answering<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    if (err.kind === 'invalid') throw badRequest(err.setting ? `body/${err.setting}: ${err.message}` : err.message);
    throw conflict(err.message);
  }
}

/** The 403 of every settings route for anyone but the owner. */
export const OWNER_ONLY_MESSAGE = "Only this machine's owner (its first local user) may read or change its settings";

const Forbidden = ErrorBody(`Not the machine's owner: \`${OWNER_ONLY_MESSAGE}\`; or the request's Host or Origin is not allowed`);

const Source = Type.Union([Type.Literal('flag'), Type.Literal('env'), Type.Literal('file'), Type.Literal('default')], {
  description: 'Where the value comes from: a flag or environment variable of this process, settings.json, or the default',
});
const State = <T extends TSchema>(value: T) =>
  Type.Object({
    value,
    source: Source,
    lockedBy: Nullable(Type.String({ description: 'The flag or variable that sets it for this process (then it cannot be changed here)' })),
    restart: Type.Boolean({ description: 'Whether a change needs a restart' }),
  });

const SettingsViewSchema = Type.Object({
  file: Type.String({ description: 'The settings file (settings.json in the data dir)' }),
  settings: Type.Object({
    port: State(Type.Integer()),
    allowLanWebhooks: State(Type.Boolean()),
    workerId: State(Type.String()),
    billingProvider: State(Type.Union([Type.Literal('local'), Type.Literal('stripe')])),
    stripePriceId: State(Nullable(Type.String())),
  }),
  stripeSecretKey: Type.Object(
    {
      source: Nullable(Type.Union([Type.Literal('env'), Type.Literal('keychain')])),
      keychain: Type.Boolean({ description: 'Whether an OS keychain is usable by the service' }),
      lockedBy: Nullable(Type.String()),
    },
    { description: 'Where the Stripe secret key comes from (never its value)' },
  ),
  restartRequired: Type.Array(Type.String(), {
    description: 'Saved settings that apply only after a restart (names); empty when everything saved is in effect',
  }),
  canRestart: Type.Boolean({
    description: 'Whether POST /settings/restart can restart the service (the desktop app); headless: restart serve yourself',
  }),
});

/** PATCH body: the desktop-editable rows of the settings table; null removes a value from the file (the default). */
const PatchBody = Type.Object(
  Object.fromEntries(
    DESKTOP_SETTINGS.map((s) => [s.name, Type.Optional(Nullable(s.schema ?? Type.String()))]),
  ),
  { additionalProperties: false },
);

const PatchResponse = Type.Intersect([
  SettingsViewSchema,
  Type.Object({ changed: Type.Array(Type.String(), { description: 'Settings whose saved value changed' }) }),
]);

async function requireOwner(store: AsyncStore, request: FastifyRequest): Promise<void> {
  const owner = await store.read.users.owner();
  if (!owner || owner.id !== request.user.id) throw forbidden(OWNER_ONLY_MESSAGE);
}

export const settingsRoutes: ApiPlugin<ApiDeps & { settings: MachineSettings }> = async (api, { asyncStore, settings }) => {
  // Before the body is validated: someone else learns nothing about the settings, not even which values are valid.
  api.addHook('preValidation', async (request) => {
    if (request.routeOptions.config.owner) await requireOwner(asyncStore, request);
  });
  api.get(
    '/settings',
    {
      config: { owner: true },
      schema: {
        summary: "The machine's settings (owner only)",
        description:
          'The desktop-editable settings with where each comes from, where the Stripe key is kept, and the saved ' +
          'changes that wait for a restart.',
        response: { 200: SettingsViewSchema, 403: Forbidden, 409: ErrorBody('settings.json cannot be read') },
      },
    },
    async () => answering(() => settings.view()),
  );

  api.patch(
    '/settings',
    {
      config: { owner: true },
      schema: {
        summary: "Change the machine's settings (owner only)",
        description:
          'Saves the given settings in settings.json (null: back to the default) and the Stripe secret key in the ' +
          `OS keychain (null deletes it). Fields: ${DESKTOP_SETTING_NAMES.join(', ')}, stripeSecretKey. The change ` +
          'is checked as the next start would check it; 400 or 409 changes nothing. `restartRequired` lists what ' +
          'applies only after a restart (allowLanWebhooks applies at once).',
        body: PatchBody,
        response: {
          200: PatchResponse,
          403: Forbidden,
          409: ErrorBody('A flag or environment variable of this process sets the setting, or no OS keychain is available for the Stripe key'),
        },
      },
    },
    async (request) => answering(() => settings.update(request.body as SettingsPatch)),
  );

  api.post(
    '/settings/restart',
    {
      config: { owner: true },
      schema: {
        summary: 'Restart the service so saved settings apply (desktop app; owner only)',
        description:
          'The desktop app restarts its service process (the console reconnects, on the new port if it changed). ' +
          'Headless `switchboard serve` cannot restart itself: 409, restart it yourself.',
        response: {
          202: Type.Object({ restarting: Type.Literal(true) }),
          403: Forbidden,
          409: ErrorBody('This service cannot restart itself (headless serve)'),
        },
      },
    },
    async (_request, reply) => {
      if (!settings.canRestart)
        throw conflict('This service cannot restart itself (headless switchboard serve): restart it to apply the saved settings');
      // Restart once the answer is out (the restart drains the API).
      reply.raw.once('finish', () => settings.restart());
      return reply.code(202).send({ restarting: true as const });
    },
  );
};
