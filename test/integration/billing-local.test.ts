/**
 * The local billing provider (no payment provider configured) over real HTTP: default slots, direct slot changes
 * with nothing charged, the cap and the in-use floor, 400 for checkout/portal, enforcement on both create routes,
 * persistence across restarts, and switching between local and stripe on one data dir (config → provider).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultBillingConfig, type BillingConfig } from '../../service/billing/billing.ts';
import { BILLING_MESSAGES } from '../../service/billing/provider.ts';
import { resolveServiceConfig } from '../../service/config/service-config.ts';
import { FakeStripe } from '../fakes/stripe/server.ts';
import { startBillingApi, type BillingTestApi } from './billing-harness.ts';
import { startTestApi } from './api-harness.ts';

const local = (o: Partial<BillingConfig> = {}): BillingConfig => ({ ...defaultBillingConfig(), ...o });

describe('local billing provider', () => {
  let api: BillingTestApi;

  beforeAll(async () => {
    api = await startBillingApi(local({ defaultSlots: 2, maxSlots: 150, currency: 'eur' }));
  });
  afterAll(() => api.close());

  it('starts every user with the default slots and reports the documented fields', async () => {
    const ann = api.user('ann');
    api.connection(ann.id, 'online');
    api.connection(ann.id, 'stopped');
    const res = await api.request('GET', '/billing/status', { token: ann.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'local',
      slots: 2,
      used: 1,
      available: 1,
      maxSlots: 150,
      subscriptionStatus: null,
      currentPeriodEnd: null,
      currency: 'eur',
      checkoutCompleted: true,
    });
    expect((await api.request('GET', '/billing/can-create', { token: ann.token })).body).toEqual({
      canCreate: true,
      slots: 2,
      used: 1,
    });
  });

  it('sets slots directly with nothing charged', async () => {
    const bob = api.user('bob');
    const put = (quantity: number) =>
      api.request<Record<string, unknown>>('PUT', '/billing/slots', { token: bob.token, body: { quantity } });
    expect((await put(5)).body).toEqual({ slots: 5, status: 'upgraded', proratedAmount: 0, currency: 'eur' });
    expect((await put(5)).body).toEqual({ slots: 5, status: 'unchanged', proratedAmount: 0, currency: 'eur' });
    expect((await put(3)).body).toEqual({ slots: 3, status: 'downgraded', proratedAmount: 0, currency: 'eur' });
    expect((await put(150)).body).toMatchObject({ slots: 150, status: 'upgraded' });
    const over = await put(151);
    expect(over.status).toBe(400);
    expect(over.body.message).toBe('quantity 151 is over the maximum of 150 slots per account');
    expect((await put(0)).body).toMatchObject({ slots: 0, status: 'downgraded' });

    const missing = await api.request<{ message: string }>('PUT', '/billing/slots', { token: bob.token, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/quantity/);
    const extra = await api.request('PUT', '/billing/slots', { token: bob.token, body: { quantity: 1, force: true } });
    expect(extra.status).toBe(400);
  });

  it('refuses a downgrade below the connections in use, and never stops one', async () => {
    const cy = api.user('cy');
    const a = api.connection(cy.id, 'online');
    api.connection(cy.id, 'scan_qr');
    const res = await api.request<{ message: string }>('PUT', '/billing/slots', {
      token: cy.token,
      body: { quantity: 1 },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('Cannot reduce slots to 1: 2 connections are in use; delete 1 first');
    expect(api.store.connections.get(a.id)!.status).toBe('online');
    expect((await api.request('GET', '/billing/status', { token: cy.token })).body).toMatchObject({ slots: 2 });
  });

  it('checkout and portal answer 400 Billing provider not configured', async () => {
    const di = api.user('di');
    for (const route of ['/billing/checkout', '/billing/portal']) {
      const res = await api.request<{ message: string; statusCode: number }>('POST', route, { token: di.token });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(BILLING_MESSAGES.notConfigured);
    }
  });

  it('connection create needs a free slot (402); get-or-create reuses an idle one without', async () => {
    const ed = api.user('ed');
    const first = await api.request<{ id: string }>('POST', '/connections', { token: ed.token, body: {} });
    expect(first.status).toBe(201);
    api.connection(ed.id, 'online');
    const full = await api.request<{ message: string; error: string }>('POST', '/connections', {
      token: ed.token,
      body: {},
    });
    expect(full.status).toBe(402);
    expect(full.body).toMatchObject({ message: 'No free connection slot: 2 of 2 in use', error: 'Payment Required' });
    const reused = await api.request<{ id: string }>('POST', '/connections/get-or-create', {
      token: ed.token,
      body: {},
    });
    expect(reused.status).toBe(200);
    expect(reused.body.id).toBe(first.body.id);

    // More slots: creation works again.
    expect((await api.request('PUT', '/billing/slots', { token: ed.token, body: { quantity: 3 } })).status).toBe(200);
    expect((await api.request('POST', '/connections', { token: ed.token, body: {} })).status).toBe(201);
  });

  it('requires authentication', async () => {
    expect((await api.request('GET', '/billing/status')).status).toBe(401);
    expect((await api.request('PUT', '/billing/slots', { body: { quantity: 1 } })).status).toBe(401);
  });
});

describe('default billing (no billing configured)', () => {
  it('gives 100 slots per user with the default app deps', async () => {
    const api = await startTestApi();
    try {
      const u = api.user('zed');
      const res = await api.request('GET', '/billing/status', { token: u.token });
      expect(res.body).toMatchObject({
        provider: 'local',
        slots: 100,
        maxSlots: 100,
        currency: 'usd',
        checkoutCompleted: true,
      });
      expect((await api.request('POST', '/connections', { token: u.token, body: {} })).status).toBe(201);
    } finally {
      await api.close();
    }
  });
});

describe('switching providers on one data dir', () => {
  let fake: FakeStripe;
  let stripeUrl: string;
  let dataDir: string;

  beforeAll(async () => {
    fake = new FakeStripe();
    ({ url: stripeUrl } = await fake.start());
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-billing-switch-'));
  });
  afterAll(async () => {
    await fake.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('local slots persist; stripe starts from checkout; back to local keeps the local slots', async () => {
    const noBilling = resolveServiceConfig({}, {});
    expect(noBilling.billing).toBeUndefined(); // → the local provider with its defaults

    const localConfig = resolveServiceConfig({ defaultSlots: '4' }, {}).billing!;
    expect(localConfig.provider).toBe('local');
    let api = await startBillingApi(localConfig, { dataDir });
    const user = api.user('sam');
    expect((await api.request('GET', '/billing/status', { token: user.token })).body).toMatchObject({
      provider: 'local',
      slots: 4,
    });
    expect((await api.request('PUT', '/billing/slots', { token: user.token, body: { quantity: 7 } })).status).toBe(200);
    api.connection(user.id, 'online');
    await api.close();

    const stripeConfig = resolveServiceConfig(
      { stripePriceId: 'price_slot', stripeApiBase: stripeUrl },
      { SWITCHBOARD_STRIPE_SECRET_KEY: fake.secretKey },
    ).billing!;
    expect(stripeConfig.provider).toBe('stripe');
    api = await startBillingApi(stripeConfig, { dataDir });
    expect((await api.request('GET', '/billing/status', { token: user.token })).body).toMatchObject({
      provider: 'stripe',
      slots: 0,
      used: 1,
      available: 0,
      checkoutCompleted: false,
    });
    const checkout = await api.request<{ id: string }>('POST', '/billing/checkout', { token: user.token, body: {} });
    expect(checkout.status).toBe(200);
    // The default quantity covers the connections already in use.
    expect(fake.requests.at(-1)!.params).toMatchObject({ line_items: [{ price: 'price_slot', quantity: '1' }] });
    fake.completeCheckout(checkout.body.id);
    expect((await api.request('GET', '/billing/status?refresh=true', { token: user.token })).body).toMatchObject({
      provider: 'stripe',
      slots: 1,
      checkoutCompleted: true,
    });
    expect(api.logs()).not.toContain(fake.secretKey);
    await api.close();

    api = await startBillingApi(resolveServiceConfig({ billingProvider: 'local' }, {}).billing!, { dataDir });
    expect((await api.request('GET', '/billing/status', { token: user.token })).body).toMatchObject({
      provider: 'local',
      slots: 7,
    });
    await api.close();
  });
});
