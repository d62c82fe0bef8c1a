/**
 * Resolves the service's settings: each one from its command-line flag, else its `SWITCHBOARD_*` environment
 * variable, else the data dir's `settings.json`, else its default (flags > env > file > default). Which flag,
 * variable and file key belong to a setting is declared once, in config/settings-table.ts. Every value is checked
 * here, so the rest of the service trusts its config; a bad value is a ConfigError naming where it came from.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Secret } from '../secrets/secret.ts';
import { DEFAULT_CACHE_TTL_MS, DEFAULT_CURRENCY, DEFAULT_MAX_SLOTS, type BillingConfig } from './billing-settings.ts';
import { ConfigError } from './config-error.ts';
import { defaultDataDir, type PlatformInfo } from './data-dir.ts';
import { parseDatabaseUrl, type DatabaseUrl } from './database-url.ts';
import { fileValueText, readSettingsFile, type SettingsFileValues } from './settings-file.ts';
import { allowedInFile, settingSpec, type SettingName } from './settings-table.ts';

export { ConfigError };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** `pretty`: human-readable lines; `json`: one JSON object per line; `auto`: pretty when stderr is a terminal. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Settings of `switchboard serve` (and of an embedding host such as the desktop app). */
export interface ServiceConfig {
  host: string;
  /** API port; 0 picks a free one. */
  port: number;
  dataDir: string;
  /** Media files, one folder per connection (`--media-dir`, an absolute path); absent: `<dataDir>/media` (dataPaths). */
  mediaDir?: string;
  /**
   * The database (`--database`, SWITCHBOARD_DATABASE_URL), its password masked wherever it is shown
   * (config/database-url.ts); absent: the data dir's SQLite file. This build refuses a URL at start.
   */
  database?: DatabaseUrl;
  /** Test mode: an in-process sandbox instead of WhatsApp, and a separate default data dir. */
  sandbox: boolean;
  /**
   * The other mode's data dir (the live one in sandbox mode, the sandbox one in live mode) when `dataDir` is the
   * platform default (no --data-dir): a 401 for a token of that data dir says so. Absent with an explicit data dir.
   */
  otherModeDataDir?: string;
  /** Port of the in-process sandbox (sandbox mode without waUrl); 0 picks a free one. */
  sandboxPort: number;
  /** WhatsApp-protocol WebSocket URL; in sandbox mode it replaces the in-process sandbox. */
  waUrl?: string;
  /** 32-byte Noise root key of the server at waUrl (an external sandbox); never used for WhatsApp itself. */
  waRootPublicKey?: Buffer;
  logLevel: LogLevel;
  /** Log line format (default `auto`; config/logger.ts). */
  logFormat?: LogFormat;
  /** Shown as Connection.workerId. */
  workerId: string;
  /** Human-like pause before sends without skipPresence, in milliseconds. */
  typingDelayMs: { min: number; max: number };
  /** Slots and billing (issue #6); absent: the local provider with its defaults (see billingSettings). */
  billing?: BillingConfig;
  /** Webhooks may target http:// and loopback/LAN addresses (also the `allowLanWebhooks` setting); absent: off. */
  allowLanWebhooks?: boolean;
  /** Download status-post media as it arrives (issue #13); absent: only on request. */
  downloadStatusMedia?: boolean;
  /** ms a logged-in session waits for the offline-delivered marker before going online anyway; absent: 20 000. */
  onlineFallbackMs?: number;
  /** ms before webhook attempts 1–5 (first must be 0); absent: 0, 5 s, 5 min, 30 min, 2 h. */
  webhookRetryDelaysMs?: number[];
  /** Days the event log keeps events (undelivered webhook events are kept longer); absent: 7. */
  eventRetentionDays?: number;
  /** Identity-provider JWTs (interface-spec §5); absent: only API tokens are accepted. */
  jwt?: JwtSettings;
  /** Request limits of the API (interface-spec §8: thresholds are ours); absent: DEFAULT_RATE_LIMIT. */
  rateLimit?: RateLimitSettings;
  /** Extra `Host` header values accepted besides the loopback names (DNS-rebinding guard); `*` accepts any. */
  allowedHosts?: string[];
  /** Extra browser origins allowed to make state-changing requests and WebSocket upgrades (and get CORS). */
  allowedOrigins?: string[];
  /**
   * Free space the data dir must have, in MiB: below it the service refuses to start, and sessions that lost
   * storage wait for it before reconnecting; below twice it the log and the console warn. Absent: 100.
   */
  minFreeMb?: number;
  /**
   * Session worker threads (`--workers`, docs/scaling.md): 0 = the sessions run on the main thread; N ≥ 1 = a
   * pool of N threads. Absent: DEFAULT_WORKERS.
   */
  workers?: number;
  /** Open WebSocket event streams per user (0 = no cap); absent: 20. */
  maxStreamsPerUser?: number;
  /** Request bodies over 1 MiB in progress at once per user (0 = no cap); absent: 2. */
  maxLargeUploadsPerUser?: number;
  /** Chat exports in progress at once per user (0 = no cap); absent: 2. */
  maxExportsPerUser?: number;
  /** Requests to the routes that ask WhatsApp, per connection (max 0 = no pace); absent: 30/min (http/plugins/wa-query-pace.ts). */
  waQueryPace?: { max: number; windowMs: number };
  /**
   * The API's public base URL (`--public-url`, e.g. `https://wa.example.com/api`, no trailing `/`): Messages'
   * `media.url` is built from it, and its host and origin are accepted like the loopback ones. Absent: the URL
   * printed on the `API:` line.
   */
  publicUrl?: string;
}

