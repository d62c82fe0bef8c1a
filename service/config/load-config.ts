/**
 * `loadServiceConfig`: resolveServiceConfig plus what needs I/O beyond the settings file, used by `serve` and the
 * desktop's service process. Today that is the Stripe secret key in the OS keychain, read only when the billing
 * provider is asked for by name as `stripe` and SWITCHBOARD_STRIPE_SECRET_KEY is not set (so a service that
 * does not bill through Stripe never touches the keychain).
 */
import { readStoredStripeKey } from '../secrets/keychain.ts';
import type { PlatformInfo } from './data-dir.ts';
import { readSettingsFile } from './settings-file.ts';
import {
  ConfigError,
  requestedBillingProvider,
  STRIPE_KEY_HINT,
  resolveDataDir,
  resolveSandboxMode,
  resolveServiceConfig,
  type ConfigFlags,
  type ServiceConfig,
} from './service-config.ts';

export interface LoadOptions {
  platform?: PlatformInfo;
  /** Reads the stored Stripe key of a data dir; default: the OS keychain (config/../secrets/keychain.ts). */
  readStripeKey?: (dataDir: string) => Promise<string | undefined>;
}

/**
 * The service's settings from flags, environment, `<dataDir>/settings.json`, the keychain and the defaults.
 * @throws ConfigError as resolveServiceConfig
 */
export async function loadServiceConfig(
  flags: ConfigFlags,
  env: NodeJS.ProcessEnv = process.env,
  opts: LoadOptions = {},
): Promise<ServiceConfig> {
  const dataDir = resolveDataDir(flags, resolveSandboxMode(flags, env), env, opts.platform);
  const file = readSettingsFile(dataDir);
  let stripeSecretKey: string | undefined;
  if (!env.SWITCHBOARD_STRIPE_SECRET_KEY?.trim() && requestedBillingProvider(flags, env, file) === 'stripe') {
    try {
      stripeSecretKey = await (opts.readStripeKey ?? readStoredStripeKey)(dataDir);
    } catch (err) {
      throw new ConfigError(
        `the stripe billing provider needs ${STRIPE_KEY_HINT}; the OS keychain could not be read (${(err as Error).message})`,
      );
    }
  }
  return resolveServiceConfig(flags, env, opts.platform, { file, ...(stripeSecretKey && { stripeSecretKey }) });
}
