/**
 * The OS keychain for secrets that must never fall back to a file: the Stripe secret key the console's Settings
 * view stores (issue 18 item 2). Unlike `openSecretStore` there is no 0600-file fallback: without a keychain the
 * key stays where headless installs keep it, in SWITCHBOARD_STRIPE_SECRET_KEY (docs/settings.md).
 *
 * One entry per data dir, `(Switchboard, stripe-secret-key:<absolute data dir>)`, so a sandbox data dir (test
 * keys) and a live one never share a key. On Linux the entry is pinned to the Secret Service (GNOME Keyring,
 * KWallet…): the library's fallback, the kernel keyring, forgets its keys at logout or reboot, and a Stripe key
 * that vanishes would keep the service from starting.
 */
import path from 'node:path';
import { DEFAULT_SERVICE, KeyringSecretStore, PERSISTENT_STORE } from './secret-store.ts';

/** What the settings need of the keychain. */
export interface Keychain {
  get(account: string): Promise<string | undefined>;
  set(account: string, value: string): Promise<void>;
  delete(account: string): Promise<boolean>;
}

/** The keychain account of the Stripe key of `dataDir`. */
export const stripeKeyAccount = (dataDir: string): string => `stripe-secret-key:${path.resolve(dataDir)}`;

/**
 * The OS keychain after a write/read/delete probe.
 * @throws Error saying why when no keychain is usable (no Secret Service on Linux, a locked keychain…)
 */
export async function openKeychain(service = DEFAULT_SERVICE): Promise<Keychain> {
  const store = await KeyringSecretStore.load(service, PERSISTENT_STORE);
  await store.probe();
  return store;
}


/** Reads the Stripe key of `dataDir` without probing (a read never writes); `undefined` when none is stored. @throws when no keychain answers */
export async function readStoredStripeKey(dataDir: string, service = DEFAULT_SERVICE): Promise<string | undefined> {
  const store = await KeyringSecretStore.load(service, PERSISTENT_STORE);
  return store.get(stripeKeyAccount(dataDir));
}
