/**
 * The one settings table of `switchboard serve` and the desktop app (issue 18 item 2). Each row declares a setting
 * once: its name (the key in `settings.json` and in `GET/PATCH /api/settings`), its command-line flag, its
 * environment variable, its type, its default, its description, and whether the console may edit it, whether it is
 * a secret and whether a change needs a restart. From this table come:
 *
 * - `serve --help` (`formatServeHelp`, config/settings-docs.ts) and the flags `serve` accepts (`serveParseOptions`);
 * - the config loader's lookup (config/service-config.ts): flags > environment > settings file > default;
 * - the settings reference in docs/settings.md (`npm run gen:settings-docs`; test/unit/settings-docs.test.ts
 *   fails when the committed file differs from the table);
 * - the desktop-editable subset the settings API and the console's Settings view work on.
 *
 * How each value is parsed and checked stays in config/service-config.ts; this file is data only.
 */
import { Type, type TSchema } from '@sinclair/typebox';

/**
 * JSON type of a setting in `settings.json`: `string`, `integer`, `number`, `boolean`, or `list` (an array of
 * strings/numbers, or one comma-separated string). Flags and environment variables are always text.
 */
export type SettingKind = 'string' | 'integer' | 'number' | 'boolean' | 'list';

/** Headings of `serve --help` and docs/settings.md, in order. */
export const SETTING_GROUPS = {
  service: 'Service',
  messages: 'Messages',
  webhooks: 'Webhooks and the event log',
  billing: 'Billing',
  security: 'Authentication and request limits',
} as const;
export type SettingGroup = keyof typeof SETTING_GROUPS;

export interface SettingSpec {
  /** camelCase: the key in settings.json and the settings API, and the field of ConfigFlags. */
  readonly name: string;
  /** The flag without `--` (`port` → `--port`); absent: no flag (environment, or the keychain, only). */
  readonly flag?: string;
  readonly env: string;
  readonly kind: SettingKind;
  /** The value's placeholder in `serve --help` (`PORT`); absent for switches. */
  readonly arg?: string;
  /** The default, as people read it (`7575`, `off`, `the platform's data folder`). */
  readonly default: string;
  readonly description: string;
  readonly group: SettingGroup;
  /** The console's Settings view (and `PATCH /api/settings`) may change it. */
  readonly desktop?: boolean;
  /** Never written to settings.json or returned by the API (the Stripe key: environment or OS keychain). */
  readonly secret?: boolean;
  /** false: a change applies at once; true (the default): the service must restart to apply it. */
  readonly restart?: boolean;
  /** false: not accepted in settings.json (it decides where the file is, or live mode must not read it). */
  readonly file?: boolean;
  /** Desktop-editable settings: the JSON schema of the value in `PATCH /api/settings` (before the loader's checks). */
  readonly schema?: TSchema;
}

