/**
 * Billing settings from flags and environment: which provider is chosen, limits, and that the Stripe secret key
 * is wrapped so it never appears in serialised config, logs or error messages.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Secret } from '../../service/secrets/secret.ts';
import { toMajorUnits } from '../../service/billing/provider.ts';
import { billingSettings, ConfigError } from '../../service/config/service-config.ts';

const KEY = 'sk_test_51SecretValueNeverShown';

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('billingSettings', () => {
  it('nothing configured: no billing entry (the local provider with defaults)', () => {
    expect(billingSettings({}, {})).toEqual({});
  });

  it('local settings from flags and env', () => {
    expect(billingSettings({ defaultSlots: '5', maxSlots: '200' }, { SWITCHBOARD_BILLING_CURRENCY: 'EUR' })).toEqual({
      billing: { provider: 'local', maxSlots: 200, defaultSlots: 5, currency: 'eur', cacheTtlMs: 30_000 },
    });
    // The default slots follow a lower maximum.
    expect(billingSettings({ maxSlots: '10' }, {}).billing).toMatchObject({ maxSlots: 10, defaultSlots: 10 });
  });

  it('a Stripe key selects stripe; the key is a redacted Secret', () => {
    const { billing } = billingSettings(
      { stripePriceId: 'price_123', billingSuccessUrl: 'https://example.com/ok' },
      { SWITCHBOARD_STRIPE_SECRET_KEY: KEY, SWITCHBOARD_BILLING_CACHE_MS: '1000' },
    );
    expect(billing).toMatchObject({
      provider: 'stripe',
      cacheTtlMs: 1000,
      stripe: { priceId: 'price_123', successUrl: 'https://example.com/ok' },
    });
    const secret = billing!.stripe!.secretKey as Secret;
    expect(secret.reveal()).toBe(KEY);
    expect(JSON.stringify(billing)).not.toContain(KEY);
    expect(inspect(billing, { depth: 10 })).not.toContain(KEY);
    expect(String(secret)).toBe('[redacted]');
  });

  it('--billing-provider local wins over a present key', () => {
    expect(
      billingSettings({ billingProvider: 'local' }, { SWITCHBOARD_STRIPE_SECRET_KEY: KEY }).billing?.provider,
    ).toBe('local');
  });

  it('refuses unusable settings without echoing the key', () => {
    expect(configError(() => billingSettings({ billingProvider: 'stripe' }, {})).message).toMatch(
      /needs SWITCHBOARD_STRIPE_SECRET_KEY/,
    );
    expect(configError(() => billingSettings({}, { SWITCHBOARD_STRIPE_SECRET_KEY: KEY })).message).toMatch(
      /--stripe-price-id/,
    );
    const bad = configError(() =>
      billingSettings({ stripePriceId: 'price_1' }, { SWITCHBOARD_STRIPE_SECRET_KEY: 'pk_test_publishable_oops' }),
    );
    expect(bad.message).not.toContain('pk_test_publishable_oops');
    expect(configError(() => billingSettings({ billingProvider: 'paypal' }, {})).message).toMatch(/local or stripe/);
    expect(configError(() => billingSettings({ maxSlots: '0' }, {})).message).toMatch(/--max-slots/);
    expect(configError(() => billingSettings({ maxSlots: '10', defaultSlots: '11' }, {})).message).toMatch(
      /--default-slots/,
    );
    expect(configError(() => billingSettings({ billingCurrency: 'dollars' }, {})).message).toMatch(/currency/);
    expect(
      configError(() =>
        billingSettings(
          { stripePriceId: 'price_1', stripeApiBase: 'http://stripe.example.com' },
          { SWITCHBOARD_STRIPE_SECRET_KEY: KEY },
        ),
      ).message,
    ).toMatch(/http:\/\/ only on loopback/);
  });
});

describe('toMajorUnits', () => {
  it.each([
    [500, 'usd', 5],
    [-250, 'usd', -2.5],
    [-250, 'EUR', -2.5],
    [1234, 'jpy', 1234],
    [1500, 'kwd', 1.5],
    [0, 'usd', 0],
    [-0, 'usd', 0],
  ])('%d %s → %d', (minor, currency, major) => {
    expect(toMajorUnits(minor, currency)).toBe(major);
  });
});
