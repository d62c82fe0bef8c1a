/**
 * The `stripe` provider: the operator's own Stripe account bills its users (docs/architecture.md § Billing). One
 * customer per user (found by metadata `switchboardUserId`, remembered per Stripe mode), one subscription whose single
 * item's quantity is the number of slots. Checkout (subscription mode) is the first purchase; the Customer Portal
 * manages payment methods and cancellation; quantity changes are invoiced at once (`always_invoice`) and refused when
 * payment fails (`error_if_incomplete`: Stripe answers 402 and changes nothing).
 *
 * Stripe cannot call a desktop's localhost, so there are no Stripe webhooks here: the subscription is read from
 * Stripe on demand and cached for `cacheTtlMs` (a "no subscription yet" answer for at most 5 s, so a finished
 * checkout shows up quickly); every change through this provider invalidates the user's entry.
 *
 * The secret key is read from its SecretSource on first use, handed to the SDK and never logged; Stripe errors
 * are logged by type/code/request id only.
 */
import Stripe from 'stripe';
import type { Logger } from 'pino';
import type { BillingRepo, StripeMode } from '../db/billing.ts';
import { badRequest, conflict, ServiceError } from '../errors.ts';
import {
  BILLING_MESSAGES,
  toMajorUnits,
  type BillingProvider,
  type BillingUser,
  type ProviderAccount,
  type ProviderSlotChange,
} from './provider.ts';
import { readSecret, type SecretSource } from '../secrets/secret.ts';

export interface StripeProviderOptions {
  repo: BillingRepo;
  /** Runs a write of `repo` (store.txAsync: on the main thread it waits for the write lock without blocking). */
  write: <T>(fn: () => T) => Promise<T>;
  logger: Logger;
  secretKey: SecretSource;
  /** The recurring per-slot price (`price_...`). */
  priceId: string;
  /** Another Stripe API endpoint, e.g. `http://127.0.0.1:12111` for a local fake (tests) or stripe-mock. */
  apiBase?: string;
  /** Where Checkout sends the user afterwards, and where the portal's "return" link goes. */
  urls: () => { success: string; cancel: string; portalReturn: string };
  /** How long a subscription read from Stripe is reused (ms). */
  cacheTtlMs: number;
  /** Overrides of the SDK's network behaviour (tests). */
  sdk?: { maxNetworkRetries?: number; timeout?: number };
}

/** Statuses whose slots may be used. `past_due` keeps them while Stripe retries the payment. */
const USABLE = new Set(['active', 'trialing', 'past_due']);
/** Statuses that mean checkout never completed or the subscription is over: no slots can be changed. */
const NOT_SET_UP = new Set(['incomplete', 'incomplete_expired', 'canceled']);
/** A cached "no subscription" is re-checked after at most this long. */
const NEGATIVE_TTL_MS = 5_000;
const USER_ID_KEY = 'switchboardUserId';

interface SubscriptionSnapshot {
  id: string;
  itemId: string;
  quantity: number;
  status: string;
  currentPeriodEnd: number | null;
  currency: string;
  latestInvoiceId: string | null;
}

/** Mode of a secret or restricted key: `sk_live_…`/`rk_live_…` → live, anything else → test. */
export function stripeModeOf(key: string): StripeMode {
  return /^(sk|rk)_live_/.test(key) ? 'live' : 'test';
}

/** Logs a Stripe failure without its raw body or headers. */
function errorFacts(err: unknown): Record<string, unknown> {
  if (err instanceof Stripe.errors.StripeError) {
    return { type: err.type, code: err.code, statusCode: err.statusCode, requestId: err.requestId };
  }
  return { error: err instanceof Error ? err.name : typeof err };
}

