/**
 * A secret value (the Stripe secret key) that cannot leak by accident: it prints, serialises and inspects as
 * `[redacted]`, so passing it to a logger, JSON.stringify or an error message shows nothing. Only `reveal()`
 * returns the value, and only the code that hands it to the payment provider's client calls it.
 *
 * A `SecretSource` is where the provider gets it from: a `Secret` at hand (env/settings), or an object that reads
 * it when first needed (the desktop app's OS-keychain `SecretStore`).
 */
import { inspect } from 'node:util';

const REDACTED = '[redacted]';

export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The secret itself. Never log or return it. */
  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}

/** A secret given directly, or read on first use (e.g. from the OS keychain). */
export type SecretSource = Secret | { read(): Promise<Secret> };

export async function readSecret(source: SecretSource): Promise<Secret> {
  return source instanceof Secret ? source : source.read();
}
