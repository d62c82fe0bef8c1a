/**
 * The stripe billing provider over real HTTP, through the real `stripe` SDK against the stateful fake Stripe on
 * 127.0.0.1: checkout first, checkout → subscription, portal, upgrade (charged), downgrade (credited), unchanged,
 * declined payment (400, nothing changes), the 100-slot cap, no downgrade below the connections in use, slot
 * enforcement on both create routes, the status cache, and that the secret key never reaches the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BillingConfig } from '../../service/billing/billing.ts';
import { BILLING_MESSAGES } from '../../service/billing/provider.ts';
import { Secret } from '../../service/secrets/secret.ts';
import { FakeStripe } from '../fakes/stripe/server.ts';
import { startBillingApi, type BillingTestApi } from './billing-harness.ts';
import type { TestUser } from './api-harness.ts';

const DAY = 86_400;

interface Status {
  provider: string;
  slots: number;
  used: number;
  available: number;
  maxSlots: number;
  subscriptionStatus: string | null;
  currentPeriodEnd: string | null;
  currency: string | null;
  checkoutCompleted: boolean;
}

export function stripeConfig(fake: FakeStripe, url: string, overrides: Partial<BillingConfig> = {}): BillingConfig {
  return {
    provider: 'stripe',
    maxSlots: 100,
    defaultSlots: 100,
    currency: 'usd',
    cacheTtlMs: 30_000,
    stripe: { secretKey: new Secret(fake.secretKey), priceId: 'price_slot', apiBase: url },
    ...overrides,
  };
}

describe('stripe billing provider', () => {
  let fake: FakeStripe;
  let api: BillingTestApi;
  let origin: string;

  beforeAll(async () => {
    fake = new FakeStripe();
    const { url } = await fake.start();
    api = await startBillingApi(stripeConfig(fake, url));
    origin = api.baseUrl.replace(/\/api$/, '');
  });
  afterAll(async () => {
    await api.close();
    await fake.close();
  });

  /** Checkout for `quantity` slots, completed on the fake; the clock then stands at the middle of the period. */
  async function subscribe(user: TestUser, quantity: number): Promise<string> {
    const res = await api.request<{ url: string; id: string }>('POST', '/billing/checkout', {
      token: user.token,
      body: { quantity },
    });
    expect(res.status).toBe(200);
    fake.completeCheckout(res.body.id);
    fake.setNow(fake.now + 15 * DAY); // periods are 30 days: half of it is left
    const status = await api.request<Status>('GET', '/billing/status?refresh=true', { token: user.token });
    expect(status.body).toMatchObject({ slots: quantity, checkoutCompleted: true });
    return fake.customerByUserId(user.id)!.id;
  }

  const updates = () => fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/subscriptions/'));

  it('before checkout: no slots, slot changes and the portal refused with 400, connection create 402', async () => {
    const ann = api.user('ann');
    const status = await api.request<Status>('GET', '/billing/status', { token: ann.token });
    expect(status.status).toBe(200);
    expect(status.body).toEqual({
      provider: 'stripe',
      slots: 0,
      used: 0,
      available: 0,
      maxSlots: 100,
      subscriptionStatus: null,
      currentPeriodEnd: null,
      currency: null,
      checkoutCompleted: false,
    });

    const can = await api.request('GET', '/billing/can-create', { token: ann.token });
    expect(can.body).toEqual({
      canCreate: false,
      slots: 0,
      used: 0,
      reason: 'No free connection slot: 0 of 0 in use; complete checkout first (POST /billing/checkout)',
    });

    const put = await api.request<{ message: string }>('PUT', '/billing/slots', {
      token: ann.token,
      body: { quantity: 3 },
    });
    expect(put.status).toBe(400);
    expect(put.body.message).toBe(BILLING_MESSAGES.checkoutFirst);

    const portal = await api.request<{ message: string }>('POST', '/billing/portal', { token: ann.token });
    expect(portal.status).toBe(400);
    expect(portal.body.message).toBe(BILLING_MESSAGES.noCustomer);

    for (const route of ['/connections', '/connections/get-or-create']) {
      const res = await api.request<{ message: string; statusCode: number; error: string }>('POST', route, {
        token: ann.token,
        body: {},
      });
      expect(res.status).toBe(402);
      expect(res.body).toEqual({
        statusCode: 402,
        error: 'Payment Required',
        message: 'No free connection slot: 0 of 0 in use; complete checkout first (POST /billing/checkout)',
      });
    }
    expect(api.store.connections.countActiveByUser(ann.id)).toBe(0);
    expect(updates()).toHaveLength(0);
  });

  it('checkout creates one customer and a subscription-mode session; completing it gives the slots', async () => {
    const bea = api.user('bea');
    const first = await api.request<{ url: string; id: string }>('POST', '/billing/checkout', {
      token: bea.token,
      body: { quantity: 2 },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^cs_test_/),
      url: expect.stringMatching(/^https:\/\/checkout\.stripe\.com\//),
    });

    const sent = fake.requests.find((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions')!;
    const customer = fake.customerByUserId(bea.id)!;
    expect(customer.metadata).toEqual({ switchboardUserId: bea.id });
    expect(customer.name).toBe('bea');
    expect(sent.params).toMatchObject({
      mode: 'subscription',
      customer: customer.id,
      client_reference_id: bea.id,
      line_items: [{ price: 'price_slot', quantity: '2' }],
      success_url: `${origin}/?checkout=success&session_id={CHECKOUT_SESSION_ID}#/billing`,
      cancel_url: `${origin}/?checkout=cancel#/billing`,
      metadata: { switchboardUserId: bea.id },
      subscription_data: { metadata: { switchboardUserId: bea.id } },
    });

    // Abandoned and started again: the same customer.
    const second = await api.request<{ id: string }>('POST', '/billing/checkout', {
      token: bea.token,
      body: { quantity: 2 },
    });
    expect(second.status).toBe(200);
    expect(
      [...fake.customers.values()].filter((c) => (c.metadata as Record<string, string>).switchboardUserId === bea.id),
    ).toHaveLength(1);

    fake.completeCheckout(second.body.id);
    const status = await api.request<Status>('GET', '/billing/status?refresh=true', { token: bea.token });
    const sub = fake.subscriptionOf(customer.id)!;
    expect(status.body).toEqual({
      provider: 'stripe',
      slots: 2,
      used: 0,
      available: 2,
      maxSlots: 100,
      subscriptionStatus: 'active',
      currentPeriodEnd: new Date(
        (sub.items as { data: Array<{ current_period_end: number }> }).data[0]!.current_period_end * 1000,
      ).toISOString(),
      currency: 'usd',
      checkoutCompleted: true,
    });

    const again = await api.request<{ message: string }>('POST', '/billing/checkout', { token: bea.token, body: {} });
    expect(again.status).toBe(409);
    expect(again.body.message).toBe(BILLING_MESSAGES.checkoutDone);

    const portal = await api.request<{ url: string }>('POST', '/billing/portal', { token: bea.token });
    expect(portal.status).toBe(200);
    expect(portal.body.url).toMatch(/^https:\/\/billing\.stripe\.com\//);
    const portalReq = fake.requests.find((r) => r.path === '/v1/billing_portal/sessions')!;
    expect(portalReq.params).toEqual({ customer: customer.id, return_url: `${origin}/#/billing` });
  });

  it('upgrade charges the prorated amount, downgrade credits it, the same quantity changes nothing', async () => {
    const cat = api.user('cat');
    const customerId = await subscribe(cat, 2);
    const before = updates().length;

    // 2 → 4 with half the period left at 5.00/slot: 2 × 5.00 × ½ = 5.00 charged.
    const up = await api.request('PUT', '/billing/slots', { token: cat.token, body: { quantity: 4 } });
    expect(up.status).toBe(200);
    expect(up.body).toEqual({ slots: 4, status: 'upgraded', proratedAmount: 5, currency: 'usd' });
    const sent = updates().at(-1)!;
    expect(sent.params).toEqual({
      items: [{ id: expect.stringMatching(/^si_/), quantity: '4' }],
      proration_behavior: 'always_invoice',
      payment_behavior: 'error_if_incomplete',
      expand: ['latest_invoice'],
    });
    expect(sent.idempotencyKey).toBeTruthy(); // the SDK's, so a retried request cannot charge twice

    // 4 → 3: 1 × 5.00 × ½ = 2.50 credited.
    const down = await api.request('PUT', '/billing/slots', { token: cat.token, body: { quantity: 3 } });
    expect(down.body).toEqual({ slots: 3, status: 'downgraded', proratedAmount: -2.5, currency: 'usd' });
    expect(fake.customers.get(customerId)!.balance).toBe(-250);

    const same = await api.request('PUT', '/billing/slots', { token: cat.token, body: { quantity: 3 } });
    expect(same.body).toEqual({ slots: 3, status: 'unchanged', proratedAmount: 0, currency: 'usd' });
    expect(updates().length).toBe(before + 2);

    // Changes invalidate the cache: status shows the new quantity without ?refresh.
    const status = await api.request<Status>('GET', '/billing/status', { token: cat.token });
    expect(status.body).toMatchObject({ slots: 3, available: 3 });
  });

  it('a declined payment answers 400 and changes nothing; a credit still goes through', async () => {
    const dan = api.user('dan');
    const customerId = await subscribe(dan, 2);
    fake.declineCustomer(customerId, 'insufficient_funds');
    const invoicesBefore = fake.invoices.size;

    const res = await api.request<{ message: string; statusCode: number }>('PUT', '/billing/slots', {
      token: dan.token,
      body: { quantity: 5 },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('Payment failed (Your card was declined); slots unchanged at 2');
    expect(fake.invoices.size).toBe(invoicesBefore);
    const item = (fake.subscriptionOf(customerId)!.items as { data: Array<{ quantity: number }> }).data[0]!;
    expect(item.quantity).toBe(2);
    const status = await api.request<Status>('GET', '/billing/status?refresh=true', { token: dan.token });
    expect(status.body.slots).toBe(2);

    const down = await api.request('PUT', '/billing/slots', { token: dan.token, body: { quantity: 1 } });
    expect(down.body).toEqual({ slots: 1, status: 'downgraded', proratedAmount: -2.5, currency: 'usd' });
  });

  it('quantity: integer 0…100, never below the connections in use', async () => {
    const eve = api.user('eve');
    await subscribe(eve, 3);
    const put = (quantity: unknown) =>
      api.request<{ message: string }>('PUT', '/billing/slots', { token: eve.token, body: { quantity } });

    const over = await put(101);
    expect(over.status).toBe(400);
    expect(over.body.message).toBe('quantity 101 is over the maximum of 100 slots per account');
    expect((await put(-1)).status).toBe(400);
    expect((await put(2.5)).status).toBe(400);
    expect((await put('4')).status).toBe(400);

    api.connection(eve.id, 'online');
    api.connection(eve.id, 'logged_out');
    api.connection(eve.id, 'stopped'); // deleted: holds no slot
    const below = await put(1);
    expect(below.status).toBe(400);
    expect(below.body.message).toBe('Cannot reduce slots to 1: 2 connections are in use; delete 1 first');

    const hundred = await put(100);
    expect(hundred.body).toMatchObject({ slots: 100, status: 'upgraded' });
    const zeroUsed = api.user('eve-2');
    await subscribe(zeroUsed, 1);
    expect((await api.request('PUT', '/billing/slots', { token: zeroUsed.token, body: { quantity: 0 } })).body).toEqual(
      {
        slots: 0,
        status: 'downgraded',
        proratedAmount: -2.5,
        currency: 'usd',
      },
    );
  });

  it('connection create and get-or-create need a free slot; reusing an idle connection does not', async () => {
    const fay = api.user('fay');
    await subscribe(fay, 2);

    const created = await api.request<{ id: string }>('POST', '/connections', {
      token: fay.token,
      body: { name: 'one' },
    });
    expect(created.status).toBe(201);
    api.connection(fay.id, 'online');

    const full = await api.request<{ message: string }>('POST', '/connections', { token: fay.token, body: {} });
    expect(full.status).toBe(402);
    expect(full.body.message).toBe('No free connection slot: 2 of 2 in use');
    expect(await api.request('GET', '/billing/can-create', { token: fay.token })).toMatchObject({
      body: { canCreate: false, slots: 2, used: 2, reason: 'No free connection slot: 2 of 2 in use' },
    });

    // The first connection never linked: get-or-create hands it back without a slot.
    const reused = await api.request<{ id: string }>('POST', '/connections/get-or-create', {
      token: fay.token,
      body: {},
    });
    expect(reused.status).toBe(200);
    expect(reused.body.id).toBe(created.body.id);

    // Once it is deleted, a slot is free again.
    expect((await api.request('DELETE', `/connections/${created.body.id}`, { token: fay.token })).status).toBe(200);
    expect((await api.request('GET', '/billing/can-create', { token: fay.token })).body).toEqual({
      canCreate: true,
      slots: 2,
      used: 1,
    });

    const gus = api.user('gus');
    await subscribe(gus, 1);
    api.connection(gus.id, 'online');
    const goc = await api.request<{ message: string }>('POST', '/connections/get-or-create', {
      token: gus.token,
      body: {},
    });
    expect(goc.status).toBe(402);
    expect(goc.body.message).toBe('No free connection slot: 1 of 1 in use');
    expect(api.store.connections.countActiveByUser(gus.id)).toBe(1);
  });

  it('concurrent creates never exceed the slots', async () => {
    const hal = api.user('hal');
    await subscribe(hal, 3);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => api.request('POST', '/connections', { token: hal.token, body: {} })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 402)).toHaveLength(3);
    expect(api.store.connections.countActiveByUser(hal.id)).toBe(3);
  });

  it('an unpaid subscription keeps its slots but allows no new connection', async () => {
    const ivy = api.user('ivy');
    const customerId = await subscribe(ivy, 2);
    fake.setSubscriptionStatus(fake.subscriptionOf(customerId)!.id, 'unpaid');
    const status = await api.request<Status>('GET', '/billing/status?refresh=true', { token: ivy.token });
    expect(status.body).toMatchObject({
      slots: 2,
      available: 0,
      subscriptionStatus: 'unpaid',
      checkoutCompleted: true,
    });
    const res = await api.request<{ message: string }>('POST', '/connections', { token: ivy.token, body: {} });
    expect(res.status).toBe(402);
    expect(res.body.message).toMatch(/subscription is unpaid/);
  });

  it('reads the subscription from Stripe once per cache period', async () => {
    const joe = api.user('joe');
    await subscribe(joe, 1);
    const reads = () =>
      fake.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/subscriptions')).length;
    await api.request('GET', '/billing/status', { token: joe.token });
    const n = reads();
    await api.request('GET', '/billing/status', { token: joe.token });
    await api.request('GET', '/billing/can-create', { token: joe.token });
    expect(reads()).toBe(n);
    await api.request('GET', '/billing/status?refresh=true', { token: joe.token });
    expect(reads()).toBe(n + 1);
  });

  it('maps Stripe failures to 502 and never logs the secret key', async () => {
    const kim = api.user('kim');
    await subscribe(kim, 1);
    fake.failNext(401, { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_****fake' });
    const res = await api.request<{ message: string }>('GET', '/billing/status?refresh=true', { token: kim.token });
    expect(res.status).toBe(502);
    expect(res.body.message).toBe('Payment provider refused the configured credentials');
    const logs = api.logs();
    expect(logs).toContain('Stripe request failed');
    expect(logs).not.toContain(fake.secretKey);
    expect(JSON.stringify(new Secret(fake.secretKey))).toBe('"[redacted]"');
  });
});
