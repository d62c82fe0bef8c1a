/**
 * Slots and billing (interface-spec §1, §4.8, §8): the rules every provider obeys, over the provider the config
 * chooses (`local` or `stripe`).
 *
 * - `used` = the user's connections that are not `stopped`; `available` = slots − used (0 when the slots
 *   cannot be used, e.g. a Stripe subscription that is `unpaid`).
 * - A slot change is an integer 0…maxSlots (400 above), never below `used` (400: deleting connections is the
 *   caller's decision, never a side effect), and needs a completed checkout (stripe).
 * - Changes and connection creation of one user run one at a time, so a downgrade and a create cannot both win.
 */
import type { Logger } from 'pino';
import type { Store } from '../db/store.ts';
import { badRequest, ServiceError } from '../errors.ts';
import { createLocalProvider } from './local-provider.ts';
import {
  BILLING_MESSAGES,
  type BillingProvider,
  type BillingUser,
  type CheckoutSession,
  type ProviderKind,
} from './provider.ts';
import type { BillingConfig } from '../config/billing-settings.ts';
import { createStripeProvider } from './stripe-provider.ts';

export { defaultBillingConfig, type BillingConfig } from '../config/billing-settings.ts';

export type SlotChangeStatus = 'upgraded' | 'downgraded' | 'unchanged';

/** `PUT /billing/slots` result, exactly interface-spec §4.8. */
export interface SlotChange {
  slots: number;
  status: SlotChangeStatus;
  proratedAmount: number;
  currency: string;
}

/** `GET /billing/status`. */
export interface BillingStatus {
  provider: ProviderKind;
  slots: number;
  used: number;
  available: number;
  maxSlots: number;
  subscriptionStatus: string | null;
  currentPeriodEnd: string | null;
  currency: string | null;
  checkoutCompleted: boolean;
}

/** `GET /billing/can-create`. */
export interface CanCreate {
  canCreate: boolean;
  slots: number;
  used: number;
  reason?: string;
}

export interface Billing {
  readonly provider: ProviderKind;
  readonly maxSlots: number;
  status(userId: string, opts?: { fresh?: boolean }): Promise<BillingStatus>;
  canCreate(userId: string): Promise<CanCreate>;
  /** @throws ServiceError 400 (rules, declined payment, checkout missing), 502/503 (provider unavailable) */
  setSlots(userId: string, quantity: number): Promise<SlotChange>;
  /** @throws ServiceError 400 (local provider; quantity out of range), 409 (checkout already completed) */
  checkout(user: BillingUser, quantity?: number): Promise<CheckoutSession>;
  /** @throws ServiceError 400 (local provider, or no customer yet) */
  portal(user: BillingUser): Promise<{ url: string }>;
  /**
   * Runs `create` (synchronous: it stores the connection) if the user has a free slot, while no slot change of
   * theirs is in flight. @throws ServiceError 402 `No free connection slot: …`
   */
  withFreeSlot<T>(userId: string, create: () => T): Promise<T>;
}

