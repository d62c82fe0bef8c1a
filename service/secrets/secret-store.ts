/**
 * Secrets of the install (the desktop's operator token, later the DEK and provider keys) behind one interface:
 * the OS keychain through `@napi-rs/keyring` (macOS Keychain, Windows Credential Manager, Secret Service on
 * Linux — never the kernel keyring), or, when no keychain answers, a 0600 JSON file in the data directory that is
 * reported as degraded.
 * Never imports electron: the same store works headless and in the desktop app.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface SecretStore {
  /** `keyring` or `file`. */
  readonly backend: 'keyring' | 'file';
  /** true when secrets sit in a plain 0600 file because no OS keychain was available. */
  readonly degraded: boolean;
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<boolean>;
}

export const DEFAULT_SERVICE = 'Switchboard';

/** The OS keychain; each secret is one entry `(service, key)`. */
export class KeyringSecretStore implements SecretStore {
  readonly backend = 'keyring' as const;
  readonly degraded = false;
  constructor(
    private readonly Entry: typeof import('@napi-rs/keyring').Entry,
    private readonly service = DEFAULT_SERVICE,
    /** Entry options, e.g. `{ linux: { store: 'secret-service' } }` to refuse the kernel keyring's fallback. */
    private readonly options?: import('@napi-rs/keyring').EntryOptions,
  ) {}

  static async load(service = DEFAULT_SERVICE, options?: import('@napi-rs/keyring').EntryOptions): Promise<KeyringSecretStore> {
    const { Entry } = await import('@napi-rs/keyring');
    return new KeyringSecretStore(Entry, service, options);
  }

  async get(key: string): Promise<string | undefined> {
    return new this.Entry(this.service, key, this.options).getPassword() ?? undefined;
  }
  async set(key: string, value: string): Promise<void> {
    new this.Entry(this.service, key, this.options).setPassword(value);
  }
  async delete(key: string): Promise<boolean> {
    return new this.Entry(this.service, key, this.options).deletePassword();
  }
  /** Writes, reads back and deletes a probe entry: throws when no keychain is usable. */
  async probe(): Promise<void> {
    const key = `probe-${process.pid}-${Date.now()}`;
    await this.set(key, 'ok');
    const v = await this.get(key);
    await this.delete(key).catch(() => false);
    if (v !== 'ok') throw new Error('the keychain did not return what was stored');
  }
}

/** A JSON file readable only by its owner (0600, directory 0700): the degraded fallback. */
export class FileSecretStore implements SecretStore {
  readonly backend = 'file' as const;
  readonly degraded = true;
  constructor(readonly file: string) {}

  private read(): Record<string, string> {
    try {
      return JSON.parse(fs.readFileSync(this.file, 'utf8')) as Record<string, string>;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
  }
  private write(data: Record<string, string>): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, this.file);
  }
  async get(key: string): Promise<string | undefined> {
    return this.read()[key];
  }
  async set(key: string, value: string): Promise<void> {
    this.write({ ...this.read(), [key]: value });
  }
  async delete(key: string): Promise<boolean> {
    const data = this.read();
    if (!(key in data)) return false;
    delete data[key];
    this.write(data);
    return true;
  }
}

export interface OpenSecretStoreOptions {
  /** Where the fallback file lives (the data directory). */
  dataDir: string;
  service?: string;
  /** Skip the keychain (tests, or an operator who wants the file). */
  forceFile?: boolean;
  onDegraded?: (reason: string) => void;
}

/**
 * Entry options of every keychain entry: on Linux the Secret Service (GNOME Keyring, KWallet…) only, never the
 * library's fallback, the kernel keyring, which forgets its keys at logout or reboot (a secret kept there would be
 * lost without a word) and which an environment cannot point elsewhere (tests cut off the Secret Service by its
 * D-Bus address, test/helpers/isolated-home.setup.ts).
 */
export const PERSISTENT_STORE = { linux: { store: 'secret-service' as const } };

/** The keychain when it works, otherwise the 0600 file (reported through `onDegraded`, never silently). */
export async function openSecretStore(opts: OpenSecretStoreOptions): Promise<SecretStore> {
  const file = new FileSecretStore(path.join(opts.dataDir, 'secrets.json'));
  if (opts.forceFile) {
    opts.onDegraded?.('the keychain was turned off');
    return file;
  }
  try {
    const keyring = await KeyringSecretStore.load(opts.service, PERSISTENT_STORE);
    await keyring.probe();
    return keyring;
  } catch (err) {
    opts.onDegraded?.(`no OS keychain available (${(err as Error).message}); using ${file.file} (0600)`);
    return file;
  }
}