export const DEFAULT_MIN_FREE_MB = 100;

/** Where identity-provider JWTs come from and how they are checked. */
export interface JwtSettings {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** Accepted signature algorithms (pinned); default RS256 and ES256. */
  algorithms: string[];
}

/** Rate limits: per user (authenticated) or per client address (public routes), and for failed authentications. */
export interface RateLimitSettings {
  /** Requests per window per user; 0 turns rate limiting off. */
  max: number;
  windowMs: number;
  /** Failed authentications per window per client address before further failures answer 429. */
  authFailures: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitSettings = { max: 3000, windowMs: 60_000, authFailures: 30 };
export const DEFAULT_JWT_ALGORITHMS = ['RS256', 'ES256'];
const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** Settings of `switchboard sandbox` (the protocol server alone). */
export interface SandboxServerConfig {
  host: string;
  port: number;
  dataDir: string;
  seed: boolean;
  logLevel: LogLevel;
}

/** Raw flag values as parsed from the command line (strings, unvalidated). */
export interface ConfigFlags {
  host?: string;
  port?: string;
  dataDir?: string;
  mediaDir?: string;
  database?: string;
  sandbox?: boolean;
  sandboxPort?: string;
  waUrl?: string;
  waRootKey?: string;
  logLevel?: string;
  logFormat?: string;
  workerId?: string;
  typingDelayMs?: string;
  seed?: boolean;
  billingProvider?: string;
  stripePriceId?: string;
  stripeApiBase?: string;
  billingSuccessUrl?: string;
  billingCancelUrl?: string;
  billingReturnUrl?: string;
  defaultSlots?: string;
  maxSlots?: string;
  billingCurrency?: string;
  allowLanWebhooks?: boolean;
  downloadStatusMedia?: boolean;
  onlineFallbackMs?: string;
  webhookRetryDelays?: string;
  eventRetentionDays?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  jwksUrl?: string;
  jwtAlgorithms?: string;
  rateLimit?: string;
  authFailureLimit?: string;
  allowedHosts?: string;
  allowedOrigins?: string;
  minFreeMb?: string;
  maxStreamsPerUser?: string;
  workers?: string;
  maxLargeUploadsPerUser?: string;
  maxExportsPerUser?: string;
  waQueryPace?: string;
  publicUrl?: string;
}


export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7575;
export const DEFAULT_SANDBOX_PORT = 7580;
export const DEFAULT_TYPING_DELAY_MS = { min: 800, max: 2500 };

type Env = NodeJS.ProcessEnv;

/** Where a setting's value comes from (`default`: none of the others). */
export type SettingOrigin = 'flag' | 'env' | 'file' | 'default';

interface Setting {
  value: string;
  /** Where the value came from, for error messages: `--port`, `SWITCHBOARD_PORT` or `settings.json "port"`. */
  source: string;
  origin: Exclude<SettingOrigin, 'default'>;
}

/** What the values beyond flags and environment come from (all optional). */
export interface SettingsInput {
  /** The settings file's values; absent: read from `<dataDir>/settings.json`. */
  file?: SettingsFileValues;
  /** How a file value is named in error messages; default `settings.json "NAME"`. */
  fileLabel?: (name: string) => string;
  /** The Stripe secret key from the OS keychain (used when SWITCHBOARD_STRIPE_SECRET_KEY is not set). */
  stripeSecretKey?: string;
}

/** Everything the lookup reads, in precedence order. */
interface Sources {
  flags: ConfigFlags;
  env: Env;
  file: SettingsFileValues;
  fileLabel: (name: string) => string;
  stripeSecretKey?: string;
}

const defaultFileLabel = (name: string) => `settings.json "${name}"`;

function sourcesOf(flags: ConfigFlags, env: Env, input: SettingsInput = {}, file: SettingsFileValues = {}): Sources {
  return {
    flags,
    env,
    file: input.file ?? file,
    fileLabel: input.fileLabel ?? defaultFileLabel,
    ...(input.stripeSecretKey !== undefined && { stripeSecretKey: input.stripeSecretKey }),
  };
}

/** The value of setting `name` by precedence: its flag, its environment variable, the settings file; else undefined. */
function setting(src: Sources, name: SettingName): Setting | undefined {
  const spec = settingSpec(name);
  const flag = (src.flags as Record<string, string | boolean | undefined>)[name];
  if (spec.flag && flag !== undefined && flag !== false) return { value: String(flag), source: `--${spec.flag}`, origin: 'flag' };
  const fromEnv = src.env[spec.env];
  if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: spec.env, origin: 'env' };
  if (allowedInFile(spec) && Object.hasOwn(src.file, name)) {
    const label = src.fileLabel(name);
    return { value: fileValueText(spec, src.file[name], label), source: label, origin: 'file' };
  }
  return undefined;
}

