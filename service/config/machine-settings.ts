/**
 * The machine's settings at run time (issue 18 item 2): what `GET/PATCH /api/settings` read and change. It owns
 * the desktop-editable rows of config/settings-table.ts — API port, LAN webhooks, worker id, billing provider,
 * Stripe price id — which it saves in `<dataDir>/settings.json`, and the Stripe secret key, which it keeps in the
 * OS keychain only (never in the file; without a keychain the key stays in SWITCHBOARD_STRIPE_SECRET_KEY).
 *
 * A change is checked by resolving the whole configuration the next start would resolve (the same loader as
 * `serve`), so a saved file can never keep the service from starting; a refused change writes nothing. Settings a
 * flag or environment variable of this process sets cannot be changed here (that source would win): 409.
 * `allowLanWebhooks` applies at once (the outbound URL policy reads `allowLanWebhooks()` on every use); the others
 * need a restart, and `restartRequired` lists the saved ones that are not in effect yet.
 *
 * A refused change or an unusable settings.json is a `SettingsError` (what was wrong, and which setting); the HTTP
 * route (http/routes/settings.ts) turns it into its answer.
 */
import { openKeychain, stripeKeyAccount, type Keychain } from '../secrets/keychain.ts';
import type { PlatformInfo } from './data-dir.ts';
import { ConfigError } from './config-error.ts';
import {
  desktopSettingValues,
  isStripeSecretKey,
  resolveServiceConfig,
  type ConfigFlags,
  type DesktopSettingValues,
  type SettingOrigin,
} from './service-config.ts';
import { readSettingsFile, settingsFilePath, writeSettingsFile, type SettingsFileValues } from './settings-file.ts';
import { needsRestart, settingSpec } from './settings-table.ts';

export type DesktopSettingName = keyof DesktopSettingValues;
export const DESKTOP_SETTING_NAMES: readonly DesktopSettingName[] = [
  'port',
  'allowLanWebhooks',
  'workerId',
  'billingProvider',
  'stripePriceId',
];

/** A change: a value, or null to remove it from the file (back to the default). */
export type SettingsPatch = { [K in DesktopSettingName]?: DesktopSettingValues[K] | null } & {
  /** Stored in the OS keychain; null deletes it. Never written to the file, never returned. */
  stripeSecretKey?: string | null;
};

export interface SettingState<T> {
  /** The value the service uses after its next (re)start: flag > environment > settings.json > default. */
  value: T;
  source: SettingOrigin;
  /** The flag or environment variable that sets it for this process (the console cannot change it), or null. */
  lockedBy: string | null;
  /** Whether a change needs a restart. */
  restart: boolean;
}

export interface SettingsView {
  /** Where the settings are saved. */
  file: string;
  settings: { [K in DesktopSettingName]: SettingState<DesktopSettingValues[K]> };
  stripeSecretKey: {
    /** Where the key in use comes from: the environment, the keychain, or none. */
    source: 'env' | 'keychain' | null;
    /** Whether an OS keychain is usable by the service (else the key can only come from the environment). */
    keychain: boolean;
    lockedBy: string | null;
  };
  /** Saved changes that apply only after a restart (setting names). */
  restartRequired: string[];
  /** Whether `POST /settings/restart` can restart the service (the desktop app); headless: restart it yourself. */
  canRestart: boolean;
}

export interface MachineSettingsOptions {
  dataDir: string;
  /** The flags and environment of this process (they win over the file). */
  flags: ConfigFlags;
  env: NodeJS.ProcessEnv;
  platform?: PlatformInfo;
  /** The value of allowLanWebhooks the service started with. */
  allowLanWebhooks: boolean;
  /** The port the service was told to keep (the desktop's restart after a crash), when not the configured one. */
  runningPort?: number;
  /** Opens the OS keychain (rejects when none is usable); null: none on this machine. Default: the OS keychain. */
  openKeychain?: (() => Promise<Keychain>) | null;
  /** Restarts the service so saved settings apply (the desktop supervisor); absent for headless `serve`. */
  restart?: () => void;
}

const STRIPE_ENV = 'SWITCHBOARD_STRIPE_SECRET_KEY';

/**
 * Why the settings refused a change or cannot be read:
 * - `invalid`: a value the next start would refuse; `setting` names it (when one does) and the message says what
 *   is wrong with it, without naming it (`invalid value "x": expected a port number 0-65535`);
 * - `locked`: a flag or environment variable of this process sets `setting`, so the file or keychain cannot;
 * - `no-keychain`: the Stripe key has no OS keychain to go to;
 * - `unreadable`: settings.json cannot be used as it is (a hand edit); the message names the file.
 */
export class SettingsError extends Error {
  override name = 'SettingsError';
  constructor(
    readonly kind: 'invalid' | 'locked' | 'no-keychain' | 'unreadable',
    message: string,
    readonly setting?: string,
  ) {
    super(message);
  }
}

