/**
 * Stripe's return URLs land on the console's billing view: `switchboard serve` with the stripe provider against
 * the Stripe fake, a checkout and a portal session created through the API, and the success, cancel and portal
 * return URLs the service gave Stripe followed in Debian Chromium (playwright-core), each showing the billing view.
 * Skipped, with the reason printed, when no Chromium is installed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { launchConsole, CHROMIUM } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeStripe } from '../fakes/stripe/server.ts';
import { runCli, startServe, type ServiceProcess } from '../helpers/service-process.ts';

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log(`[billing return e2e] skipped: no Chromium at ${CHROMIUM}`);

describe.skipIf(!haveChromium)('billing: Stripe return URLs open the console billing view', { timeout: 90_000 }, () => {
  let dataDir: string;
  let userDataDir: string;
  let fake: FakeStripe;
  let service: ServiceProcess;
  let context: BrowserContext;
  let page: Page;
  let token: string;
  let origin: string;

  const post = async (route: string, body: unknown) => {
    const res = await fetch(`${service.apiUrl}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-billing-return-'));
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-'));
    fake = new FakeStripe();
    const { url: stripeUrl } = await fake.start();
    service = await startServe(
      ['--port', '0', '--data-dir', dataDir, '--billing-provider', 'stripe', '--stripe-price-id', 'price_slot', '--stripe-api-base', stripeUrl],
      { SWITCHBOARD_STRIPE_SECRET_KEY: fake.secretKey },
    );
    origin = new URL(service.apiUrl).origin;
    const created = await runCli(['token', 'create', '--user', 'payer', '--name', 'e2e', '--data-dir', dataDir]);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    ({ context, page } = await launchConsole(userDataDir, 'billing-return e2e'));
    // Sign in once; the token stays in the tab's sessionStorage across the navigations below.
    await page.goto(`${origin}/`);
    await page.getByTestId('token-input').fill(token);
    await page.getByRole('button', { name: 'Open console' }).click();
    await page.getByTestId('nav-billing').waitFor();
  });

  afterAll(async () => {
    await context?.close();
    await service?.stop('SIGKILL');
    await fake?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  /** Opens `url` as a browser coming back from Stripe does (a full load from another page): the billing view. */
  const landsOnBilling = async (url: string) => {
    expect(new URL(url).origin).toBe(origin);
    await page.goto(`${origin}/#/connections`);
    await page.getByTestId('new-connection').waitFor();
    await page.goto('about:blank');
    const res = await page.goto(url);
    expect(res?.status()).toBe(200);
    await page.getByTestId('billing-slots').waitFor();
    expect(await page.getByTestId('new-connection').count()).toBe(0);
  };

  it('checkout success and cancel URLs', async () => {
    const checkout = await post('/billing/checkout', { quantity: 1 });
    expect(checkout.status).toBe(200);
    const sent = fake.requests.find((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions')!;
    const success = String(sent.params.success_url).replace('{CHECKOUT_SESSION_ID}', checkout.body.id!);
    await landsOnBilling(success);
    await landsOnBilling(String(sent.params.cancel_url));
  });

  it('portal return URL', async () => {
    const session = [...fake.sessions.values()].at(-1)!;
    fake.completeCheckout(session.id);
    const portal = await post('/billing/portal', {});
    expect(portal.status).toBe(200);
    const sent = fake.requests.find((r) => r.method === 'POST' && r.path === '/v1/billing_portal/sessions')!;
    await landsOnBilling(String(sent.params.return_url));
  });
});
