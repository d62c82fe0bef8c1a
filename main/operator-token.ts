/**
 * The desktop operator's API token: created on first run for the local user `operator` and kept in the OS
 * keychain through SecretStore (0600 file fallback, reported as degraded). Re-created if it was revoked.
 */
import type { SecretStore } from '../service/secrets/secret-store.ts';

export const OPERATOR_TOKEN_KEY = 'operator-token';

/** Returns a working token: the stored one when the API accepts it, else a new one (stored). */
export async function ensureOperatorToken(opts: {
  secrets: SecretStore;
  apiUrl: string;
  create: () => Promise<string>;
}): Promise<string> {
  const stored = await opts.secrets.get(OPERATOR_TOKEN_KEY);
  if (stored) {
    const res = await fetch(`${opts.apiUrl}/connections`, { headers: { authorization: `Bearer ${stored}` } }).catch(() => undefined);
    if (res?.ok) return stored;
  }
  const token = await opts.create();
  await opts.secrets.set(OPERATOR_TOKEN_KEY, token);
  return token;
}