/** How the loader names a changed value in its messages, so that the setting can be told apart again. */
const changedLabel = (name: string) => `‹${name}›`;

/**
 * The loader's refusal of a change: `invalid ‹port› value "x": …` → setting `port`, `invalid value "x": …`; the
 * stripe provider's needs → setting `billingProvider`, in the settings' terms (a price id is `stripePriceId`).
 */
function invalidChange(message: string): SettingsError {
  if (message.startsWith('the stripe billing provider needs'))
    return new SettingsError(
      'invalid',
      message.replace('--stripe-price-id (the per-slot price)', 'a Stripe price id (stripePriceId)'),
      'billingProvider',
    );
  const named = /^invalid ‹(\w+)› value /.exec(message);
  if (named) return new SettingsError('invalid', `invalid value ${message.slice(named[0].length)}`, named[1]);
  return new SettingsError('invalid', message);
}

export class MachineSettings {
  readonly #opts: MachineSettingsOptions;
  /** The settings' values as they were when the service started (what runs). */
  readonly #baseline: DesktopSettingValues;
  #allowLan: boolean;
  #keychain: Promise<Keychain> | undefined;
  #stripeKeyChanged = false;
  /** Changes run one at a time (keychain calls are asynchronous). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(opts: MachineSettingsOptions) {
    this.#opts = opts;
    this.#allowLan = opts.allowLanWebhooks;
    const atStart = this.#resolve(this.#readFile()).values;
    // A pinned port counts as running unless the configured one is 0 (any free port: a pin is no difference).
    const pinned = opts.runningPort !== undefined && atStart.port !== 0;
    this.#baseline = pinned ? { ...atStart, port: opts.runningPort! } : atStart;
  }

  get file(): string {
    return settingsFilePath(this.#opts.dataDir);
  }

  /** The LAN switch of webhooks and send-* url fetches, as it applies now (changes apply at once). */
  allowLanWebhooks(): boolean {
    return this.#allowLan;
  }