export function createStripeProvider(opts: StripeProviderOptions): BillingProvider {
  const { repo, logger, priceId, cacheTtlMs } = opts;
  const log = logger.child({ component: 'billing' });
  let client: Promise<{ stripe: Stripe; mode: StripeMode }> | undefined;
  const cache = new Map<string, { at: number; sub: SubscriptionSnapshot | null }>();

  function stripeClient() {
    client ??= readSecret(opts.secretKey).then((secret) => {
      const key = secret.reveal();
      const config: Stripe.StripeConfig = {
        maxNetworkRetries: opts.sdk?.maxNetworkRetries ?? 2,
        timeout: opts.sdk?.timeout ?? 20_000,
        telemetry: false,
        appInfo: { name: 'Switchboard' },
      };
      if (opts.apiBase) {
        const base = new URL(opts.apiBase);
        config.host = base.hostname;
        config.protocol = base.protocol === 'http:' ? 'http' : 'https';
        if (base.port) config.port = base.port;
      }
      return { stripe: new Stripe(key, config), mode: stripeModeOf(key) };
    });
    client.catch(() => (client = undefined)); // a keychain read that failed is retried next time
    return client;
  }

  /** Runs a Stripe call, turning failures other than card errors into 502/503 ServiceErrors. */
  async function call<T>(what: string, fn: (stripe: Stripe, mode: StripeMode) => Promise<T>): Promise<T> {
    let c: { stripe: Stripe; mode: StripeMode };
    try {
      c = await stripeClient();
    } catch (err) {
      log.error({ error: (err as Error)?.name }, 'cannot read the Stripe secret key');
      throw new ServiceError(503, 'Payment provider unavailable: the Stripe secret key cannot be read');
    }
    try {
      return await fn(c.stripe, c.mode);
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      if (err instanceof Stripe.errors.StripeCardError) throw err; // the caller decides
      log.warn({ op: what, ...errorFacts(err) }, 'Stripe request failed');
      if (err instanceof Stripe.errors.StripeConnectionError)
        throw new ServiceError(503, 'Payment provider unreachable, please retry');
      if (err instanceof Stripe.errors.StripeAuthenticationError || err instanceof Stripe.errors.StripePermissionError)
        throw new ServiceError(502, 'Payment provider refused the configured credentials');
      if (err instanceof Stripe.errors.StripeRateLimitError)
        throw new ServiceError(503, 'Payment provider is rate limiting requests, please retry');
      if (err instanceof Stripe.errors.StripeInvalidRequestError)
        throw new ServiceError(502, `Payment provider error: ${err.message}`);
      throw new ServiceError(502, 'Payment provider error');
    }
  }

  function snapshot(sub: Stripe.Subscription): SubscriptionSnapshot | null {
    const item = sub.items.data.find((i) => i.price.id === priceId) ?? sub.items.data[0];
    if (!item) return null;
    const latest = sub.latest_invoice;
    return {
      id: sub.id,
      itemId: item.id,
      quantity: item.quantity ?? 0,
      status: sub.status,
      currentPeriodEnd: item.current_period_end ?? null,
      currency: sub.currency.toLowerCase(),
      latestInvoiceId: latest == null ? null : typeof latest === 'string' ? latest : latest.id,
    };
  }

  /** The best subscription of `customerId`: one with our price, usable first, then not ended, newest first. */
  function pick(subs: Stripe.Subscription[]): Stripe.Subscription | undefined {
    const rank = (s: Stripe.Subscription) => (USABLE.has(s.status) ? 0 : NOT_SET_UP.has(s.status) ? 2 : 1);
    return subs
      .filter((s) => s.items.data.some((i) => i.price.id === priceId))
      .sort((a, b) => rank(a) - rank(b) || b.created - a.created)[0];
  }

  /** The user's subscription, from the cache or Stripe; null when there is none (yet). */
  async function subscription(userId: string, fresh = false): Promise<SubscriptionSnapshot | null> {
    const hit = cache.get(userId);
    if (!fresh && hit && Date.now() - hit.at < (hit.sub ? cacheTtlMs : Math.min(cacheTtlMs, NEGATIVE_TTL_MS)))
      return hit.sub;
    const sub = await call('read subscription', async (stripe, mode) => {
      const customer = repo.stripeCustomer(userId, mode);
      if (!customer) return null;
      if (customer.subscriptionId) {
        try {
          const s = await stripe.subscriptions.retrieve(customer.subscriptionId);
          if (!NOT_SET_UP.has(s.status)) return snapshot(s);
        } catch (err) {
          if (!(err instanceof Stripe.errors.StripeInvalidRequestError && err.code === 'resource_missing')) throw err;
        }
      }
      let list: Stripe.ApiList<Stripe.Subscription>;
      try {
        list = await stripe.subscriptions.list({ customer: customer.customerId, status: 'all', limit: 20 });
      } catch (err) {
        if (err instanceof Stripe.errors.StripeInvalidRequestError && err.code === 'resource_missing') {
          // The customer is gone (deleted, or another Stripe account's id): start again at the next checkout.
          await opts.write(() => repo.forgetStripeCustomer(userId, mode));
          return null;
        }
        throw err;
      }
      const best = pick(list.data);
      if (best && best.id !== customer.subscriptionId) await opts.write(() => repo.setStripeSubscription(userId, mode, best.id));
      return best ? snapshot(best) : null;
    });
    cache.set(userId, { at: Date.now(), sub });
    return sub;
  }

  /** The user's customer id, creating the customer when there is none (found again by metadata after a data reset). */
  async function ensureCustomer(user: BillingUser): Promise<string> {
    return call('ensure customer', async (stripe, mode) => {
      const known = repo.stripeCustomer(user.id, mode);
      if (known) return known.customerId;
      const found = await stripe.customers.search({ query: `metadata['${USER_ID_KEY}']:'${user.id}'`, limit: 1 });
      const customer =
        found.data[0] ??
        (await stripe.customers.create(
          { name: user.name, metadata: { [USER_ID_KEY]: user.id } },
          { idempotencyKey: `switchboard-customer-${user.id}` },
        ));
      await opts.write(() => repo.saveStripeCustomer(user.id, mode, customer.id));
      return customer.id;
    });
  }

  return {
    kind: 'stripe',

    async account(userId, { fresh = false } = {}): Promise<ProviderAccount> {
      const sub = await subscription(userId, fresh);
      if (!sub || NOT_SET_UP.has(sub.status)) {
        return {
          slots: 0,
          usable: false,
          subscriptionStatus: sub?.status ?? null,
          currentPeriodEnd: null,
          currency: sub?.currency ?? null,
          checkoutCompleted: false,
        };
      }
      return {
        slots: sub.quantity,
        usable: USABLE.has(sub.status),
        subscriptionStatus: sub.status,
        currentPeriodEnd: sub.currentPeriodEnd === null ? null : new Date(sub.currentPeriodEnd * 1000).toISOString(),
        currency: sub.currency,
        checkoutCompleted: true,
      };
    },

    async changeSlots(userId, quantity): Promise<ProviderSlotChange> {
      const sub = await subscription(userId, true);
      if (!sub || NOT_SET_UP.has(sub.status)) throw badRequest(BILLING_MESSAGES.checkoutFirst);
      try {
        return await call('change slots', async (stripe) => {
          const updated = await stripe.subscriptions.update(sub.id, {
            items: [{ id: sub.itemId, quantity }],
            proration_behavior: 'always_invoice',
            payment_behavior: 'error_if_incomplete',
            expand: ['latest_invoice'],
          });
          const after = snapshot(updated);
          const currency = after?.currency ?? sub.currency;
          // The invoice Stripe created for this change; none (same latest invoice) means nothing was prorated.
          let invoice = updated.latest_invoice;
          const invoiceId = invoice == null ? null : typeof invoice === 'string' ? invoice : invoice.id;
          let amount = 0;
          if (invoiceId && invoiceId !== sub.latestInvoiceId) {
            if (typeof invoice === 'string') invoice = await stripe.invoices.retrieve(invoice);
            if (invoice) amount = toMajorUnits(invoice.total, invoice.currency ?? currency);
          }
          log.info(
            { userId, subscription: sub.id, from: sub.quantity, to: quantity, invoice: invoiceId },
            'slots changed',
          );
          return { slots: after?.quantity ?? quantity, proratedAmount: amount, currency };
        });
      } catch (err) {
        if (err instanceof Stripe.errors.StripeCardError) {
          log.info({ userId, subscription: sub.id, ...errorFacts(err) }, 'slot change declined');
          const reason = err.message ? ` (${err.message.replace(/\.$/, '')})` : '';
          throw badRequest(`Payment failed${reason}; slots unchanged at ${sub.quantity}`);
        }
        throw err;
      } finally {
        cache.delete(userId);
      }
    },

    async createCheckout(user, quantity) {
      const existing = await subscription(user.id, true);
      if (existing && !NOT_SET_UP.has(existing.status)) throw conflict(BILLING_MESSAGES.checkoutDone);
      const customer = await ensureCustomer(user);
      const urls = opts.urls();
      const session = await call('create checkout session', (stripe) =>
        stripe.checkout.sessions.create({
          mode: 'subscription',
          customer,
          client_reference_id: user.id,
          line_items: [{ price: priceId, quantity }],
          success_url: urls.success,
          cancel_url: urls.cancel,
          metadata: { [USER_ID_KEY]: user.id },
          subscription_data: { metadata: { [USER_ID_KEY]: user.id } },
        }),
      );
      cache.delete(user.id);
      if (!session.url) throw new ServiceError(502, 'Payment provider error: checkout session has no URL');
      return { url: session.url, id: session.id };
    },

    async createPortal(user) {
      const session = await call('create portal session', async (stripe, mode) => {
        const customer = repo.stripeCustomer(user.id, mode);
        if (!customer) throw badRequest(BILLING_MESSAGES.noCustomer);
        return stripe.billingPortal.sessions.create({
          customer: customer.customerId,
          return_url: opts.urls().portalReturn,
        });
      });
      cache.delete(user.id);
      return { url: session.url };
    },
  };
}
