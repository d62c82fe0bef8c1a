/**
 * Resolves the service's settings from command-line flags, then `SWITCHBOARD_*` environment variables,
 * then defaults (flags win). Every value is checked here, so the rest of the service trusts its config.
 */
import { defaultDataDir, type PlatformInfo } from './data-dir.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Settings of `switchboard serve` (and of an embedding host such as the desktop app). */
export interface ServiceConfig {
  host: string;
  /** API port; 0 picks a free one. */
  port: number;
  dataDir: string;
  /** Test mode: an in-process sandbox instead of WhatsApp, and a separate default data dir. */
  sandbox: boolean;
  /** Port of the in-process sandbox (sandbox mode without waUrl); 0 picks a free one. */
  sandboxPort: number;
  /** WhatsApp-protocol WebSocket URL; in sandbox mode it replaces the in-process sandbox. */
  waUrl?: string;
  /** 32-byte Noise root key of the server at waUrl (an external sandbox); never used for WhatsApp itself. */
  waRootPublicKey?: Buffer;
  logLevel: LogLevel;
  /** Shown as Connection.workerId. */
  workerId: string;
  /** Human-like pause before sends without skipPresence, in milliseconds. */
  typingDelayMs: { min: number; max: number };
}

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
  sandbox?: boolean;
  sandboxPort?: string;
  waUrl?: string;
  waRootKey?: string;
  logLevel?: string;
  workerId?: string;
  typingDelayMs?: string;
  seed?: boolean;
}

/** A flag or environment value that cannot be used; the CLI reports it as a usage error. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7575;
export const DEFAULT_SANDBOX_PORT = 7580;
export const DEFAULT_TYPING_DELAY_MS = { min: 800, max: 2500 };

type Env = NodeJS.ProcessEnv;

interface Setting {
  value: string;
  /** Where the value came from, for error messages: `--port` or `SWITCHBOARD_PORT`. */
  source: string;
}

function setting(flag: string | undefined, flagName: string, env: Env, envName: string): Setting | undefined {
  if (flag !== undefined) return { value: flag, source: `--${flagName}` };
  const fromEnv = env[envName];
  return fromEnv !== undefined && fromEnv !== '' ? { value: fromEnv, source: envName } : undefined;
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
 * The data dir: `--data-dir` / `SWITCHBOARD_DATA_DIR` as given (in either mode), else the platform default,
 * under `sandbox/` in sandbox mode.
 */
export function resolveDataDir(
  flags: Pick<ConfigFlags, 'dataDir'>,
  sandbox: boolean,
  env: Env = process.env,
  platform?: PlatformInfo,
): string {
  const s = setting(flags.dataDir, 'data-dir', env, 'SWITCHBOARD_DATA_DIR');
  return s ? s.value : defaultDataDir(sandbox, platform);
}

/** Whether sandbox mode is on: `--sandbox` or `SWITCHBOARD_SANDBOX=1`. @throws ConfigError */
export function resolveSandboxMode(flags: Pick<ConfigFlags, 'sandbox'>, env: Env = process.env): boolean {
  return flags.sandbox === true || parseBool(setting(undefined, 'sandbox', env, 'SWITCHBOARD_SANDBOX'));
}

/**
 * Settings of `serve`. Env: SWITCHBOARD_HOST, _PORT, _DATA_DIR, _SANDBOX, _SANDBOX_PORT, _WA_URL, _WA_ROOT_KEY,
 * _LOG_LEVEL, _WORKER_ID, _TYPING_DELAY_MS.
 * @throws ConfigError naming the flag or variable that holds an unusable value.
 */
export function resolveServiceConfig(
  flags: ConfigFlags,
  env: Env = process.env,
  platform?: PlatformInfo,
): ServiceConfig {
  const sandbox = resolveSandboxMode(flags, env);
  const waUrl = parseWsUrl(setting(flags.waUrl, 'wa-url', env, 'SWITCHBOARD_WA_URL'));
  const waRootPublicKey = parseRootKey(setting(flags.waRootKey, 'wa-root-key', env, 'SWITCHBOARD_WA_ROOT_KEY'));
  if (waRootPublicKey && !waUrl) throw new ConfigError('--wa-root-key needs --wa-url (the server it belongs to)');
  return {
    host: setting(flags.host, 'host', env, 'SWITCHBOARD_HOST')?.value ?? DEFAULT_HOST,
    port: parsePort(setting(flags.port, 'port', env, 'SWITCHBOARD_PORT'), DEFAULT_PORT),
    dataDir: resolveDataDir(flags, sandbox, env, platform),
    sandbox,
    sandboxPort: parsePort(setting(flags.sandboxPort, 'sandbox-port', env, 'SWITCHBOARD_SANDBOX_PORT'), 0),
    ...(waUrl && { waUrl }),
    ...(waRootPublicKey && { waRootPublicKey }),
    logLevel: parseLogLevel(setting(flags.logLevel, 'log-level', env, 'SWITCHBOARD_LOG_LEVEL')),
    workerId: parseName(setting(flags.workerId, 'worker-id', env, 'SWITCHBOARD_WORKER_ID'), 'local'),
    typingDelayMs: parseDelayRange(setting(flags.typingDelayMs, 'typing-delay-ms', env, 'SWITCHBOARD_TYPING_DELAY_MS')),
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
    host: setting(flags.host, 'host', env, 'SWITCHBOARD_HOST')?.value ?? DEFAULT_HOST,
    port: parsePort(setting(flags.port, 'port', env, 'SWITCHBOARD_SANDBOX_PORT'), DEFAULT_SANDBOX_PORT),
    dataDir: resolveDataDir(flags, true, env, platform),
    seed: flags.seed === true,
    logLevel: parseLogLevel(setting(flags.logLevel, 'log-level', env, 'SWITCHBOARD_LOG_LEVEL')),
  };
}
