/** Config resolution: platform data dirs, sandbox separation, flags > env > defaults, and rejected values. */
import { describe, expect, it } from 'vitest';
import { dataPaths, defaultDataDir } from '../../service/config/data-dir.ts';
import {
  clearSandboxOnlyVariables,
  ConfigError,
  resolveDataDir,
  resolveSandboxServerConfig,
  resolveServiceConfig,
} from '../../service/config/service-config.ts';

const linux = { platform: 'linux' as const, env: {}, homedir: '/home/ann' };

describe('defaultDataDir', () => {
  it.each([
    [linux, '/home/ann/.local/share/switchboard'],
    [{ ...linux, env: { XDG_DATA_HOME: '/data' } }, '/data/switchboard'],
    [{ ...linux, env: { XDG_DATA_HOME: 'relative/ignored' } }, '/home/ann/.local/share/switchboard'],
    [
      { platform: 'darwin' as const, env: {}, homedir: '/Users/ann' },
      '/Users/ann/Library/Application Support/Switchboard',
    ],
    [
      { platform: 'win32' as const, env: { APPDATA: 'C:\\Users\\ann\\AppData\\Roaming' }, homedir: 'C:\\Users\\ann' },
      'C:\\Users\\ann\\AppData\\Roaming\\Switchboard',
    ],
  ])('%j → %s (live), <that>/sandbox (sandbox)', (platform, expected) => {
    expect(defaultDataDir(false, platform)).toBe(expected);
    const sep = platform.platform === 'win32' ? '\\' : '/';
    expect(defaultDataDir(true, platform)).toBe(`${expected}${sep}sandbox`);
  });

  it('lays out media and sandbox state inside the data dir', () => {
    expect(dataPaths('/d')).toEqual({ mediaDir: '/d/media', sandboxServerDir: '/d/sandbox-server' });
  });
});

