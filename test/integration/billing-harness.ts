/**
 * The API with a chosen billing configuration, for the billing tests: `startTestApi` (real store, real engine
 * pointed at an unreachable server, the app on 127.0.0.1:0) with `Billing` built from a BillingConfig exactly as the
 * service builds it. With a stripe config pointing at the loopback fake, the real SDK talks to the fake.
 * Connections made with `connection()` are `online` unless told otherwise.
 */
import { createBilling, type Billing, type BillingConfig } from '../../service/billing/billing.ts';
import { startTestApi, type TestApi } from './api-harness.ts';

export type BillingTestApi = TestApi & { billing: Billing };

export async function startBillingApi(config: BillingConfig, opts: { dataDir?: string } = {}): Promise<BillingTestApi> {
  const api = await startTestApi({
    ...(opts.dataDir && { dataDir: opts.dataDir }),
    connectionStatus: 'online',
    billing: ({ store, logger, origin }) => createBilling({ store, logger, config, consoleOrigin: origin }),
  });
  return { ...api, billing: api.billing! };
}