/** The settings the console edits, as these sources set them (the desktop subset of the table), with their origins. */
export interface DesktopSettingValues {
  port: number;
  allowLanWebhooks: boolean;
  workerId: string;
  billingProvider: 'local' | 'stripe';
  stripePriceId: string | null;
}

/**
 * The desktop-editable settings these flags, environment and file values give (defaults for the rest), and where
 * each comes from. Values are parsed like resolveServiceConfig does. @throws ConfigError for unusable values
 */
export function desktopSettingValues(
  flags: ConfigFlags,
  env: Env,
  file: SettingsFileValues,
  fileLabel?: (name: string) => string,
): { values: DesktopSettingValues; origins: Record<keyof DesktopSettingValues, SettingOrigin> } {
  const src = sourcesOf(flags, env, { file, ...(fileLabel && { fileLabel }) });
  const provider = setting(src, 'billingProvider');
  const providerValue = provider?.value.toLowerCase() ?? (env.SWITCHBOARD_STRIPE_SECRET_KEY?.trim() ? 'stripe' : 'local');
  if (providerValue !== 'local' && providerValue !== 'stripe') throw invalid(provider!, 'expected local or stripe');
  const names = ['port', 'allowLanWebhooks', 'workerId', 'billingProvider', 'stripePriceId'] as const;
  return {
    values: {
      port: parsePort(setting(src, 'port'), DEFAULT_PORT),
      allowLanWebhooks: parseBool(setting(src, 'allowLanWebhooks')),
      workerId: parseName(setting(src, 'workerId'), 'local'),
      billingProvider: providerValue,
      stripePriceId: setting(src, 'stripePriceId')?.value ?? null,
    },
    origins: Object.fromEntries(names.map((n) => [n, setting(src, n)?.origin ?? 'default'])) as Record<
      keyof DesktopSettingValues,
      SettingOrigin
    >,
  };
}

/** A value outside the table (the `sandbox` command's own port variable). */
function plainSetting(flag: string | undefined, flagName: string, env: Env, envName: string): Setting | undefined {
  if (flag !== undefined) return { value: flag, source: `--${flagName}`, origin: 'flag' };
  const fromEnv = env[envName];
  return fromEnv !== undefined && fromEnv !== '' ? { value: fromEnv, source: envName, origin: 'env' } : undefined;
}

function invalid(s: Setting, expected: string): ConfigError {
  return new ConfigError(`invalid ${s.source} value ${JSON.stringify(s.value)}: ${expected}`);
}

function parsePort(s: Setting | undefined, fallback: number): number {
  if (!s) return fallback;
  const n = Number(s.value);
  if (!/^\d+$/.test(s.value) || n > 65535) throw invalid(s, 'expected a port number 0-65535');
  return n;
}

function parseBool(s: Setting | undefined): boolean {
  if (!s) return false;
  if (/^(1|true|yes|on)$/i.test(s.value)) return true;
  if (/^(0|false|no|off)$/i.test(s.value)) return false;
  throw invalid(s, 'expected true or false');
}

function parseLogFormat(s: Setting | undefined): LogFormat {
  if (!s) return 'auto';
  const format = LOG_FORMATS.find((f) => f === s.value.toLowerCase());
  if (!format) throw invalid(s, `expected one of ${LOG_FORMATS.join(', ')}`);
  return format;
}

