/**
 * `settings.json` in the data dir: the settings the console's Settings view saves (and that an operator may write by
 * hand), read by the desktop app and by headless `serve` alike. One flat JSON object keyed by the setting names of
 * config/settings-table.ts, e.g. `{"port": 7575, "workerId": "desk-1", "allowLanWebhooks": true}`. Flags and
 * environment variables win over it; it wins over the defaults (config/service-config.ts).
 *
 * Never in it: the data dir and sandbox switch (they decide where the file is), the sandbox-only server URL and root
 * key (live mode must not be redirectable), and secrets (the Stripe key lives in the OS keychain or the environment).
 * Written atomically (a 0600 temporary file, fsync, rename, then the folder is synced), so a crash leaves the old
 * file or the new one, never a mix; the data dir is 0700 like the rest of it (config/private-dir.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config-error.ts';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-dir.ts';
import { allowedInFile, findSetting, type SettingSpec } from './settings-table.ts';

export const SETTINGS_FILE = 'settings.json';

/** A value as JSON holds it. */
export type FileValue = string | number | boolean | Array<string | number>;
/** The file's content: setting name → value. */
export type SettingsFileValues = Record<string, FileValue>;


export const settingsFilePath = (dataDir: string): string => path.join(dataDir, SETTINGS_FILE);

/**
 * The text form of a file value, as a flag would give it (`7575`, `true`, `a,b`), for the same parser.
 * @throws ConfigError naming `label` when the JSON type does not fit the setting's kind.
 */
export function fileValueText(spec: SettingSpec, value: unknown, label: string): string {
  const wrong = (expected: string) =>
    new ConfigError(`invalid ${label} value ${JSON.stringify(value)}: expected ${expected}`);
  switch (spec.kind) {
    case 'boolean':
      if (typeof value !== 'boolean') throw wrong('true or false');
      return String(value);
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw wrong('a whole number');
      return String(value);
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw wrong('a number');
      return String(value);
    case 'list':
      if (typeof value === 'string') return value;
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))))
        throw wrong('a list (an array of strings, or one comma-separated string)');
      return value.join(',');
    case 'string':
      if (typeof value === 'number' && Number.isFinite(value)) return String(value);
      if (typeof value !== 'string') throw wrong('a string');
      return value;
  }
}

/** Checks an object read from the file or about to be written. @throws ConfigError */
export function checkSettingsValues(values: unknown, where: string): SettingsFileValues {
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new ConfigError(`${where} must hold one JSON object of settings`);
  const out: SettingsFileValues = {};
  for (const [name, value] of Object.entries(values)) {
    const spec = findSetting(name);
    if (!spec) throw new ConfigError(`${where}: unknown setting ${JSON.stringify(name)} (docs/settings.md lists them)`);
    if (!allowedInFile(spec)) {
      const why = spec.secret
        ? 'secrets are kept in the OS keychain or the environment'
        : `use --${spec.flag ?? ''} or ${spec.env}`;
      throw new ConfigError(`${where}: ${name} cannot be set in the settings file (${why})`);
    }
    fileValueText(spec, value, `${where} "${name}"`);
    out[name] = value as FileValue;
  }
  return out;
}

/**
 * The settings file of `dataDir`: `{}` when there is none (or the data dir does not exist yet).
 * @throws ConfigError when it cannot be read or holds something else than settings of the table.
 */
export function readSettingsFile(dataDir: string): SettingsFileValues {
  const file = settingsFilePath(dataDir);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return {};
    throw new ConfigError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid JSON (${(err as Error).message})`);
  }
  return checkSettingsValues(parsed, file);
}

/**
 * Replaces the settings file of `dataDir` with `values` (checked first), atomically and with mode 0600.
 * @throws ConfigError for values the file may not hold; file system errors as they come.
 */
export function writeSettingsFile(dataDir: string, values: SettingsFileValues): void {
  const file = settingsFilePath(dataDir);
  const checked = checkSettingsValues(values, SETTINGS_FILE);
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    fs.writeFileSync(fd, JSON.stringify(checked, null, 2) + '\n');
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    if (process.platform !== 'win32') fs.chmodSync(tmp, PRIVATE_FILE_MODE); // whatever the umask did
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  if (process.platform !== 'win32') {
    // The rename is durable once the folder's entry is on disk.
    const dirFd = fs.openSync(dataDir, 'r');
    try {
      fs.fsyncSync(dirFd);
    } finally {
      fs.closeSync(dirFd);
    }
  }
}
