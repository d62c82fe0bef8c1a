/**
 * Webhooks (interface-spec §4.5, §2.6, §2.7, §3.2): list/create per connection, update, delete, the delivery log,
 * a test event, and (an addition to the spec) replay of one logged delivery with its original `webhook-id`.
 * Outbox rows are the outbox's (service/webhooks/outbox.ts) and delivery the dispatcher's: these routes manage
 * the webhooks and ask the outbox for test events, retries and replays.
 */
import { randomUUID } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { AuthUser } from '../../auth/authenticate.ts';
import type { DeliveryRow } from '../../db/deliveries.ts';
import type { Store } from '../../db/store.ts';
import type { WebhookRow } from '../../db/webhooks.ts';
import { badRequest, conflict, forbidden, notFound } from '../../errors.ts';
import { generateSigningSecret } from '../../webhooks/signing.ts';
import { EVENT_PAYLOAD_SCHEMAS, type EventType } from '../../events/payloads.ts';
import { OutboundPolicy, OutboundRefusedError } from '../../net/outbound.ts';
import { ConnectionParams, errorResponses, Nullable, SuccessSchema } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { EVENT_PAYLOAD } from '../openapi.ts';
import type { ApiPlugin } from '../type-provider.ts';

/** Event types a webhook can subscribe to today (each with its payload schema); `*` subscribes to all (including future ones). */
export const WEBHOOK_EVENT_TYPES = Object.keys(EVENT_PAYLOAD_SCHEMAS) as EventType[];