/** A per-key promise chain: work for one key runs one at a time, keys are independent. */
function keyedLock() {
  const tails = new Map<string, Promise<unknown>>();
  return async function run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    tails.set(key, tail);
    try {
      return await next;
    } finally {
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}

export interface BillingOptions {
  store: Store;
  logger: Logger;
  config: BillingConfig;
  /** The console's origin (`http://127.0.0.1:PORT`), for the default Checkout/portal URLs; known once listening. */
  consoleOrigin: () => string;
}

/** The provider the config chooses. */
export function createBillingProvider(opts: BillingOptions): BillingProvider {
  const { config, store, logger } = opts;
  if (config.provider === 'local' || !config.stripe) {
    if (config.provider === 'stripe') throw new Error('billing provider "stripe" needs stripe settings');
    return createLocalProvider({ repo: store.billing, defaultSlots: config.defaultSlots, currency: config.currency, write: store.txAsync });
  }
  const s = config.stripe;
  return createStripeProvider({
    repo: store.billing,
    write: store.txAsync,
    logger,
    secretKey: s.secretKey,
    priceId: s.priceId,
    ...(s.apiBase && { apiBase: s.apiBase }),
    cacheTtlMs: config.cacheTtlMs,
    urls: () => {
      const origin = opts.consoleOrigin();
      return {
        // The console routes by the URL hash (renderer/src/stores/nav.ts): `/` serves it, `#/billing` opens the view.
        success: s.successUrl ?? `${origin}/?checkout=success&session_id={CHECKOUT_SESSION_ID}#/billing`,
        cancel: s.cancelUrl ?? `${origin}/?checkout=cancel#/billing`,
        portalReturn: s.returnUrl ?? `${origin}/#/billing`,
      };
    },
  });
}

export function noFreeSlotMessage(slots: number, used: number): string {
  return `No free connection slot: ${used} of ${slots} in use`;
}

/** Billing over `provider` (or the one `opts.config` chooses). */
export function createBilling(opts: BillingOptions, provider: BillingProvider = createBillingProvider(opts)): Billing {
  const { store } = opts;
  const { maxSlots } = opts.config;
  const lock = keyedLock();
  const used = (userId: string) => store.connections.countActiveByUser(userId);

  function checkQuantity(quantity: number, min: number): void {
    if (!Number.isInteger(quantity) || quantity < min) throw badRequest(`quantity must be an integer >= ${min}`);
    if (quantity > maxSlots)
      throw badRequest(`quantity ${quantity} is over the maximum of ${maxSlots} slots per account`);
  }

  /** Why no connection can be created now, or undefined when one can. */
  function refusal(
    a: { slots: number; usable: boolean; checkoutCompleted: boolean; subscriptionStatus: string | null },
    n: number,
  ) {
    if (!a.checkoutCompleted) return `${noFreeSlotMessage(0, n)}; complete checkout first (POST /billing/checkout)`;
    if (!a.usable)
      return `No free connection slot: the subscription is ${a.subscriptionStatus}; update the payment method in the billing portal (POST /billing/portal)`;
    if (n >= a.slots) return noFreeSlotMessage(a.slots, n);
    return undefined;
  }

  return {
    provider: provider.kind,
    maxSlots,

    async status(userId, { fresh = false } = {}) {
      const a = await provider.account(userId, { fresh });
      const n = used(userId);
      return {
        provider: provider.kind,
        slots: a.slots,
        used: n,
        available: a.usable ? Math.max(0, a.slots - n) : 0,
        maxSlots,
        subscriptionStatus: a.subscriptionStatus,
        currentPeriodEnd: a.currentPeriodEnd,
        currency: a.currency,
        checkoutCompleted: a.checkoutCompleted,
      };
    },

    async canCreate(userId) {
      const a = await provider.account(userId);
      const n = used(userId);
      const reason = refusal(a, n);
      return { canCreate: !reason, slots: a.slots, used: n, ...(reason && { reason }) };
    },

    setSlots(userId, quantity) {
      return lock(userId, async () => {
        checkQuantity(quantity, 0);
        const a = await provider.account(userId, { fresh: true });
        if (!a.checkoutCompleted) throw badRequest(BILLING_MESSAGES.checkoutFirst);
        const n = used(userId);
        if (quantity < n)
          throw badRequest(
            `Cannot reduce slots to ${quantity}: ${n} connections are in use; delete ${n - quantity} first`,
          );
        if (quantity === a.slots)
          return {
            slots: a.slots,
            status: 'unchanged',
            proratedAmount: 0,
            currency: a.currency ?? opts.config.currency,
          };
        const change = await provider.changeSlots(userId, quantity);
        const status: SlotChangeStatus =
          change.slots > a.slots ? 'upgraded' : change.slots < a.slots ? 'downgraded' : 'unchanged';
        return { slots: change.slots, status, proratedAmount: change.proratedAmount, currency: change.currency };
      });
    },

    async checkout(user, quantity) {
      if (provider.kind === 'local') return provider.createCheckout(user, 0); // 400 not configured
      const q = quantity ?? Math.max(1, used(user.id));
      checkQuantity(q, 1);
      return lock(user.id, () => provider.createCheckout(user, q));
    },

    portal(user) {
      return provider.createPortal(user);
    },

    withFreeSlot(userId, create) {
      return lock(userId, async () => {
        const a = await provider.account(userId);
        const reason = refusal(a, used(userId)); // no await between this check and create(): nothing interleaves
        if (reason) throw new ServiceError(402, reason);
        return create();
      });
    },
  };
}
