/**
 * Billing settings and their defaults, kept free of the provider code (and the Stripe SDK) so config resolution
 * stays light, and in config/ so the config loader does not reach up into billing/ (the layering: docs/architecture.md
 * § Layering: who may import whom). Resolved from flags/env in service-config.ts; the desktop app builds one with its
 * keychain-backed SecretStore as the Stripe key's source.
 */
import type { SecretSource } from '../secrets/secret.ts';

/** Which payment provider counts the slots (billing/provider.ts). */
export type ProviderKind = 'local' | 'stripe';

export const DEFAULT_MAX_SLOTS = 100;
export const DEFAULT_CACHE_TTL_MS = 30_000;
export const DEFAULT_CURRENCY = 'usd';

export interface StripeSettings {
  secretKey: SecretSource;
  /** The recurring per-slot price, `price_…`. */
  priceId: string;
  /** Another API endpoint than https://api.stripe.com (a local fake, stripe-mock). */
  apiBase?: string;
  /** Defaults: the console's billing page on this service (`<origin>/billing?checkout=success|cancel`, `<origin>/billing`). */
  successUrl?: string;
  cancelUrl?: string;
  returnUrl?: string;
}

export interface BillingConfig {
  provider: ProviderKind;
  /** Most slots one account may have (PUT /billing/slots and checkout). */
  maxSlots: number;
  /** local: slots of a user who never set them. */
  defaultSlots: number;
  /** local: currency reported with the (zero) amounts. */
  currency: string;
  /** stripe: how long subscription state read from Stripe is reused (ms). */
  cacheTtlMs: number;
  stripe?: StripeSettings;
}

export function defaultBillingConfig(): BillingConfig {
  return {
    provider: 'local',
    maxSlots: DEFAULT_MAX_SLOTS,
    defaultSlots: DEFAULT_MAX_SLOTS,
    currency: DEFAULT_CURRENCY,
    cacheTtlMs: DEFAULT_CACHE_TTL_MS,
  };
}
