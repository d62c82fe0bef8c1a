/**
 * Billing tables: the slots a user has with the local provider, and each user's Stripe customer (and the
 * subscription found for it) per Stripe mode, so switching between test and live keys never mixes ids.
 * Subscription state itself is not stored: it is read from Stripe (see billing/stripe-provider.ts).
 */
import type { Db } from './database.ts';
import { nowIso } from './database.ts';

/** `test` or `live`, from the secret key's prefix. */
export type StripeMode = 'test' | 'live';

export interface StripeCustomerRow {
  userId: string;
  mode: StripeMode;
  customerId: string;
  subscriptionId: string | null;
}

/** A `stripe_customers` row as either engine returns it (without `updated_at`, which no caller reads). */
export interface StripeCustomerRawRow {
  user_id: string;
  mode: StripeMode;
  customer_id: string;
  subscription_id: string | null;
}

/** The StripeCustomerRow of a raw `stripe_customers` row. */
export const stripeCustomerOfRow = (r: StripeCustomerRawRow): StripeCustomerRow => ({
  userId: r.user_id,
  mode: r.mode,
  customerId: r.customer_id,
  subscriptionId: r.subscription_id,
});

export type BillingRepo = ReturnType<typeof billingRepo>;

export function billingRepo(db: Db) {
  const q = {
    localSlots: db.prepare(`SELECT local_slots AS slots FROM billing_accounts WHERE user_id = ?`),
    setLocalSlots: db.prepare(
      `INSERT INTO billing_accounts (user_id, local_slots, updated_at) VALUES (@userId, @slots, @now)
       ON CONFLICT (user_id) DO UPDATE SET local_slots = excluded.local_slots, updated_at = excluded.updated_at`,
    ),
    customer: db.prepare(`SELECT * FROM stripe_customers WHERE user_id = ? AND mode = ?`),
    saveCustomer: db.prepare(
      `INSERT INTO stripe_customers (user_id, mode, customer_id, subscription_id, updated_at)
       VALUES (@userId, @mode, @customerId, NULL, @now)
       ON CONFLICT (user_id, mode) DO UPDATE SET customer_id = excluded.customer_id, subscription_id = NULL,
         updated_at = excluded.updated_at`,
    ),
    setSubscription: db.prepare(
      `UPDATE stripe_customers SET subscription_id = @subscriptionId, updated_at = @now WHERE user_id = @userId AND mode = @mode`,
    ),
    forgetCustomer: db.prepare(`DELETE FROM stripe_customers WHERE user_id = ? AND mode = ?`),
  };
  return {
    /** Slots set with the local provider; undefined when never set (the configured default applies). */
    localSlots(userId: string): number | undefined {
      const r = q.localSlots.get(userId) as { slots: number | null } | undefined;
      return r?.slots ?? undefined;
    },
    setLocalSlots(userId: string, slots: number): void {
      q.setLocalSlots.run({ userId, slots, now: nowIso() });
    },
    stripeCustomer(userId: string, mode: StripeMode): StripeCustomerRow | undefined {
      const r = q.customer.get(userId, mode) as StripeCustomerRawRow | undefined;
      return r && stripeCustomerOfRow(r);
    },
    /** Records the user's customer (replacing any other, and forgetting its subscription). */
    saveStripeCustomer(userId: string, mode: StripeMode, customerId: string): void {
      q.saveCustomer.run({ userId, mode, customerId, now: nowIso() });
    },
    setStripeSubscription(userId: string, mode: StripeMode, subscriptionId: string | null): void {
      q.setSubscription.run({ userId, mode, subscriptionId, now: nowIso() });
    },
    /** Drops the mapping (the customer no longer exists in that Stripe account). */
    forgetStripeCustomer(userId: string, mode: StripeMode): void {
      q.forgetCustomer.run(userId, mode);
    },
  };
}