function parseLogLevel(s: Setting | undefined): LogLevel {
  if (!s) return 'info';
  const level = LOG_LEVELS.find((l) => l === s.value.toLowerCase());
  if (!level) throw invalid(s, `expected one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/** `"800-2500"` → {800, 2500}; `"1000"` → {1000, 1000}; `"0"` turns the pause off. */
function parseDelayRange(s: Setting | undefined): { min: number; max: number } {
  if (!s) return { ...DEFAULT_TYPING_DELAY_MS };
  const m = /^(\d+)(?:-(\d+))?$/.exec(s.value.trim());
  const min = m ? Number(m[1]) : NaN;
  const max = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(min <= max) || max > 600_000)
    throw invalid(s, 'expected milliseconds as MIN-MAX (e.g. 800-2500) or one number');
  return { min, max };
}

function parseWsUrl(s: Setting | undefined): string | undefined {
  if (!s) return undefined;
  let url: URL;
  try {
    url = new URL(s.value);
  } catch {
    throw invalid(s, 'expected a ws:// or wss:// URL');
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw invalid(s, 'expected a ws:// or wss:// URL');
  return url.href;
}

/** A 32-byte key given as base64 or hex. */
function parseRootKey(s: Setting | undefined): Buffer | undefined {
  if (!s) return undefined;
  const v = s.value.trim();
  const key = /^[0-9a-f]{64}$/i.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  if (key.length !== 32) throw invalid(s, 'expected a 32-byte key in base64 or hex');
  return key;
}

function parseName(s: Setting | undefined, fallback: string): string {
  if (!s) return fallback;
  if (!/^[\w.-]{1,64}$/.test(s.value)) throw invalid(s, 'expected 1-64 letters, digits, "_", "-" or "."');
  return s.value;
}

/**
 * Session worker threads when `--workers` is not given: the machine's available parallelism
 * (`os.availableParallelism()`, at least 1), so the sessions use every core while the main thread keeps HTTP, the
 * event stream and webhooks (docs/scaling.md). `--workers 0` keeps the sessions on the main thread.
 */
export const DEFAULT_WORKERS = Math.max(1, availableParallelism());
/** More threads than this gain nothing on any machine this runs on and cost ~70 MB each. */
const MAX_WORKERS = 256;

function parseWorkers(s: Setting): number {
  const n = parseCount(s, DEFAULT_WORKERS);
  if (n > MAX_WORKERS) throw invalid(s, `expected 0-${MAX_WORKERS}`);
  return n;
}

function parseCount(s: Setting | undefined, fallback: number): number {
  if (!s) return fallback;
  if (!/^\d{1,9}$/.test(s.value)) throw invalid(s, 'expected a whole number');
  return Number(s.value);
}

/** `"600/min"`, `"100/10s"`, `"5000/hour"` or `"600"` (per minute); `"0"` turns limiting off. */
function parseRate(s: Setting | undefined): { max: number; windowMs: number } {
  if (!s) return { max: DEFAULT_RATE_LIMIT.max, windowMs: DEFAULT_RATE_LIMIT.windowMs };
  const m = /^(\d{1,9})(?:\/(\d{1,6})?(s|sec|second|m|min|minute|h|hour))?$/.exec(s.value.trim());
  if (!m) throw invalid(s, 'expected REQUESTS[/WINDOW], e.g. 600/min, 100/10s, 5000/hour');
  const unit = { s: 1000, sec: 1000, second: 1000, m: 60_000, min: 60_000, minute: 60_000, h: 3_600_000, hour: 3_600_000 }[
    (m[3] ?? 'min') as 'min'
  ];
  const windowMs = Number(m[2] ?? 1) * unit;
  if (windowMs === 0) throw invalid(s, 'the window must be longer than 0');
  return { max: Number(m[1]), windowMs };
}

/** An absolute http(s) URL without credentials, query or fragment; returned without trailing slashes. */
function parsePublicUrl(s: Setting | undefined): string | undefined {
  if (!s) return undefined;
  const expected = 'expected the API\'s public base URL: http:// or https://, no query, fragment or credentials (e.g. https://wa.example.com/api)';
  let url: URL;
  try {
    url = new URL(s.value.trim());
  } catch {
    throw invalid(s, expected);
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || /[?#]/.test(s.value)) throw invalid(s, expected);
  return url.href.replace(/\/+$/, '');
}

function parseList(s: Setting | undefined): string[] {
  return s ? s.value.split(',').map((v) => v.trim()).filter((v) => v !== '') : [];
}

/** Origins as `scheme://host[:port]`, compared exactly (no wildcards, no paths). */
function parseOrigins(s: Setting | undefined): string[] {
  return parseList(s).map((v) => {
    let url: URL | undefined;
    try {
      url = new URL(v);
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== v.replace(/\/$/, ''))
      throw invalid(s!, `expected origins like http://localhost:5173, not ${JSON.stringify(v)}`);
    return url.origin;
  });
}

function parseHosts(s: Setting | undefined): string[] {
  return parseList(s).map((v) => {
    if (v !== '*' && !/^(\[[0-9a-fA-F:.]+\]|[\w.-]+)(:\d{1,5})?$/.test(v))
      throw invalid(s!, `expected host names like myhost.local or myhost.local:7575, not ${JSON.stringify(v)}`);
    return v.toLowerCase();
  });
}

function parseJwt(src: Sources): JwtSettings | undefined {
  const issuer = setting(src, 'jwtIssuer');
  const audience = setting(src, 'jwtAudience');
  const jwks = setting(src, 'jwksUrl');
  const algs = setting(src, 'jwtAlgorithms');
  if (!issuer && !audience && !jwks) {
    if (algs) throw new ConfigError(`${algs.source} needs --jwt-issuer, --jwt-audience and --jwks-url`);
    return undefined;
  }
  if (!issuer || !audience || !jwks)
    throw new ConfigError('identity-provider JWTs need all of --jwt-issuer, --jwt-audience and --jwks-url');
  let url: URL;
  try {
    url = new URL(jwks.value);
  } catch {
    throw invalid(jwks, 'expected an https:// URL');
  }
  const loopback = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw invalid(jwks, 'expected an https:// URL (http:// only on loopback)');
  const algorithms = algs ? parseList(algs) : [...DEFAULT_JWT_ALGORITHMS];
  const bad = algorithms.find((a) => !JWT_ALGORITHMS.includes(a));
  if (bad !== undefined || algorithms.length === 0)
    throw invalid(algs!, `expected a comma-separated list of ${JWT_ALGORITHMS.join(', ')}`);
  return { issuer: issuer.value, audience: audience.value, jwksUrl: url.href, algorithms };
}

/** `"0,5000,300000,1800000,7200000"`: exactly 5 non-negative ms values, the first 0 (attempt 1 is immediate). */
function parseRetryDelays(s: Setting | undefined): number[] | undefined {
  if (!s) return undefined;
  const parts = s.value.split(',').map((p) => p.trim());
  if (parts.length !== 5 || !parts.every((p) => /^\d{1,9}$/.test(p)) || Number(parts[0]) !== 0) {
    throw invalid(s, 'expected 5 comma-separated millisecond delays before attempts 1-5, the first 0 (e.g. 0,50,100,200,400)');
  }
  return parts.map(Number);
}

function parseRetentionDays(s: Setting | undefined): number | undefined {
  if (!s) return undefined;
  const n = Number(s.value);
  if (!/^\d+(\.\d+)?$/.test(s.value.trim()) || n <= 0 || n > 3650) throw invalid(s, 'expected a number of days > 0');
  return n;
}

/**
 * The data dir: `--data-dir` / `SWITCHBOARD_DATA_DIR` as given (in either mode), else the platform default,
 * under `sandbox/` in sandbox mode.
 */
export function resolveDataDir(
  flags: Pick<ConfigFlags, 'dataDir'>,
  sandbox: boolean,
  env: Env = process.env,
  platform?: PlatformInfo,
): string {
  const s = setting(sourcesOf(flags, env), 'dataDir');
  return s ? s.value : defaultDataDir(sandbox, platform);
}

/**
 * The database of `--database` / SWITCHBOARD_DATABASE_URL (never the settings file), or undefined for the data dir's
 * SQLite file; for `serve` and the CLI commands on the store (`token`, `user`). The value is never repeated in an error.
 * @throws ConfigError for a value that is not a postgres:// URL
 */
export function resolveDatabase(flags: Pick<ConfigFlags, 'database'>, env: Env = process.env): DatabaseUrl | undefined {
  return databaseFrom(sourcesOf(flags, env));
}

function databaseFrom(src: Sources): DatabaseUrl | undefined {
  const s = setting(src, 'database');
  return s ? parseDatabaseUrl(s.value, s.source) : undefined;
}

/** A directory path, made absolute against the working directory. */
function parseDirectory(s: Setting | undefined): string | undefined {
  if (!s) return undefined;
  if (s.value.trim() === '' || s.value.includes('\0')) throw invalid(s, 'expected a directory path');
  return path.resolve(s.value);
}

/** Whether sandbox mode is on: `--sandbox` or `SWITCHBOARD_SANDBOX=1` (never the settings file). @throws ConfigError */
export function resolveSandboxMode(flags: Pick<ConfigFlags, 'sandbox'>, env: Env = process.env): boolean {
  return parseBool(setting(sourcesOf(flags, env), 'sandbox'));
}

/**
 * Settings of `serve`: every row of config/settings-table.ts, each from its flag, environment variable, the
 * settings file (`input.file`, else `<dataDir>/settings.json`) or its default.
 * @throws ConfigError naming the flag, variable or file key that holds an unusable value.
 */
export function resolveServiceConfig(
  flags: ConfigFlags,
  env: Env = process.env,
  platform?: PlatformInfo,
  input: SettingsInput = {},
): ServiceConfig {
  const sandbox = resolveSandboxMode(flags, env);
  const dataDir = resolveDataDir(flags, sandbox, env, platform);
  const defaultDir = !setting(sourcesOf(flags, env), 'dataDir');
  const src = sourcesOf(flags, env, input, input.file ? undefined : readSettingsFile(dataDir));
  const waUrlSetting = setting(src, 'waUrl');
  const waUrl = parseWsUrl(waUrlSetting);
  const waRootPublicKey = parseRootKey(setting(src, 'waRootKey'));
  if (waRootPublicKey && !waUrl) throw new ConfigError('--wa-root-key needs --wa-url (the server it belongs to)');
  // Live mode is sealed (docs/architecture.md § Sandbox trust): only a sandbox may be reached at another address or
  // with another trust anchor.
  if (!sandbox && waUrl) {
    throw new ConfigError(
      `${waUrlSetting!.source} is for sandbox mode only (live mode always connects to WhatsApp itself); add --sandbox to use a sandbox at that address`,
    );
  }
  const publicUrl = parsePublicUrl(setting(src, 'publicUrl'));
  const workers = setting(src, 'workers');
  const mediaDir = parseDirectory(setting(src, 'mediaDir'));
  const database = databaseFrom(src);
  return {
    host: setting(src, 'host')?.value ?? DEFAULT_HOST,
    port: parsePort(setting(src, 'port'), DEFAULT_PORT),
    dataDir,
    ...(mediaDir && { mediaDir }),
    ...(database && { database }),
    ...(defaultDir && { otherModeDataDir: defaultDataDir(!sandbox, platform) }),
    sandbox,
    sandboxPort: parsePort(setting(src, 'sandboxPort'), 0),
    ...(waUrl && { waUrl }),
    ...(waRootPublicKey && { waRootPublicKey }),
    logLevel: parseLogLevel(setting(src, 'logLevel')),
    logFormat: parseLogFormat(setting(src, 'logFormat')),
    workerId: parseName(setting(src, 'workerId'), 'local'),
    typingDelayMs: parseDelayRange(setting(src, 'typingDelayMs')),
    minFreeMb: parseCount(setting(src, 'minFreeMb'), DEFAULT_MIN_FREE_MB),
    ...(workers && { workers: parseWorkers(workers) }),
    ...(publicUrl && { publicUrl }),
    ...webhookSettings(src),
    ...messageSettings(src),
    ...securityFrom(src),
    ...userCapsFrom(src),
    ...billingFrom(src),
  };
}

/**
 * The API-security settings of `serve`: SWITCHBOARD_JWT_ISSUER, _JWT_AUDIENCE, _JWKS_URL, _JWT_ALGORITHMS,
 * _RATE_LIMIT, _AUTH_FAILURE_LIMIT, _ALLOWED_HOSTS, _ALLOWED_ORIGINS. @throws ConfigError
 */
export function security(
  flags: ConfigFlags,
  env: Env = process.env,
  input: SettingsInput = {},
): Pick<ServiceConfig, 'jwt' | 'rateLimit' | 'allowedHosts' | 'allowedOrigins'> {
  return securityFrom(sourcesOf(flags, env, input));
}

function securityFrom(src: Sources): Pick<ServiceConfig, 'jwt' | 'rateLimit' | 'allowedHosts' | 'allowedOrigins'> {
  const jwt = parseJwt(src);
  const rate = setting(src, 'rateLimit');
  const failures = setting(src, 'authFailureLimit');
  const allowedHosts = parseHosts(setting(src, 'allowedHosts'));
  const allowedOrigins = parseOrigins(setting(src, 'allowedOrigins'));
  // Only what was configured appears, so the defaults live in one place (DEFAULT_RATE_LIMIT, the HTTP plugins).
  return {
    ...(jwt && { jwt }),
    ...((rate || failures) && {
      rateLimit: { ...parseRate(rate), authFailures: parseCount(failures, DEFAULT_RATE_LIMIT.authFailures) },
    }),
    ...(allowedHosts.length > 0 && { allowedHosts }),
    ...(allowedOrigins.length > 0 && { allowedOrigins }),
  };
}

type UserCapSettings = 'maxStreamsPerUser' | 'maxLargeUploadsPerUser' | 'maxExportsPerUser' | 'waQueryPace';

/**
 * Per-user caps and the per-connection pace of WhatsApp queries of `serve`; only the ones set appear (env
 * SWITCHBOARD_MAX_STREAMS_PER_USER, _MAX_LARGE_UPLOADS_PER_USER, _MAX_EXPORTS_PER_USER, _WA_QUERY_PACE; defaults in
 * http/plugins/user-caps.ts and wa-query-pace.ts). @throws ConfigError
 */
export function userCaps(flags: ConfigFlags, env: Env = process.env, input: SettingsInput = {}): Pick<ServiceConfig, UserCapSettings> {
  return userCapsFrom(sourcesOf(flags, env, input));
}

function userCapsFrom(src: Sources): Pick<ServiceConfig, UserCapSettings> {
  const streams = setting(src, 'maxStreamsPerUser');
  const uploads = setting(src, 'maxLargeUploadsPerUser');
  const exports = setting(src, 'maxExportsPerUser');
  const pace = setting(src, 'waQueryPace');
  return {
    ...(streams && { maxStreamsPerUser: parseCount(streams, 0) }),
    ...(uploads && { maxLargeUploadsPerUser: parseCount(uploads, 0) }),
    ...(exports && { maxExportsPerUser: parseCount(exports, 0) }),
    ...(pace && { waQueryPace: parseRate(pace) }),
  };
}

/** Webhook and event-log settings; only the ones set appear (env SWITCHBOARD_ALLOW_LAN_WEBHOOKS, _WEBHOOK_RETRY_DELAYS, _EVENT_RETENTION_DAYS). */
function webhookSettings(src: Sources): Pick<ServiceConfig, 'allowLanWebhooks' | 'webhookRetryDelaysMs' | 'eventRetentionDays'> {
  const allowLan = parseBool(setting(src, 'allowLanWebhooks'));
  const delays = parseRetryDelays(setting(src, 'webhookRetryDelays'));
  const retention = parseRetentionDays(setting(src, 'eventRetentionDays'));
  return {
    ...(allowLan && { allowLanWebhooks: true }),
    ...(delays && { webhookRetryDelaysMs: delays }),
    ...(retention !== undefined && { eventRetentionDays: retention }),
  };
}

/** Message ingestion settings (issue #13); only the ones set appear (env SWITCHBOARD_DOWNLOAD_STATUS_MEDIA, _ONLINE_FALLBACK_MS). */
function messageSettings(src: Sources): Pick<ServiceConfig, 'downloadStatusMedia' | 'onlineFallbackMs'> {
  const statusMedia = parseBool(setting(src, 'downloadStatusMedia'));
  const fallback = setting(src, 'onlineFallbackMs');
  let onlineFallbackMs: number | undefined;
  if (fallback) {
    onlineFallbackMs = Number(fallback.value);
    if (!/^\d+$/.test(fallback.value) || onlineFallbackMs < 1000 || onlineFallbackMs > 600_000) {
      throw invalid(fallback, 'expected milliseconds between 1000 and 600000');
    }
  }
  return {
    ...(statusMedia && { downloadStatusMedia: true }),
    ...(onlineFallbackMs !== undefined && { onlineFallbackMs }),
  };
}

/**
 * Settings of `switchboard sandbox`: SWITCHBOARD_HOST, SWITCHBOARD_SANDBOX_PORT (default 7580), SWITCHBOARD_DATA_DIR
 * (default: the sandbox data dir), SWITCHBOARD_LOG_LEVEL.
 * @throws ConfigError
 */
export function resolveSandboxServerConfig(
  flags: ConfigFlags,
  env: Env = process.env,
  platform?: PlatformInfo,
): SandboxServerConfig {
  return {
    host: plainSetting(flags.host, 'host', env, 'SWITCHBOARD_HOST')?.value ?? DEFAULT_HOST,
    port: parsePort(plainSetting(flags.port, 'port', env, 'SWITCHBOARD_SANDBOX_PORT'), DEFAULT_SANDBOX_PORT),
    dataDir: resolveDataDir(flags, true, env, platform),
    seed: flags.seed === true,
    logLevel: parseLogLevel(plainSetting(flags.logLevel, 'log-level', env, 'SWITCHBOARD_LOG_LEVEL')),
  };
}

function parseSlots(s: Setting | undefined, fallback: number, min: number, max: number): number {
  if (!s) return fallback;
  const n = Number(s.value);
  if (!/^\d{1,9}$/.test(s.value) || n < min || n > max) throw invalid(s, `expected a whole number ${min}-${max}`);
  return n;
}

/** An http(s) URL; `http://` only for loopback hosts when `loopbackHttpOnly`. */
function parseHttpUrl(s: Setting | undefined, loopbackHttpOnly: boolean): string | undefined {
  if (!s) return undefined;
  let url: URL;
  try {
    url = new URL(s.value);
  } catch {
    throw invalid(s, 'expected an http:// or https:// URL');
  }
  const loopback = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(url.hostname);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid(s, 'expected an http:// or https:// URL');
  if (loopbackHttpOnly && url.protocol === 'http:' && !loopback)
    throw invalid(s, 'expected an https:// URL (http:// only on loopback)');
  return s.value;
}

/**
 * Billing settings of `serve` (issue #6): the billing rows of config/settings-table.ts. The provider defaults to
 * stripe when SWITCHBOARD_STRIPE_SECRET_KEY is set, else local. The Stripe secret key comes from
 * SWITCHBOARD_STRIPE_SECRET_KEY (never a flag, so it never shows in a process list), else `input.stripeSecretKey`
 * (the OS keychain, read by loadServiceConfig); it is never echoed in errors.
 * Only what was configured appears; nothing configured means the local provider with its defaults.
 * @throws ConfigError
 */
export function billingSettings(flags: ConfigFlags, env: Env = process.env, input: SettingsInput = {}): Pick<ServiceConfig, 'billing'> {
  return billingFrom(sourcesOf(flags, env, input));
}

/** The billing provider these sources choose before any key is read (`stripe` only when asked for by name). */
export function requestedBillingProvider(flags: ConfigFlags, env: Env, file: SettingsFileValues): string | undefined {
  return setting(sourcesOf(flags, env, { file }), 'billingProvider')?.value.toLowerCase();
}

/** Where the Stripe key of a stripe provider is looked for, for messages. */
export const STRIPE_KEY_HINT = "SWITCHBOARD_STRIPE_SECRET_KEY (or a key stored in the OS keychain from the console's Settings)";

function billingFrom(src: Sources): Pick<ServiceConfig, 'billing'> {
  const providerS = setting(src, 'billingProvider');
  const envKey = src.env.SWITCHBOARD_STRIPE_SECRET_KEY?.trim() || undefined;
  const keyValue = envKey ?? (src.stripeSecretKey?.trim() || undefined);
  const keySource = envKey ? 'SWITCHBOARD_STRIPE_SECRET_KEY' : 'the Stripe key in the OS keychain';
  const priceS = setting(src, 'stripePriceId');
  const apiBaseS = setting(src, 'stripeApiBase');
  const successS = setting(src, 'billingSuccessUrl');
  const cancelS = setting(src, 'billingCancelUrl');
  const returnS = setting(src, 'billingReturnUrl');
  const defaultS = setting(src, 'defaultSlots');
  const maxS = setting(src, 'maxSlots');
  const currencyS = setting(src, 'billingCurrency');
  const cacheS = setting(src, 'billingCacheMs');
  const all = [providerS, priceS, apiBaseS, successS, cancelS, returnS, defaultS, maxS, currencyS, cacheS];
  if (!keyValue && all.every((s) => s === undefined)) return {};

  let provider: BillingConfig['provider'] = keyValue ? 'stripe' : 'local';
  if (providerS) {
    const v = providerS.value.toLowerCase();
    if (v !== 'local' && v !== 'stripe') throw invalid(providerS, 'expected local or stripe');
    provider = v;
  }
  const maxSlots = parseSlots(maxS, DEFAULT_MAX_SLOTS, 1, 1_000_000);
  const defaultSlots = parseSlots(defaultS, Math.min(DEFAULT_MAX_SLOTS, maxSlots), 0, maxSlots);
  let currency = DEFAULT_CURRENCY;
  if (currencyS) {
    if (!/^[a-z]{3}$/i.test(currencyS.value)) throw invalid(currencyS, 'expected a 3-letter currency code such as usd');
    currency = currencyS.value.toLowerCase();
  }
  const cacheTtlMs = parseSlots(cacheS, DEFAULT_CACHE_TTL_MS, 0, 3_600_000);
  const billing: BillingConfig = { provider, maxSlots, defaultSlots, currency, cacheTtlMs };
  if (provider === 'stripe') {
    // The key's value never appears in a message.
    if (!keyValue) throw new ConfigError(`the stripe billing provider needs ${STRIPE_KEY_HINT}`);
    if (!isStripeSecretKey(keyValue))
      throw new ConfigError(`invalid ${keySource}: expected a Stripe secret key (sk_test_…, sk_live_…, rk_…)`);
    if (!priceS) throw new ConfigError('the stripe billing provider needs --stripe-price-id (the per-slot price)');
    if (!/^[\w-]{1,255}$/.test(priceS.value)) throw invalid(priceS, 'expected a Stripe price id such as price_123');
    const apiBase = parseHttpUrl(apiBaseS, true);
    const successUrl = parseHttpUrl(successS, false);
    const cancelUrl = parseHttpUrl(cancelS, false);
    const returnUrl = parseHttpUrl(returnS, false);
    billing.stripe = {
      secretKey: new Secret(keyValue),
      priceId: priceS.value,
      ...(apiBase && { apiBase }),
      ...(successUrl && { successUrl }),
      ...(cancelUrl && { cancelUrl }),
      ...(returnUrl && { returnUrl }),
    };
  }
  return { billing };
}

/** Whether `key` has the shape of a Stripe secret or restricted key (`sk_test_…`, `sk_live_…`, `rk_…`). */
export function isStripeSecretKey(key: string): boolean {
  return /^(sk|rk)_(test|live)_\S+$/.test(key);
}

/** Variables that point the service at another WhatsApp-protocol server or trust anchor (sandbox mode only). */
export const SANDBOX_ONLY_VARIABLES = ['SWITCHBOARD_WA_URL', 'SWITCHBOARD_WA_ROOT_KEY'] as const;

/**
 * Clears the sandbox-only variables from `env` (the packaged desktop app calls this at start, docs/architecture.md §
 * Sandbox trust: live mode cannot be redirected). Returns the names it removed, for one warning line.
 */
export function clearSandboxOnlyVariables(env: Env = process.env): string[] {
  const removed = SANDBOX_ONLY_VARIABLES.filter((name) => env[name] !== undefined);
  for (const name of removed) delete env[name];
  return removed;
}