/** The settings, in the order `serve --help` and docs/settings.md list them. */
export const SETTINGS = [
  // Service
  {
    name: 'host',
    flag: 'host',
    env: 'SWITCHBOARD_HOST',
    kind: 'string',
    arg: 'HOST',
    default: '127.0.0.1',
    description: 'Interface to listen on.',
    group: 'service',
  },
  {
    name: 'port',
    flag: 'port',
    env: 'SWITCHBOARD_PORT',
    kind: 'integer',
    arg: 'PORT',
    default: '7575',
    description:
      'API port; 0 picks a free one. When it is taken by another program serve stops with a message; the desktop ' +
      'app falls back to a free port instead and says so in its log, the console and the health answer.',
    group: 'service',
    desktop: true,
    schema: Type.Integer({ minimum: 0, maximum: 65535, description: 'API port; 0 picks a free one at every start' }),
  },
  {
    name: 'publicUrl',
    flag: 'public-url',
    env: 'SWITCHBOARD_PUBLIC_URL',
    kind: 'string',
    arg: 'URL',
    default: 'the URL on the API: line',
    description:
      "The API's address as clients reach it (a LAN address, a reverse proxy), e.g. https://wa.example.com/api: media " +
      'URLs are built from it and its host is accepted.',
    group: 'service',
  },
  {
    name: 'dataDir',
    flag: 'data-dir',
    env: 'SWITCHBOARD_DATA_DIR',
    kind: 'string',
    arg: 'DIR',
    default: "the platform's data folder, with a sandbox/ folder inside it for sandbox mode (docs/cli.md)",
    description: 'Data directory (database, media, settings.json).',
    group: 'service',
    file: false,
  },
  {
    name: 'mediaDir',
    flag: 'media-dir',
    env: 'SWITCHBOARD_MEDIA_DIR',
    kind: 'string',
    arg: 'DIR',
    default: 'DATA_DIR/media',
    description:
      "Where received and sent media files are kept, one folder per connection (created private, like the data dir's " +
      'own folders); a relative path is taken from the working directory.',
    group: 'service',
  },
  {
    name: 'database',
    flag: 'database',
    env: 'SWITCHBOARD_DATABASE_URL',
    kind: 'string',
    arg: 'URL',
    default: "the data dir's SQLite file (DATA_DIR/switchboard.db)",
    description:
      'A postgres:// URL instead of the SQLite file; serve, token and user take it. token and user work on it ' +
      '(creating its schema when missing); serving from PostgreSQL is being built (issue 26): serve in this build ' +
      'accepts only the default SQLite and refuses a URL at start. Its password is never shown (logs and messages ' +
      'print ***); prefer the variable to the flag, which a process list shows.',
    group: 'service',
    file: false,
  },
  {
    name: 'sandbox',
    flag: 'sandbox',
    env: 'SWITCHBOARD_SANDBOX',
    kind: 'boolean',
    default: 'off',
    description: 'Test mode: start the built-in WhatsApp sandbox and connect to it.',
    group: 'service',
    file: false,
  },
  {
    name: 'sandboxPort',
    flag: 'sandbox-port',
    env: 'SWITCHBOARD_SANDBOX_PORT',
    kind: 'integer',
    arg: 'PORT',
    default: "0: its last start's port when free, else a free one",
    description: 'Port of the in-process sandbox. At 0 it keeps one port per data dir across restarts, so its URL stays valid.',
    group: 'service',
  },
  {
    name: 'waUrl',
    flag: 'wa-url',
    env: 'SWITCHBOARD_WA_URL',
    kind: 'string',
    arg: 'URL',
    default: 'the in-process sandbox',
    description:
      'Sandbox mode only: a sandbox running elsewhere (ws:// or wss://) instead of the in-process one; live mode ' +
      'always connects to WhatsApp itself.',
    group: 'service',
    file: false,
  },
  {
    name: 'waRootKey',
    flag: 'wa-root-key',
    env: 'SWITCHBOARD_WA_ROOT_KEY',
    kind: 'string',
    arg: 'KEY',
    default: 'read from the sandbox',
    description: 'Sandbox mode only: Noise root public key of the server at --wa-url (32 bytes, base64 or hex).',
    group: 'service',
    file: false,
  },
  {
    name: 'logLevel',
    flag: 'log-level',
    env: 'SWITCHBOARD_LOG_LEVEL',
    kind: 'string',
    arg: 'LEVEL',
    default: 'info',
    description: 'fatal, error, warn, info, debug, trace or silent.',
    group: 'service',
  },
  {
    name: 'logFormat',
    flag: 'log-format',
    env: 'SWITCHBOARD_LOG_FORMAT',
    kind: 'string',
    arg: 'FORMAT',
    default: 'auto',
    description: 'pretty (readable lines), json (one object per line) or auto: pretty when stderr is a terminal, else json.',
    group: 'service',
  },
  {
    name: 'workerId',
    flag: 'worker-id',
    env: 'SWITCHBOARD_WORKER_ID',
    kind: 'string',
    arg: 'ID',
    default: 'local',
    description: 'Worker name shown on connections (1-64 letters, digits, "_", "-" or ".").',
    group: 'service',
    desktop: true,
    schema: Type.String({ minLength: 1, maxLength: 64, description: 'Worker name shown on connections' }),
  },
  {
    name: 'minFreeMb',
    flag: 'min-free-mb',
    env: 'SWITCHBOARD_MIN_FREE_MB',
    kind: 'integer',
    arg: 'N',
    default: '100',
    description:
      'Free space the data dir needs, in MiB: below it serve refuses to start, and sessions that lost storage wait ' +
      'for it; below twice it the log and the console warn.',
    group: 'service',
  },
  {
    name: 'workers',
    flag: 'workers',
    env: 'SWITCHBOARD_WORKERS',
    kind: 'integer',
    arg: 'N',
    default: "the machine's available parallelism (its core count)",
    description:
      'Session worker threads: N >= 1 runs the WhatsApp sessions on a pool of N threads while HTTP, the event stream ' +
      'and webhooks stay on the main thread; 0 keeps them on the main thread (docs/scaling.md).',
    group: 'service',
  },
  // Messages
  {
    name: 'typingDelayMs',
    flag: 'typing-delay-ms',
    env: 'SWITCHBOARD_TYPING_DELAY_MS',
    kind: 'string',
    arg: 'MIN-MAX',
    default: '800-2500',
    description: 'Typing pause before sends without skipPresence, in ms; one number for a fixed pause, 0 turns it off.',
    group: 'messages',
  },
  {
    name: 'downloadStatusMedia',
    flag: 'download-status-media',
    env: 'SWITCHBOARD_DOWNLOAD_STATUS_MEDIA',
    kind: 'boolean',
    default: 'off: only when requested',
    description: 'Download status-post media as it arrives.',
    group: 'messages',
  },
  {
    name: 'onlineFallbackMs',
    flag: 'online-fallback-ms',
    env: 'SWITCHBOARD_ONLINE_FALLBACK_MS',
    kind: 'integer',
    arg: 'MS',
    default: '20000',
    description:
      "A logged-in connection goes online this long after login even without the server's offline-delivered marker " +
      '(1000-600000).',
    group: 'messages',
  },
  // Webhooks
  {
    name: 'allowLanWebhooks',
    flag: 'allow-lan-webhooks',
    env: 'SWITCHBOARD_ALLOW_LAN_WEBHOOKS',
    kind: 'boolean',
    default: 'off',
    description:
      'Let webhooks (also http://) and send-* url fetches reach loopback, private, ULA and CGNAT addresses ' +
      '(docs/api.md, outbound URL policy). Applies at once, without a restart. In sandbox mode webhooks may reach ' +
      'loopback without it.',
    group: 'webhooks',
    desktop: true,
    restart: false,
    schema: Type.Boolean({ description: 'Webhooks and send-* url fetches may reach loopback/LAN addresses' }),
  },
  {
    name: 'webhookRetryDelays',
    flag: 'webhook-retry-delays',
    env: 'SWITCHBOARD_WEBHOOK_RETRY_DELAYS',
    kind: 'list',
    arg: 'MS,MS,MS,MS,MS',
    default: '0,5000,300000,1800000,7200000',
    description: 'Delays before webhook attempts 1-5, the first 0; each is multiplied by U(0.8, 1.2).',
    group: 'webhooks',
  },
  {
    name: 'eventRetentionDays',
    flag: 'event-retention-days',
    env: 'SWITCHBOARD_EVENT_RETENTION_DAYS',
    kind: 'number',
    arg: 'N',
    default: '7',
    description: 'Days the event log keeps events (undelivered webhook events are kept longer).',
    group: 'webhooks',
  },
  // Billing
  {
    name: 'billingProvider',
    flag: 'billing-provider',
    env: 'SWITCHBOARD_BILLING_PROVIDER',
    kind: 'string',
    arg: 'P',
    default: 'stripe when SWITCHBOARD_STRIPE_SECRET_KEY is set, else local',
    description: 'local or stripe (docs/billing.md).',
    group: 'billing',
    desktop: true,
    schema: Type.Union([Type.Literal('local'), Type.Literal('stripe')], { description: 'The payment provider' }),
  },
  {
    name: 'stripeSecretKey',
    env: 'SWITCHBOARD_STRIPE_SECRET_KEY',
    kind: 'string',
    default: 'none',
    description:
      'The Stripe secret key (sk_… or rk_…). Never a flag (a process list would show it) and never in ' +
      'settings.json: the environment, or the OS keychain where the console stores it. Never logged.',
    group: 'billing',
    desktop: true,
    secret: true,
    file: false,
    schema: Type.String({ minLength: 1, maxLength: 500, description: 'A Stripe secret key (sk_test_…, sk_live_…, rk_…); write-only' }),
  },
  {
    name: 'stripePriceId',
    flag: 'stripe-price-id',
    env: 'SWITCHBOARD_STRIPE_PRICE_ID',
    kind: 'string',
    arg: 'ID',
    default: 'none; needed for stripe',
    description: 'The recurring per-slot Stripe price.',
    group: 'billing',
    desktop: true,
    schema: Type.String({ minLength: 1, maxLength: 255, description: 'The recurring per-slot Stripe price, price_…' }),
  },
  {
    name: 'stripeApiBase',
    flag: 'stripe-api-base',
    env: 'SWITCHBOARD_STRIPE_API_BASE',
    kind: 'string',
    arg: 'URL',
    default: 'https://api.stripe.com',
    description: 'Another Stripe API endpoint, e.g. a local fake (http:// only on loopback).',
    group: 'billing',
  },
  {
    name: 'billingSuccessUrl',
    flag: 'billing-success-url',
    env: 'SWITCHBOARD_BILLING_SUCCESS_URL',
    kind: 'string',
    arg: 'URL',
    default: "the console's billing page",
    description: 'Where Checkout sends users back after paying.',
    group: 'billing',
  },
  {
    name: 'billingCancelUrl',
    flag: 'billing-cancel-url',
    env: 'SWITCHBOARD_BILLING_CANCEL_URL',
    kind: 'string',
    arg: 'URL',
    default: "the console's billing page",
    description: 'Where Checkout sends users back when they cancel.',
    group: 'billing',
  },
  {
    name: 'billingReturnUrl',
    flag: 'billing-return-url',
    env: 'SWITCHBOARD_BILLING_RETURN_URL',
    kind: 'string',
    arg: 'URL',
    default: "the console's billing page",
    description: "Where the payment provider's customer portal sends users back.",
    group: 'billing',
  },
  {
    name: 'defaultSlots',
    flag: 'default-slots',
    env: 'SWITCHBOARD_DEFAULT_SLOTS',
    kind: 'integer',
    arg: 'N',
    default: '100',
    description: 'local: slots each user starts with.',
    group: 'billing',
  },
  {
    name: 'maxSlots',
    flag: 'max-slots',
    env: 'SWITCHBOARD_MAX_SLOTS',
    kind: 'integer',
    arg: 'N',
    default: '100',
    description: 'Most slots per account.',
    group: 'billing',
  },
  {
    name: 'billingCurrency',
    flag: 'billing-currency',
    env: 'SWITCHBOARD_BILLING_CURRENCY',
    kind: 'string',
    arg: 'CODE',
    default: 'usd',
    description: 'local: currency reported with amounts.',
    group: 'billing',
  },
  {
    name: 'billingCacheMs',
    env: 'SWITCHBOARD_BILLING_CACHE_MS',
    kind: 'integer',
    default: '30000',
    description: 'stripe: how long subscription state read from Stripe is reused, in ms (0-3600000).',
    group: 'billing',
  },
  // Security
  {
    name: 'jwtIssuer',
    flag: 'jwt-issuer',
    env: 'SWITCHBOARD_JWT_ISSUER',
    kind: 'string',
    arg: 'URL',
    default: 'none: API tokens only',
    description: 'Accept identity-provider JWTs from this issuer (with --jwt-audience and --jwks-url).',
    group: 'security',
  },
  {
    name: 'jwtAudience',
    flag: 'jwt-audience',
    env: 'SWITCHBOARD_JWT_AUDIENCE',
    kind: 'string',
    arg: 'AUD',
    default: 'none',
    description: 'Required JWT audience.',
    group: 'security',
  },
  {
    name: 'jwksUrl',
    flag: 'jwks-url',
    env: 'SWITCHBOARD_JWKS_URL',
    kind: 'string',
    arg: 'URL',
    default: 'none',
    description: "The provider's JWKS (https://; http:// only on loopback).",
    group: 'security',
  },
  {
    name: 'jwtAlgorithms',
    flag: 'jwt-algorithms',
    env: 'SWITCHBOARD_JWT_ALGORITHMS',
    kind: 'list',
    arg: 'LIST',
    default: 'RS256,ES256',
    description: 'Accepted JWT algorithms.',
    group: 'security',
  },
  {
    name: 'rateLimit',
    flag: 'rate-limit',
    env: 'SWITCHBOARD_RATE_LIMIT',
    kind: 'string',
    arg: 'N[/WINDOW]',
    default: '3000/min',
    description: 'Requests per user (per address on public routes), e.g. 100/10s or 5000/hour; 0 = off.',
    group: 'security',
  },
  {
    name: 'authFailureLimit',
    flag: 'auth-failure-limit',
    env: 'SWITCHBOARD_AUTH_FAILURE_LIMIT',
    kind: 'integer',
    arg: 'N',
    default: '30',
    description: 'Failed authentications per address per window before 429; 0 = off.',
    group: 'security',
  },
  {
    name: 'allowedHosts',
    flag: 'allowed-hosts',
    env: 'SWITCHBOARD_ALLOWED_HOSTS',
    kind: 'list',
    arg: 'LIST',
    default: 'loopback names only',
    description: 'Extra Host header values to accept (name or name:port; * = any); loopback names are always accepted.',
    group: 'security',
  },
  {
    name: 'allowedOrigins',
    flag: 'allowed-origins',
    env: 'SWITCHBOARD_ALLOWED_ORIGINS',
    kind: 'list',
    arg: 'LIST',
    default: 'none',
    description:
      'Extra browser origins (e.g. http://localhost:5173) allowed to change state and open the WebSocket; they also ' +
      'get CORS headers.',
    group: 'security',
  },
  {
    name: 'maxStreamsPerUser',
    flag: 'max-streams-per-user',
    env: 'SWITCHBOARD_MAX_STREAMS_PER_USER',
    kind: 'integer',
    arg: 'N',
    default: '20',
    description: 'Open WebSocket event streams per user; more answer 429; 0 = no cap.',
    group: 'security',
  },
  {
    name: 'maxLargeUploadsPerUser',
    flag: 'max-large-uploads-per-user',
    env: 'SWITCHBOARD_MAX_LARGE_UPLOADS_PER_USER',
    kind: 'integer',
    arg: 'N',
    default: '2',
    description: 'Request bodies over 1 MiB (media sends) in progress at once per user; more answer 429; 0 = no cap.',
    group: 'security',
  },
  {
    name: 'maxExportsPerUser',
    flag: 'max-exports-per-user',
    env: 'SWITCHBOARD_MAX_EXPORTS_PER_USER',
    kind: 'integer',
    arg: 'N',
    default: '2',
    description: 'Chat exports in progress at once per user; more answer 429; 0 = no cap.',
    group: 'security',
  },
  {
    name: 'waQueryPace',
    flag: 'wa-query-pace',
    env: 'SWITCHBOARD_WA_QUERY_PACE',
    kind: 'string',
    arg: 'N[/WINDOW]',
    default: '30/min',
    description:
      'Requests per connection to the routes that ask WhatsApp (number checks, groups, profiles, block list), e.g. ' +
      '10/min; more answer 429 until the pace allows one again; 0 = off.',
    group: 'security',
  },
] as const satisfies readonly SettingSpec[];