  /** The current settings, where each comes from, and what waits for a restart. */
  async view(): Promise<SettingsView> {
    const file = this.#readFile();
    const { values, origins } = this.#resolve(file);
    const locks = this.#locks();
    const settings = Object.fromEntries(
      DESKTOP_SETTING_NAMES.map((name) => [
        name,
        { value: values[name], source: origins[name], lockedBy: locks[name] ?? null, restart: needsRestart(settingSpec(name)) },
      ]),
    ) as SettingsView['settings'];
    const envKey = Boolean(this.#opts.env[STRIPE_ENV]?.trim());
    const keychain = await this.#tryKeychain();
    const stored = !envKey && keychain ? await keychain.get(stripeKeyAccount(this.#opts.dataDir)).catch(() => undefined) : undefined;
    const restartRequired = DESKTOP_SETTING_NAMES.filter(
      (n) => needsRestart(settingSpec(n)) && values[n] !== this.#baseline[n],
    ) as string[];
    if (this.#stripeKeyChanged) restartRequired.push('stripeSecretKey');
    return {
      file: this.file,
      settings,
      stripeSecretKey: {
        source: envKey ? 'env' : stored ? 'keychain' : null,
        keychain: keychain !== undefined,
        lockedBy: envKey ? STRIPE_ENV : null,
      },
      restartRequired,
      canRestart: this.#opts.restart !== undefined,
    };
  }

  /**
   * Saves `patch` (settings.json, and the Stripe key in the keychain) after checking that the next start accepts
   * it; answers the new view and the names that changed. Nothing is written when it throws.
   * @throws SettingsError `invalid` for a value the loader refuses, `locked` when a flag or environment variable of
   *   this process sets the setting, `no-keychain` when the Stripe key has no keychain to go to, `unreadable` when
   *   settings.json cannot be used.
   */
  update(patch: SettingsPatch): Promise<SettingsView & { changed: string[] }> {
    const run = this.#queue.then(() => this.#update(patch));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Whether `restart()` can restart the service (the desktop app). */
  get canRestart(): boolean {
    return this.#opts.restart !== undefined;
  }

  /** Asks the host to restart the service; false when nothing can (headless `serve`: restart it yourself). */
  restart(): boolean {
    if (!this.#opts.restart) return false;
    this.#opts.restart();
    return true;
  }

  async #update(patch: SettingsPatch): Promise<SettingsView & { changed: string[] }> {
    const locks = this.#locks();
    const names = DESKTOP_SETTING_NAMES.filter((n) => patch[n] !== undefined);
    for (const name of names) {
      const lock = locks[name];
      if (lock) {
        throw new SettingsError('locked', `${name} is set by ${lock} for this service; the settings file cannot change it`, name);
      }
    }
    const current = this.#readFile();
    const next: SettingsFileValues = { ...current };
    for (const name of names) {
      const value = patch[name];
      if (value === null) delete next[name];
      else next[name] = value as string | number | boolean;
    }

    const keyPatched = patch.stripeSecretKey !== undefined;
    const newKey = patch.stripeSecretKey?.trim();
    let keychain: Keychain | undefined;
    if (keyPatched) {
      if (this.#opts.env[STRIPE_ENV]?.trim())
        throw new SettingsError(
          'locked',
          `the Stripe key is set by ${STRIPE_ENV} for this service; the keychain cannot change it`,
          'stripeSecretKey',
        );
      if (newKey !== undefined && !isStripeSecretKey(newKey))
        throw new SettingsError('invalid', 'expected a Stripe secret key (sk_test_…, sk_live_…, rk_…)', 'stripeSecretKey');
      keychain = await this.#keychainOrRefusal();
    }

    // The next start must accept what is saved: resolve it exactly as `serve` / the desktop would.
    const account = stripeKeyAccount(this.#opts.dataDir);
    const target = this.#resolve(next, names);
    let trialKey: string | undefined;
    if (target.values.billingProvider === 'stripe' && !this.#opts.env[STRIPE_ENV]?.trim()) {
      if (keyPatched) trialKey = newKey;
      else trialKey = await (await this.#tryKeychain())?.get(account).catch(() => undefined);
    }
    try {
      resolveServiceConfig(this.#opts.flags, this.#opts.env, this.#opts.platform, {
        file: next,
        fileLabel: (n) => (names.includes(n as DesktopSettingName) ? changedLabel(n) : `settings.json "${n}"`),
        ...(trialKey && { stripeSecretKey: trialKey }),
      });
    } catch (err) {
      if (err instanceof ConfigError) throw invalidChange(err.message);
      throw err;
    }

    const changed: string[] = names.filter((n) => JSON.stringify(next[n]) !== JSON.stringify(current[n]));
    let previousKey: string | undefined;
    if (keychain) {
      previousKey = await keychain.get(account);
      if (newKey !== undefined) await keychain.set(account, newKey);
      else await keychain.delete(account).catch(() => false);
      if (previousKey !== newKey) {
        changed.push('stripeSecretKey');
        this.#stripeKeyChanged = true;
      }
    }
    if (names.length > 0) {
      try {
        writeSettingsFile(this.#opts.dataDir, next);
      } catch (err) {
        if (keychain) {
          if (previousKey !== undefined) await keychain.set(account, previousKey).catch(() => undefined);
          else await keychain.delete(account).catch(() => false);
        }
        throw err;
      }
    }
    this.#allowLan = target.values.allowLanWebhooks;
    return { ...(await this.view()), changed };
  }

  /** The values a start with `file` would use. @throws SettingsError `invalid` (`patched` names) or `unreadable` */
  #resolve(file: SettingsFileValues, patched: readonly string[] = []) {
    try {
      return desktopSettingValues(this.#opts.flags, this.#opts.env, file, (n) =>
        patched.includes(n) ? changedLabel(n) : `settings.json "${n}"`,
      );
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      if (patched.length > 0) throw invalidChange(err.message);
      throw new SettingsError('unreadable', `${this.file}: ${err.message}`);
    }
  }

  /** Which desktop settings a flag or environment variable of this process sets, with its name. */
  #locks(): Partial<Record<DesktopSettingName, string>> {
    const { origins } = desktopSettingValues(this.#opts.flags, this.#opts.env, {});
    const locks: Partial<Record<DesktopSettingName, string>> = {};
    for (const name of DESKTOP_SETTING_NAMES) {
      const spec = settingSpec(name);
      if (origins[name] === 'flag') locks[name] = `--${spec.flag}`;
      else if (origins[name] === 'env') locks[name] = spec.env;
    }
    return locks;
  }

  /** settings.json as it is now (hand edits count). @throws SettingsError `unreadable` when it cannot be used */
  #readFile(): SettingsFileValues {
    try {
      return readSettingsFile(this.#opts.dataDir);
    } catch (err) {
      if (err instanceof ConfigError) throw new SettingsError('unreadable', err.message);
      throw err;
    }
  }

  /** The keychain, or undefined when none is usable (a failed probe is tried again next time). */
  async #tryKeychain(): Promise<Keychain | undefined> {
    try {
      return await this.#openKeychain();
    } catch {
      return undefined;
    }
  }

  async #keychainOrRefusal(): Promise<Keychain> {
    try {
      return await this.#openKeychain();
    } catch (err) {
      throw new SettingsError(
        'no-keychain',
        `No OS keychain is available to this service (${(err as Error).message}); set ${STRIPE_ENV} in its environment instead`,
        'stripeSecretKey',
      );
    }
  }

  #openKeychain(): Promise<Keychain> {
    const open = this.#opts.openKeychain === undefined ? () => openKeychain() : this.#opts.openKeychain;
    if (!open) return Promise.reject(new Error('none on this machine'));
    this.#keychain ??= open();
    return this.#keychain.catch((err: unknown) => {
      this.#keychain = undefined;
      throw err;
    });
  }
}
