/**
 * The `local` provider, used when no payment provider is configured (the desktop default): every user starts
 * with `defaultSlots`, slots are set directly with nothing charged, and checkout/portal do not exist.
 */
import type { BillingRepo } from '../db/billing.ts';
import { badRequest } from '../errors.ts';
import { BILLING_MESSAGES, type BillingProvider, type ProviderAccount, type ProviderSlotChange } from './provider.ts';

export interface LocalProviderOptions {
  repo: BillingRepo;
  /** Slots of a user who never changed them. */
  defaultSlots: number;
  /** Lowercase currency code reported with (zero) amounts. */
  currency: string;
  /** Runs a write of `repo` (store.txAsync: on the main thread it waits for the write lock without blocking). */
  write: <T>(fn: () => T) => Promise<T>;
}

export function createLocalProvider({ repo, defaultSlots, currency, write }: LocalProviderOptions): BillingProvider {
  return {
    kind: 'local',
    async account(userId): Promise<ProviderAccount> {
      return {
        slots: repo.localSlots(userId) ?? defaultSlots,
        usable: true,
        subscriptionStatus: null,
        currentPeriodEnd: null,
        currency,
        checkoutCompleted: true,
      };
    },
    async changeSlots(userId, quantity): Promise<ProviderSlotChange> {
      await write(() => repo.setLocalSlots(userId, quantity));
      return { slots: quantity, proratedAmount: 0, currency };
    },
    async createCheckout() {
      throw badRequest(BILLING_MESSAGES.notConfigured);
    },
    async createPortal() {
      throw badRequest(BILLING_MESSAGES.notConfigured);
    },
  };
}
