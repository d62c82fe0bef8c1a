/**
 * The payment-provider interface behind the billing endpoints (interface-spec §4.8, docs/architecture.md § Billing),
 * its result types, and the bits both implementations share (amounts in major units, the messages clients see).
 *
 * A provider only knows how many slots a user has bought and how to change that; the rules around it (maximum,
 * no downgrade below the active connections, one change at a time, enforcement on connection create) are
 * `billing.ts`'s, so every provider obeys them the same way.
 */
import type { ProviderKind } from '../config/billing-settings.ts';

export type { ProviderKind };

/** What a provider knows about one user's slots. */
export interface ProviderAccount {
  /** Slots bought: the subscription quantity (stripe) or the stored/default number (local). 0 before checkout. */
  slots: number;
  /** Whether the slots may be used now (stripe: subscription `active`, `trialing` or `past_due`; local: always). */
  usable: boolean;
  /** The payment provider's subscription status (Stripe's values), null when there is none (local, or before checkout). */
  subscriptionStatus: string | null;
  /** End of the current billing period, ISO 8601; null without a subscription. */
  currentPeriodEnd: string | null;
  /** Lowercase currency code; null (stripe) before checkout, when no price is known yet. */
  currency: string | null;
  /** Whether slots can be changed with PUT /billing/slots (stripe: a checkout completed; local: always). */
  checkoutCompleted: boolean;
}

/** Result of a slot change as the provider reports it (the HTTP layer adds `status`). */
export interface ProviderSlotChange {
  slots: number;
  /** Major units: positive = charged now, negative = credited now, 0 = nothing. */
  proratedAmount: number;
  currency: string;
}

export interface CheckoutSession {
  url: string;
  id: string;
}

export interface BillingUser {
  id: string;
  name: string;
}

export interface BillingProvider {
  readonly kind: ProviderKind;
  /**
   * The user's slots. May use a short-lived cache; `fresh` bypasses it.
   * @throws ServiceError 502/503 when the payment provider cannot be asked.
   */
  account(userId: string, opts?: { fresh?: boolean }): Promise<ProviderAccount>;
  /**
   * Sets the user's slots to `quantity` (the caller has checked the rules and that it differs from the current one).
   * @throws ServiceError 400 when payment fails (nothing changed) or checkout has not been completed.
   */
  changeSlots(userId: string, quantity: number): Promise<ProviderSlotChange>;
  /** A checkout session for the first purchase of `quantity` slots. @throws ServiceError 400 (local), 409 (already done). */
  createCheckout(user: BillingUser, quantity: number): Promise<CheckoutSession>;
  /** A customer-portal session. @throws ServiceError 400 (local, or no customer yet). */
  createPortal(user: BillingUser): Promise<{ url: string }>;
}

/** Messages clients see (README "Billing"). */
export const BILLING_MESSAGES = {
  notConfigured: 'Billing provider not configured',
  checkoutFirst:
    'Checkout has not been completed: create a checkout session with POST /billing/checkout to add a payment method first',
  noCustomer: 'No billing account yet: complete checkout first (POST /billing/checkout)',
  checkoutDone:
    'Checkout has already been completed; change slots with PUT /billing/slots or open the portal with POST /billing/portal',
} as const;

/** Currencies Stripe counts in whole units (no minor unit). */
const ZERO_DECIMAL = new Set([
  'bif',
  'clp',
  'djf',
  'gnf',
  'jpy',
  'kmf',
  'krw',
  'mga',
  'pyg',
  'rwf',
  'ugx',
  'vnd',
  'vuv',
  'xaf',
  'xof',
  'xpf',
]);
/** Currencies Stripe counts in thousandths. */
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** An amount in the currency's smallest unit (Stripe's integers) → major units (`-250` usd → `-2.5`). */
export function toMajorUnits(minor: number, currency: string): number {
  const c = currency.toLowerCase();
  const digits = ZERO_DECIMAL.has(c) ? 0 : THREE_DECIMAL.has(c) ? 3 : 2;
  const major = Number((minor / 10 ** digits).toFixed(digits));
  return Object.is(major, -0) ? 0 : major;
}
