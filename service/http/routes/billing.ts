/**
 * Billing (interface-spec §4.8): slot status, whether a connection can be created, slot changes, and the payment
 * provider's checkout and portal sessions. The rules live in billing/billing.ts; this file maps HTTP to them.
 */
import { Type } from '@sinclair/typebox';
import pino from 'pino';
import { createBilling, defaultBillingConfig, type Billing } from '../../billing/billing.ts';
import type { Store } from '../../db/store.ts';
import type { ApiDeps } from '../deps.ts';
import { ErrorResponse as ErrorBody, Nullable } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

const defaults = new WeakMap<Store, Billing>();

/**
 * The service's Billing: `deps.billing`, or (embedders and tests that pass none) one local-provider Billing with
 * the default settings per store, shared by the connection and billing routes.
 */
export function billingOf(deps: Pick<ApiDeps, 'store' | 'billing'>): Billing {
  if (deps.billing) return deps.billing;
  let billing = defaults.get(deps.store);
  if (!billing) {
    billing = createBilling({
      store: deps.store,
      logger: pino({ level: 'silent' }),
      config: defaultBillingConfig(),
      consoleOrigin: () => '',
    });
    defaults.set(deps.store, billing);
  }
  return billing;
}

const ProviderErrors = {
  502: ErrorBody('The payment provider refused the request or its credentials (`Payment provider error: …`)'),
  503: ErrorBody('The payment provider cannot be reached, or the secret key cannot be read; retry later'),
};

const ProviderSchema = Type.Union([Type.Literal('local'), Type.Literal('stripe')]);

export const BillingStatusSchema = Type.Object({
  provider: ProviderSchema,
  slots: Type.Integer({ description: 'Slots bought (the subscription quantity); 0 before checkout' }),
  used: Type.Integer({ description: 'Connections that are not stopped' }),
  available: Type.Integer({ description: 'slots − used, or 0 while the subscription does not allow using them' }),
  maxSlots: Type.Integer({ description: 'Most slots this account may have' }),
  subscriptionStatus: Nullable(
    Type.String({ description: "The payment provider's subscription status (Stripe's values); null without one" }),
  ),
  currentPeriodEnd: Nullable(Type.String({ description: 'End of the current billing period, ISO 8601' })),
  currency: Nullable(Type.String({ description: 'Lowercase currency code; null before checkout (stripe)' })),
  checkoutCompleted: Type.Boolean({ description: 'Whether PUT /billing/slots can be used (always true for local)' }),
});

const CanCreateSchema = Type.Object({
  canCreate: Type.Boolean(),
  slots: Type.Integer(),
  used: Type.Integer(),
  reason: Type.Optional(Type.String()),
});

const SlotsBody = Type.Object(
  { quantity: Type.Integer({ minimum: 0, description: 'Desired total number of slots (0 … maxSlots)' }) },
  { additionalProperties: false },
);

export const SlotChangeSchema = Type.Object({
  slots: Type.Integer(),
  status: Type.Union([Type.Literal('upgraded'), Type.Literal('downgraded'), Type.Literal('unchanged')]),
  proratedAmount: Type.Number({ description: 'Major units; positive = charged now, negative = credited now' }),
  currency: Type.String(),
});

const CheckoutBody = Type.Object(
  {
    quantity: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Slots to buy (default: connections in use, at least 1)' }),
    ),
  },
  { additionalProperties: false },
);
const CheckoutSchema = Type.Object({ url: Type.String(), id: Type.String() });
const PortalSchema = Type.Object({ url: Type.String() });
const StatusQuery = Type.Object(
  { refresh: Type.Optional(Type.Boolean({ description: 'true reads the subscription from the provider now' })) },
  { additionalProperties: false },
);

export const billingRoutes: ApiPlugin<ApiDeps> = async (api, deps) => {
  const billing = billingOf(deps);
  const userOf = (u: { id: string; name: string }) => ({ id: u.id, name: u.name });

  api.get(
    '/billing/status',
    {
      schema: {
        summary: 'Subscription and slot status',
        description:
          'Slots bought, connections in use (not stopped), slots available, and the payment provider’s subscription ' +
          'state. Stripe state is cached for 30 s (5 s while there is no subscription); `?refresh=true` reads it now.',
        querystring: StatusQuery,
        response: { 200: BillingStatusSchema, ...ProviderErrors },
      },
    },
    async (request) => billing.status(request.user.id, { fresh: request.query.refresh === true }),
  );

  api.get(
    '/billing/can-create',
    {
      schema: {
        summary: 'Whether a new connection can be created',
        description: '`reason` (when `canCreate` is false) is the message POST /connections would answer with 402.',
        response: { 200: CanCreateSchema, ...ProviderErrors },
      },
    },
    async (request) => billing.canCreate(request.user.id),
  );

  api.put(
    '/billing/slots',
    {
      schema: {
        summary: 'Set the number of connection slots; charges or credits the difference immediately',
        description:
          '`quantity` is an integer from 0 to the maximum (100 unless configured). 400 when it is over the maximum, ' +
          'below the connections in use, before checkout has been completed (stripe), or when the payment fails ' +
          '(the subscription stays unchanged). `proratedAmount` is in major units: positive charged, negative credited.',
        body: SlotsBody,
        response: {
          200: SlotChangeSchema,
          400: ErrorBody(
            'Validation; `quantity N is over the maximum of M slots per account`; `Cannot reduce slots to N: …`; ' +
              'checkout not completed; `Payment failed (…); slots unchanged at N`',
          ),
          ...ProviderErrors,
        },
      },
    },
    async (request) => billing.setSlots(request.user.id, request.body.quantity),
  );

  api.post(
    '/billing/checkout',
    {
      schema: {
        summary: 'Create a checkout session to buy slots (first-time setup)',
        description:
          'Returns the hosted checkout page to open (`url`) and the session id. 400 `Billing provider not configured` ' +
          'with the local provider; 409 once checkout has been completed.',
        body: CheckoutBody,
        response: {
          200: CheckoutSchema,
          400: ErrorBody('Validation, or `Billing provider not configured`'),
          409: ErrorBody('Checkout has already been completed'),
          ...ProviderErrors,
        },
      },
    },
    async (request) => billing.checkout(userOf(request.user), request.body.quantity),
  );

  api.post(
    '/billing/portal',
    {
      schema: {
        summary: 'Open the payment provider’s customer portal',
        description: '400 `Billing provider not configured` (local), or before the first checkout.',
        response: {
          200: PortalSchema,
          400: ErrorBody('`Billing provider not configured`, or no billing account yet'),
          ...ProviderErrors,
        },
      },
    },
    async (request) => billing.portal(userOf(request.user)),
  );
};