export type SettingName = (typeof SETTINGS)[number]['name'];

const BY_NAME = new Map<string, SettingSpec>(SETTINGS.map((s) => [s.name, s]));

/** The row of `name`. @throws Error for a name the table does not have (a programming error). */
export function settingSpec(name: SettingName): SettingSpec {
  const spec = BY_NAME.get(name);
  if (!spec) throw new Error(`no setting ${name}`);
  return spec;
}

/** The row of `name`, or undefined (names read from a file or a request). */
export function findSetting(name: string): SettingSpec | undefined {
  return BY_NAME.get(name);
}

/** Rows the console may edit (the settings API's fields). */
export const DESKTOP_SETTINGS: readonly SettingSpec[] = SETTINGS.filter((s: SettingSpec) => s.desktop === true);

/** Whether a change of `spec` needs a restart (every setting except the ones marked `restart: false`). */
export const needsRestart = (spec: SettingSpec): boolean => spec.restart !== false;

/** Whether `spec` may be set in settings.json. */
export const allowedInFile = (spec: SettingSpec): boolean => spec.file !== false && spec.secret !== true;

/** The options of `serve` for node:util parseArgs: one per row with a flag (string, or boolean for switches). */
export function serveParseOptions(): Record<string, { type: 'string' | 'boolean' }> {
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const s of SETTINGS as readonly SettingSpec[])
    if (s.flag) options[s.flag] = { type: s.kind === 'boolean' ? 'boolean' : 'string' };
  return options;
}

/** Parsed `serve` flags (parseArgs values, keyed by flag) → ConfigFlags-shaped values keyed by setting name. */
export function flagsFromParsed(values: Record<string, string | boolean | undefined>): Record<string, string | boolean> {
  const flags: Record<string, string | boolean> = {};
  for (const s of SETTINGS as readonly SettingSpec[]) {
    const v = s.flag ? values[s.flag] : undefined;
    if (v !== undefined) flags[s.name] = v;
  }
  return flags;
}