describe('resolveServiceConfig', () => {
  it('uses the defaults', () => {
    expect(resolveServiceConfig({}, {}, linux)).toEqual({
      host: '127.0.0.1',
      port: 7575,
      dataDir: '/home/ann/.local/share/switchboard',
      otherModeDataDir: '/home/ann/.local/share/switchboard/sandbox',
      sandbox: false,
      sandboxPort: 0,
      logLevel: 'info',
      logFormat: 'auto',
      workerId: 'local',
      typingDelayMs: { min: 800, max: 2500 },
      minFreeMb: 100,
    });
  });

  it('takes env over defaults and flags over env', () => {
    const env = {
      SWITCHBOARD_HOST: '0.0.0.0',
      SWITCHBOARD_PORT: '8000',
      SWITCHBOARD_DATA_DIR: '/env/dir',
      SWITCHBOARD_LOG_LEVEL: 'DEBUG',
      SWITCHBOARD_SANDBOX: '1',
      SWITCHBOARD_WA_URL: 'ws://127.0.0.1:7580/ws/chat',
      SWITCHBOARD_TYPING_DELAY_MS: '0',
      SWITCHBOARD_WORKER_ID: 'w1',
    };
    expect(resolveServiceConfig({}, env, linux)).toMatchObject({
      host: '0.0.0.0',
      port: 8000,
      dataDir: '/env/dir',
      logLevel: 'debug',
      waUrl: 'ws://127.0.0.1:7580/ws/chat',
      typingDelayMs: { min: 0, max: 0 },
      workerId: 'w1',
    });
    expect(
      resolveServiceConfig(
        { host: '::1', port: '0', dataDir: '/flag/dir', logLevel: 'warn', typingDelayMs: '100-200' },
        env,
        linux,
      ),
    ).toMatchObject({
      host: '::1',
      port: 0,
      dataDir: '/flag/dir',
      logLevel: 'warn',
      typingDelayMs: { min: 100, max: 200 },
    });
  });

  it('reads the public URL from the flag or env, without trailing slashes; absent by default', () => {
    expect(resolveServiceConfig({ publicUrl: 'https://wa.example.com/api/' }, {}, linux).publicUrl).toBe('https://wa.example.com/api');
    expect(resolveServiceConfig({}, { SWITCHBOARD_PUBLIC_URL: 'http://192.168.1.5:7575/api' }, linux).publicUrl).toBe(
      'http://192.168.1.5:7575/api',
    );
    expect(
      resolveServiceConfig({ publicUrl: 'https://proxy.example.com/sb/api' }, { SWITCHBOARD_PUBLIC_URL: 'http://x/api' }, linux).publicUrl,
    ).toBe('https://proxy.example.com/sb/api');
    expect(resolveServiceConfig({}, {}, linux).publicUrl).toBeUndefined();
  });

  it('reads the status-media and online-fallback settings from flags or env; absent by default', () => {
    const defaults = resolveServiceConfig({}, {}, linux);
    expect(defaults.downloadStatusMedia).toBeUndefined();
    expect(defaults.onlineFallbackMs).toBeUndefined(); // the session's default (20 s) applies
    expect(resolveServiceConfig({ downloadStatusMedia: true, onlineFallbackMs: '5000' }, {}, linux)).toMatchObject({
      downloadStatusMedia: true,
      onlineFallbackMs: 5000,
    });
    expect(
      resolveServiceConfig({}, { SWITCHBOARD_DOWNLOAD_STATUS_MEDIA: '1', SWITCHBOARD_ONLINE_FALLBACK_MS: '3000' }, linux),
    ).toMatchObject({ downloadStatusMedia: true, onlineFallbackMs: 3000 });
    expect(() => resolveServiceConfig({ onlineFallbackMs: '500' }, {}, linux)).toThrow(ConfigError);
    expect(() => resolveServiceConfig({}, { SWITCHBOARD_ONLINE_FALLBACK_MS: 'soon' }, linux)).toThrow(/between 1000 and 600000/);
  });

  it('reads the per-user caps from flags or env, whole numbers only (0 = no cap)', () => {
    expect(resolveServiceConfig({ maxStreamsPerUser: '5', maxLargeUploadsPerUser: '0' }, {}, linux)).toMatchObject({
      maxStreamsPerUser: 5,
      maxLargeUploadsPerUser: 0,
    });
    const env = { SWITCHBOARD_MAX_STREAMS_PER_USER: '7', SWITCHBOARD_MAX_LARGE_UPLOADS_PER_USER: '3' };
    expect(resolveServiceConfig({}, env, linux)).toMatchObject({ maxStreamsPerUser: 7, maxLargeUploadsPerUser: 3 });
    expect(() => resolveServiceConfig({ maxStreamsPerUser: '-1' }, {}, linux)).toThrow(
      'invalid --max-streams-per-user value "-1": expected a whole number',
    );
    expect(() => resolveServiceConfig({}, { SWITCHBOARD_MAX_LARGE_UPLOADS_PER_USER: 'two' }, linux)).toThrow(
      'invalid SWITCHBOARD_MAX_LARGE_UPLOADS_PER_USER value "two": expected a whole number',
    );
  });

  it('reads the export cap and the pace of WhatsApp queries from flags, env or settings.json (0 = off)', () => {
    expect(resolveServiceConfig({ maxExportsPerUser: '4', waQueryPace: '10/min' }, {}, linux)).toMatchObject({
      maxExportsPerUser: 4,
      waQueryPace: { max: 10, windowMs: 60_000 },
    });
    const env = { SWITCHBOARD_MAX_EXPORTS_PER_USER: '0', SWITCHBOARD_WA_QUERY_PACE: '0' };
    expect(resolveServiceConfig({}, env, linux)).toMatchObject({ maxExportsPerUser: 0, waQueryPace: { max: 0 } });
    expect(resolveServiceConfig({}, {}, linux)).not.toHaveProperty('waQueryPace'); // the default lives in the plugin
    expect(() => resolveServiceConfig({ waQueryPace: 'fast' }, {}, linux)).toThrow(/--wa-query-pace/);
    expect(() => resolveServiceConfig({}, { SWITCHBOARD_MAX_EXPORTS_PER_USER: 'two' }, linux)).toThrow(
      'invalid SWITCHBOARD_MAX_EXPORTS_PER_USER value "two": expected a whole number',
    );
  });

  it('reads the session worker threads from the flag or env (0-256); absent by default (the sessions on the main thread)', () => {
    expect(resolveServiceConfig({}, {}, linux).workers).toBeUndefined();
    expect(resolveServiceConfig({ workers: '4' }, {}, linux).workers).toBe(4);
    expect(resolveServiceConfig({}, { SWITCHBOARD_WORKERS: '0' }, linux).workers).toBe(0);
    expect(() => resolveServiceConfig({ workers: '999' }, {}, linux)).toThrow('invalid --workers value "999": expected 0-256');
    expect(() => resolveServiceConfig({}, { SWITCHBOARD_WORKERS: 'many' }, linux)).toThrow(
      'invalid SWITCHBOARD_WORKERS value "many": expected a whole number',
    );
  });

  it('keeps sandbox data apart unless a data dir is given, which is used as given', () => {
    expect(resolveServiceConfig({ sandbox: true }, {}, linux).dataDir).toBe(
      '/home/ann/.local/share/switchboard/sandbox',
    );
    expect(resolveServiceConfig({}, { SWITCHBOARD_SANDBOX: '1' }, linux)).toMatchObject({
      sandbox: true,
      dataDir: '/home/ann/.local/share/switchboard/sandbox',
    });
    expect(resolveServiceConfig({ sandbox: true, dataDir: '/x' }, {}, linux).dataDir).toBe('/x');
    expect(resolveDataDir({}, true, { SWITCHBOARD_DATA_DIR: '/y' }, linux)).toBe('/y');
  });

  it('reads a root key in hex or base64, only together with a URL', () => {
    const key = Buffer.alloc(32, 7);
    const waUrl = 'ws://h:1/ws/chat';
    const sandbox = true;
    expect(resolveServiceConfig({ sandbox, waUrl, waRootKey: key.toString('hex') }, {}, linux).waRootPublicKey).toEqual(key);
    expect(resolveServiceConfig({ sandbox, waUrl, waRootKey: key.toString('base64') }, {}, linux).waRootPublicKey).toEqual(
      key,
    );
    expect(() => resolveServiceConfig({ sandbox, waRootKey: key.toString('hex') }, {}, linux)).toThrow(
      '--wa-root-key needs --wa-url',
    );
  });

  it.each([
    [{ waUrl: 'ws://127.0.0.1:7580/ws/chat' }, {}, '--wa-url is for sandbox mode only'],
    [{}, { SWITCHBOARD_WA_URL: 'wss://example.test/ws/chat' }, 'SWITCHBOARD_WA_URL is for sandbox mode only'],
    [{ waUrl: 'ws://h/ws', waRootKey: Buffer.alloc(32, 1).toString('hex') }, {}, '--wa-url is for sandbox mode only'],
    [{}, { SWITCHBOARD_WA_ROOT_KEY: Buffer.alloc(32, 1).toString('hex') }, '--wa-root-key needs --wa-url'],
  ])('seals live mode: %j %j is refused outside the sandbox', (flags, env, message) => {
    expect(() => resolveServiceConfig(flags, env, linux)).toThrow(ConfigError);
    expect(() => resolveServiceConfig(flags, env, linux)).toThrow(message);
  });

  it('the packaged app clears the sandbox-only variables, leaving the rest', () => {
    const env = { SWITCHBOARD_WA_URL: 'ws://evil.test/ws/chat', SWITCHBOARD_WA_ROOT_KEY: 'aa', SWITCHBOARD_PORT: '7575' };
    expect(clearSandboxOnlyVariables(env)).toEqual(['SWITCHBOARD_WA_URL', 'SWITCHBOARD_WA_ROOT_KEY']);
    expect(env).toEqual({ SWITCHBOARD_PORT: '7575' });
    expect(clearSandboxOnlyVariables(env)).toEqual([]);
    expect(resolveServiceConfig({}, env, linux).waUrl).toBeUndefined();
  });

  it.each([
    [{ port: '70000' }, {}, 'invalid --port value "70000"'],
    [{ port: '-1' }, {}, 'invalid --port value "-1"'],
    [{}, { SWITCHBOARD_PORT: 'http' }, 'invalid SWITCHBOARD_PORT value "http"'],
    [{ logLevel: 'verbose' }, {}, 'invalid --log-level value "verbose"'],
    [{ waUrl: 'https://web.whatsapp.com' }, {}, 'invalid --wa-url value'],
    [{ typingDelayMs: '2500-800' }, {}, 'invalid --typing-delay-ms value "2500-800"'],
    [{ workerId: 'a b' }, {}, 'invalid --worker-id value "a b"'],
    [{ sandbox: true, waUrl: 'ws://h/ws', waRootKey: 'c2hvcnQ=' }, {}, 'expected a 32-byte key'],
    [{}, { SWITCHBOARD_SANDBOX: 'maybe' }, 'invalid SWITCHBOARD_SANDBOX value "maybe"'],
    [{ publicUrl: 'wa.example.com/api' }, {}, 'invalid --public-url value "wa.example.com/api": expected the API\'s public base URL'],
    [{ publicUrl: 'ftp://wa.example.com/api' }, {}, 'invalid --public-url value "ftp://wa.example.com/api"'],
    [{ publicUrl: 'https://user:pw@wa.example.com/api' }, {}, 'invalid --public-url value'],
    [{ publicUrl: 'https://wa.example.com/api?x=1' }, {}, 'invalid --public-url value'],
    [{ publicUrl: 'https://wa.example.com/api#top' }, {}, 'invalid --public-url value'],
    [{}, { SWITCHBOARD_PUBLIC_URL: '/api' }, 'invalid SWITCHBOARD_PUBLIC_URL value "/api"'],
  ])('rejects %j %j', (flags, env, message) => {
    expect(() => resolveServiceConfig(flags, env, linux)).toThrow(ConfigError);
    expect(() => resolveServiceConfig(flags, env, linux)).toThrow(message);
  });
});

describe('resolveSandboxServerConfig', () => {
  it('defaults to port 7580 and the sandbox data dir', () => {
    expect(resolveSandboxServerConfig({}, {}, linux)).toEqual({
      host: '127.0.0.1',
      port: 7580,
      dataDir: '/home/ann/.local/share/switchboard/sandbox',
      seed: false,
      logLevel: 'info',
    });
    expect(
      resolveSandboxServerConfig({ port: '0', seed: true }, { SWITCHBOARD_SANDBOX_PORT: '9000' }, linux),
    ).toMatchObject({ port: 0, seed: true });
    expect(resolveSandboxServerConfig({}, { SWITCHBOARD_SANDBOX_PORT: '9000' }, linux).port).toBe(9000);
  });
});