export const WebhookSchema = Type.Object({
  id: Type.String(),
  sessionId: Type.String({ description: 'Id of the connection the webhook belongs to' }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  signingSecret: Type.String({ description: 'Standard Webhooks secret, whsec_<base64 of 32 bytes>' }),
  active: Type.Boolean(),
  disabledReason: Nullable(Type.String({ description: 'Why the service deactivated it (e.g. 410 Gone), else null' })),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Webhook = Static<typeof WebhookSchema>;

export const DeliveryLogSchema = Type.Object({
  id: Type.String(),
  eventType: Type.String(),
  payload: Type.Object({
    event: Type.String(),
    session: Type.String(),
    // documented as the union of the event payloads (http/openapi.ts)
    payload: Type.Record(Type.String(), Type.Unknown(), { [EVENT_PAYLOAD]: true }),
  }),
  status: Type.Union(['pending', 'paused', 'delivered', 'failed', 'skipped'].map((s) => Type.Literal(s)), {
    description:
      'pending (queued or being retried), paused (held while the webhook is paused; sent in order on resume), delivered, ' +
      'failed (gave up, or held longer than the event retention), skipped (paused webhook, before held deliveries existed)',
  }),
  attempts: Type.Integer(),
  deliveredAt: Nullable(Type.String()),
  createdAt: Type.String(),
  webhookMessageId: Type.String({ description: 'The webhook-id header: same on every retry and replay of the event' }),
  eventSeq: Type.Integer(),
  lastStatusCode: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  nextAttemptAt: Nullable(Type.String()),
  replayOf: Nullable(Type.String()),
});
type DeliveryLog = Static<typeof DeliveryLogSchema>;

const EventType = Type.String({
  maxLength: 64,
  description: `One of ${WEBHOOK_EVENT_TYPES.join(', ')}, or * for all (including types added later)`,
});
const Events = Type.Array(EventType, { minItems: 1, maxItems: 32, uniqueItems: true });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const CreateBody = Type.Object(
  { url: Url, events: Events, active: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  { url: Type.Optional(Url), events: Type.Optional(Events), active: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
const WebhookParams = Type.Object({ id: Type.String() });
const DeliveryParams = Type.Object({ id: Type.String(), deliveryId: Type.String() });
const TestResult = Type.Object({ success: Type.Literal(true), delivery: DeliveryLogSchema });

export function toWebhook(w: WebhookRow): Webhook {
  return {
    id: w.id,
    sessionId: w.connectionId,
    url: w.url,
    events: w.events,
    signingSecret: w.secret,
    active: w.active,
    disabledReason: w.disabledReason,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

/** A delivery as the log shows it; `webhookActive` false shows the rows it holds as `paused`. */
export function toDeliveryLog(d: DeliveryRow, webhookActive = true): DeliveryLog {
  const open = d.status === 'delivering' || d.status === 'pending';
  return {
    id: d.id,
    eventType: d.eventType,
    payload: JSON.parse(d.body) as DeliveryLog['payload'],
    status: open ? (webhookActive || d.status === 'delivering' ? 'pending' : 'paused') : d.status,
    attempts: d.attempts,
    deliveredAt: d.deliveredAt,
    createdAt: d.createdAt,
    webhookMessageId: d.msgId,
    eventSeq: d.eventSeq,
    lastStatusCode: d.lastStatus,
    lastError: d.lastError,
    nextAttemptAt: d.status === 'pending' ? new Date(d.nextAttemptAt).toISOString() : null,
    replayOf: d.replayOf,
  };
}

/**
 * Checks subscribed event types against the documented list (WEBHOOK_EVENT_TYPES, or `*`).
 * @throws ServiceError 400 `body/events/<i>: unknown event type "<type>" (…)` naming the first unknown one.
 */
function checkEvents(events: readonly string[] | undefined): void {
  if (!events) return;
  const known: readonly string[] = WEBHOOK_EVENT_TYPES;
  events.forEach((e, i) => {
    if (e !== '*' && !known.includes(e)) {
      throw badRequest(`body/events/${i}: unknown event type ${JSON.stringify(e)} (known: ${known.join(', ')}; * for all)`);
    }
  });
}

/** The caller's webhook. @throws 404 `Webhook not found`, 403 for another user's. */
function ownedWebhook(store: Pick<Store, 'webhooks'>, user: AuthUser, id: string): WebhookRow {
  const w = store.webhooks.get(id);
  if (!w) throw notFound('Webhook not found');
  if (w.userId !== user.id) throw forbidden('Webhook belongs to another user');
  return w;
}

export const webhookRoutes: ApiPlugin<ApiDeps> = async (api, { store, outbox, webhookPolicy }) => {
  const policy = webhookPolicy ?? new OutboundPolicy({ allowLan: false, allowLanSetting: () => store.webhooks.allowLanSetting() });

  async function checkUrl(url: string): Promise<string> {
    try {
      return (await policy.checkUrl(url)).href;
    } catch (err) {
      if (err instanceof OutboundRefusedError) throw badRequest(`body/url: ${err.message}`);
      throw err;
    }
  }

  api.get(
    '/connections/:id/webhooks',
    { schema: { params: ConnectionParams, response: { 200: Type.Array(WebhookSchema) } } },
    async (request) => {
      const c = request.connection;
      return store.webhooks.listByConnection(c.id).map(toWebhook);
    },
  );

  api.post(
    '/connections/:id/webhooks',
    { schema: { params: ConnectionParams, body: CreateBody, response: { 201: WebhookSchema } } },
    async (request, reply) => {
      const c = request.connection;
      checkEvents(request.body.events);
      const url = await checkUrl(request.body.url);
      const row = await store.txAsync(() => store.webhooks.insert({
        id: randomUUID(),
        userId: c.userId,
        connectionId: c.id,
        url,
        events: request.body.events,
        secret: generateSigningSecret(),
        active: request.body.active ?? true,
      }));
      return reply.code(201).send(toWebhook(row));
    },
  );

  api.put(
    '/webhooks/:id',
    { schema: { params: WebhookParams, body: UpdateBody, response: { 200: WebhookSchema } } },
    async (request) => {
      const w = ownedWebhook(store, request.user, request.params.id);
      const { url, events, active } = request.body;
      checkEvents(events);
      const checked = url === undefined ? undefined : await checkUrl(url);
      const row = await store.txAsync(() =>
        store.webhooks.update(w.id, {
          ...(checked !== undefined && { url: checked }),
          ...(events !== undefined && { events }),
          ...(active !== undefined && { active }),
        }),
      );
      if (!row) throw notFound('Webhook not found');
      if (active) outbox.wake(); // resumes its pending deliveries
      return toWebhook(row);
    },
  );

  api.delete('/webhooks/:id', { schema: { params: WebhookParams, response: { 200: SuccessSchema } } }, async (request) => {
    const w = ownedWebhook(store, request.user, request.params.id);
    await store.txAsync(() => outbox.deleteWebhook(w.id));
    return { success: true as const };
  });

  api.get(
    '/webhooks/:id/logs',
    { schema: { params: WebhookParams, response: { 200: Type.Array(DeliveryLogSchema) } } },
    async (request) => {
      const w = ownedWebhook(store, request.user, request.params.id);
      return store.deliveries.logs(w.id, 100).map((d) => toDeliveryLog(d, w.active));
    },
  );

  api.post('/webhooks/:id/test', { schema: { params: WebhookParams, response: { 200: TestResult } } }, async (request) => {
    const w = ownedWebhook(store, request.user, request.params.id);
    const delivery = await store.txAsync(() => outbox.sendTest(w));
    return { success: true as const, delivery: toDeliveryLog(delivery, w.active) };
  });

  api.post(
    '/webhooks/:id/deliveries/:deliveryId/retry',
    {
      schema: {
        params: DeliveryParams,
        response: {
          200: DeliveryLogSchema,
          201: DeliveryLogSchema,
          ...errorResponses([409, 'The webhook is paused, or the delivery is still in progress']),
        },
      },
    },
    async (request, reply) => {
      const w = ownedWebhook(store, request.user, request.params.id);
      const d = store.deliveries.get(request.params.deliveryId);
      if (!d || d.webhookId !== w.id) throw notFound('Delivery not found');
      if (!w.active) throw conflict('Webhook is paused; activate it before replaying deliveries');
      // A delivery waiting for its next attempt is attempted now (200, the same delivery).
      if (d.status === 'pending' && (await store.txAsync(() => outbox.retryNow(d.id)))) {
        return reply.code(200).send(toDeliveryLog(store.deliveries.get(d.id)!));
      }
      if (d.status === 'pending' || d.status === 'delivering') throw conflict('Delivery is still in progress');
      return reply.code(201).send(toDeliveryLog(await store.txAsync(() => outbox.replay(d))));
    },
  );
};
