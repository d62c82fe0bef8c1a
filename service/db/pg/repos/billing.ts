/** PostgreSQL twin of service/db/billing.ts (same methods, same results, Promises). */
import { nowIso } from '../../database.ts';
import { stripeCustomerOfRow, type billingRepo, type StripeCustomerRawRow } from '../../billing.ts';
import type { Async } from '../../store-api.ts';
import type { PgScope } from './scope.ts';

export function pgBillingRepo({ sql }: PgScope): Async<ReturnType<typeof billingRepo>> {
  return {
    async localSlots(userId) {
      const [r] = await sql<Array<{ slots: number | null }>>`SELECT local_slots AS slots FROM billing_accounts WHERE user_id = ${userId}`;
      return r?.slots ?? undefined;
    },
    async setLocalSlots(userId, slots) {
      await sql`INSERT INTO billing_accounts (user_id, local_slots, updated_at) VALUES (${userId}, ${slots}, ${nowIso()})
        ON CONFLICT (user_id) DO UPDATE SET local_slots = excluded.local_slots, updated_at = excluded.updated_at`;
    },
    async stripeCustomer(userId, mode) {
      const [r] = await sql<StripeCustomerRawRow[]>`SELECT * FROM stripe_customers WHERE user_id = ${userId} AND mode = ${mode}`;
      return r && stripeCustomerOfRow(r);
    },
    async saveStripeCustomer(userId, mode, customerId) {
      await sql`INSERT INTO stripe_customers (user_id, mode, customer_id, subscription_id, updated_at)
        VALUES (${userId}, ${mode}, ${customerId}, NULL, ${nowIso()})
        ON CONFLICT (user_id, mode) DO UPDATE SET customer_id = excluded.customer_id, subscription_id = NULL,
          updated_at = excluded.updated_at`;
    },
    async setStripeSubscription(userId, mode, subscriptionId) {
      await sql`UPDATE stripe_customers SET subscription_id = ${subscriptionId}, updated_at = ${nowIso()}
        WHERE user_id = ${userId} AND mode = ${mode}`;
    },
    async forgetStripeCustomer(userId, mode) {
      await sql`DELETE FROM stripe_customers WHERE user_id = ${userId} AND mode = ${mode}`;
    },
  };
}
