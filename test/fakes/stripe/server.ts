/**
 * A stateful fake of the parts of Stripe's v1 API that Switchboard's stripe provider uses, on 127.0.0.1, for the
 * real `stripe` SDK (`host`/`port`/`protocol: 'http'`). Test-only: never imported by `service/`.
 *
 * Requests are form-encoded with bracket keys (`items[0][quantity]=3`, `metadata[userId]=…`, `expand[0]=…` or
 * `expand[]=…`), in the body (POST) or the query (GET). Responses and errors have Stripe's shapes, e.g.
 * `402 { error: { type: 'card_error', code: 'card_declined', decline_code, message } }`.
 *
 * Implemented: customers create/retrieve/search/list, checkout.sessions create/retrieve, billing_portal.sessions
 * create, subscriptions retrieve/list/update (quantity changes with proration; `always_invoice` creates an invoice
 * whose total is the prorated amount; a customer flagged to decline gets 402 and nothing changes), invoices retrieve.
 * Test controls: `completeCheckout()` (as if the customer paid: creates the subscription), `declineCustomer()`,
 * `setNow()` (the fake's clock, for deterministic proration), `requests` (what the SDK sent).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Params = Record<string, unknown>;
type Obj = Record<string, unknown> & { id: string; object: string };

export interface FakePrice {
  id: string;
  /** Per unit, in the currency's smallest unit. */
  unitAmount: number;
  currency: string;
  interval?: 'month' | 'year';
}

export interface RecordedRequest {
  method: string;
  path: string;
  params: Params;
  idempotencyKey: string | undefined;
  stripeVersion: string | undefined;
}

class StripeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

const invalid = (message: string, extra: Record<string, unknown> = {}) =>
  new StripeHttpError(400, { type: 'invalid_request_error', message, ...extra });
const missing = (kind: string, id: string, param = 'id') =>
  new StripeHttpError(404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    param,
    message: `No such ${kind}: '${id}'`,
  });

/** Parses `a[b][0][c]=v` pairs into nested objects and arrays (`[]` appends). */
export function parseBracketParams(search: URLSearchParams): Params {
  const root: Params = {};
  for (const [rawKey, value] of search) {
    const m = /^([^[\]]+)((?:\[[^\]]*\])*)$/.exec(rawKey);
    if (!m) continue;
    const path = [m[1]!, ...[...m[2]!.matchAll(/\[([^\]]*)\]/g)].map((x) => x[1]!)];
    let node: Record<string, unknown> | unknown[] = root;
    for (let i = 0; i < path.length; i++) {
      const key = path[i]!;
      const last = i === path.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(path[i + 1]!);
      if (Array.isArray(node)) {
        const idx = key === '' ? node.length : Number(key);
        if (last) node[idx] = value;
        else node = (node[idx] ??= nextIsIndex ? [] : {}) as Record<string, unknown> | unknown[];
      } else {
        if (last) node[key] = value;
        else node = (node[key] ??= nextIsIndex ? [] : {}) as Record<string, unknown> | unknown[];
      }
    }
  }
  return root;
}

const DAY = 86_400;

export class FakeStripe {
  readonly secretKey: string;
  readonly requests: RecordedRequest[] = [];
  /** The fake's clock in Unix seconds; proration uses it. */
  now = Math.floor(Date.now() / 1000);

  private server: http.Server | undefined;
  private seq = 0;
  private readonly prices = new Map<string, FakePrice>();
  readonly customers = new Map<string, Obj>();
  readonly sessions = new Map<string, Obj>();
  readonly subscriptions = new Map<string, Obj>();
  readonly invoices = new Map<string, Obj>();
  private readonly declining = new Map<string, string>();
  /** Answers to force on the next requests (e.g. a 500), first in first out. */
  private readonly forced: Array<{ status: number; body: Record<string, unknown> }> = [];

  constructor(opts: { secretKey?: string; prices?: FakePrice[] } = {}) {
    this.secretKey = opts.secretKey ?? 'sk_test_fake_switchboard';
    for (const p of opts.prices ?? [{ id: 'price_slot', unitAmount: 500, currency: 'usd' }]) this.prices.set(p.id, p);
  }

  async start(): Promise<{ host: string; port: number; url: string }> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return { host: '127.0.0.1', port, url: `http://127.0.0.1:${port}` };
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  // ---- test controls ----

  /** As if the customer completed the hosted checkout page: the session completes and the subscription exists. */
  completeCheckout(sessionId: string): Obj {
    const session = this.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    if (session.status !== 'open') throw new Error(`session ${sessionId} is ${String(session.status)}`);
    const items = session.line_items_params as Array<{ price: string; quantity: number }>;
    const price = this.prices.get(items[0]!.price)!;
    const quantity = items[0]!.quantity;
    const subId = this.id('sub');
    const start = this.now;
    const end = start + (price.interval === 'year' ? 365 : 30) * DAY;
    const item = {
      id: this.id('si'),
      object: 'subscription_item',
      price: this.priceObject(price),
      quantity,
      subscription: subId,
      current_period_start: start,
      current_period_end: end,
      created: start,
      metadata: {},
    };
    const invoice = this.createInvoice({
      customer: String(session.customer),
      subscription: subId,
      currency: price.currency,
      total: price.unitAmount * quantity,
      reason: 'subscription_create',
    });
    const sub: Obj = {
      id: subId,
      object: 'subscription',
      customer: session.customer,
      status: 'active',
      currency: price.currency,
      created: start,
      start_date: start,
      livemode: false,
      cancel_at_period_end: false,
      metadata: (session.subscription_metadata as Params) ?? {},
      items: { object: 'list', data: [item], has_more: false, url: `/v1/subscription_items?subscription=${subId}` },
      latest_invoice: invoice.id,
      pending_update: null,
    };
    this.subscriptions.set(subId, sub);
    Object.assign(session, { status: 'complete', payment_status: 'paid', subscription: subId });
    return sub;
  }

  /** Payments of this customer fail with `decline_code` (card_declined / insufficient_funds …). */
  declineCustomer(customerId: string, declineCode = 'generic_decline'): void {
    this.declining.set(customerId, declineCode);
  }

  acceptCustomer(customerId: string): void {
    this.declining.delete(customerId);
  }

  setNow(seconds: number): void {
    this.now = seconds;
  }

  /** The next request answers `status` with `{ error }` (e.g. 500 api_error). */
  failNext(status: number, error: Record<string, unknown>): void {
    this.forced.push({ status, body: error });
  }

  /** Sets a subscription's status directly (e.g. `unpaid`, `canceled`), as Stripe would after failed renewals. */
  setSubscriptionStatus(subId: string, status: string): void {
    const sub = this.subscriptions.get(subId);
    if (!sub) throw new Error(`no subscription ${subId}`);
    sub.status = status;
  }

  subscriptionOf(customerId: string): Obj | undefined {
    return [...this.subscriptions.values()].find((s) => s.customer === customerId);
  }

  customerByUserId(userId: string): Obj | undefined {
    return [...this.customers.values()].find((c) => (c.metadata as Params)?.switchboardUserId === userId);
  }

  // ---- HTTP ----

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = Buffer.concat(chunks).toString();
    const params = parseBracketParams(
      req.method === 'GET' || req.method === 'DELETE' ? url.searchParams : new URLSearchParams(body),
    );
    this.requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      params,
      idempotencyKey: header(req, 'idempotency-key'),
      stripeVersion: header(req, 'stripe-version'),
    });
    let status = 200;
    let payload: unknown;
    try {
      const forced = this.forced.shift();
      if (forced) throw new StripeHttpError(forced.status, forced.body);
      if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
        const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
        throw new StripeHttpError(401, {
          type: 'invalid_request_error',
          message: `Invalid API Key provided: ${given.slice(0, 8)}${'*'.repeat(Math.max(0, given.length - 12))}${given.slice(-4)}`,
        });
      }
      payload = this.route(req.method ?? 'GET', url.pathname, params);
    } catch (err) {
      if (err instanceof StripeHttpError) {
        status = err.status;
        payload = {
          error: { ...err.body, request_log_url: `https://dashboard.stripe.com/test/logs/req_fake${this.seq}` },
        };
      } else {
        status = 500;
        payload = { error: { type: 'api_error', message: `fake failure: ${(err as Error).message}` } };
      }
    }
    const text = JSON.stringify(payload);
    res.writeHead(status, {
      'content-type': 'application/json',
      'request-id': `req_fake${++this.seq}`,
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  private route(method: string, path: string, p: Params): unknown {
    const seg = path.split('/').filter(Boolean); // ['v1', ...]
    if (seg[0] !== 'v1') throw this.unknown(method, path);
    const [, a, b, c] = seg;
    if (a === 'customers') {
      if (method === 'POST' && !b) return this.createCustomer(p);
      if (method === 'GET' && b === 'search' && !c) return this.searchCustomers(p);
      if (method === 'GET' && !b)
        return this.list(
          path,
          [...this.customers.values()].filter((x) => !p.email || x.email === p.email),
        );
      if (method === 'GET' && b && !c) return this.get(this.customers, 'customer', b, p);
    }
    if (a === 'checkout' && b === 'sessions') {
      if (method === 'POST' && !c) return this.createCheckoutSession(p);
      if (method === 'GET' && c) return this.publicSession(this.get(this.sessions, 'checkout.session', c, p) as Obj);
    }
    if (a === 'billing_portal' && b === 'sessions' && method === 'POST' && !c) return this.createPortalSession(p);
    if (a === 'subscriptions') {
      if (method === 'GET' && !b) return this.listSubscriptions(p);
      if (method === 'GET' && b && !c) return this.get(this.subscriptions, 'subscription', b, p);
      if (method === 'POST' && b && !c) return this.updateSubscription(b, p);
    }
    if (a === 'invoices' && method === 'GET' && b && !c) return this.get(this.invoices, 'invoice', b, p);
    throw this.unknown(method, path);
  }

  private unknown(method: string, path: string) {
    return new StripeHttpError(404, {
      type: 'invalid_request_error',
      message: `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
    });
  }

  private id(prefix: string): string {
    return `${prefix}_fake${(++this.seq).toString().padStart(6, '0')}`;
  }

  private get(map: Map<string, Obj>, kind: string, id: string, p: Params): unknown {
    const o = map.get(id);
    if (!o) throw missing(kind, id);
    return this.expand(o, p);
  }

  /** Applies `expand[]` (only `latest_invoice` and `data.latest_invoice` are expandable here). */
  private expand(o: Obj, p: Params): Obj {
    const expand = (Array.isArray(p.expand) ? p.expand : []) as string[];
    const copy = structuredClone(o);
    if (expand.includes('latest_invoice') && typeof copy.latest_invoice === 'string')
      copy.latest_invoice = this.invoices.get(copy.latest_invoice) ?? copy.latest_invoice;
    return copy;
  }

  private list(url: string, data: unknown[]) {
    return { object: 'list', data, has_more: false, url };
  }

  private priceObject(p: FakePrice) {
    return {
      id: p.id,
      object: 'price',
      active: true,
      currency: p.currency,
      unit_amount: p.unitAmount,
      type: 'recurring',
      recurring: { interval: p.interval ?? 'month', interval_count: 1, usage_type: 'licensed' },
      product: 'prod_fake_slot',
    };
  }

  private createCustomer(p: Params): Obj {
    const c: Obj = {
      id: this.id('cus'),
      object: 'customer',
      name: p.name ?? null,
      email: p.email ?? null,
      metadata: (p.metadata as Params) ?? {},
      balance: 0,
      created: this.now,
      livemode: false,
    };
    this.customers.set(c.id, c);
    return c;
  }

  /** Supports `metadata['key']:'value'` and `email:'value'` queries. */
  private searchCustomers(p: Params) {
    const q = String(p.query ?? '');
    const meta = /^metadata\['([^']+)'\]:'([^']*)'$/.exec(q);
    const email = /^email:'([^']*)'$/.exec(q);
    if (!meta && !email) throw invalid(`Invalid search query: ${q}`, { param: 'query' });
    const data = [...this.customers.values()].filter((c) =>
      meta ? (c.metadata as Params)[meta[1]!] === meta[2] : c.email === email![1],
    );
    return { object: 'search_result', data, has_more: false, next_page: null, url: '/v1/customers/search' };
  }

  private createCheckoutSession(p: Params): Obj {
    if (p.mode !== 'subscription') throw invalid('This fake supports only mode=subscription', { param: 'mode' });
    if (!p.success_url) throw invalid('Missing required param: success_url.', { param: 'success_url' });
    const customer = p.customer as string | undefined;
    if (customer && !this.customers.has(customer)) throw missing('customer', customer, 'customer');
    const items = ((p.line_items as Params[]) ?? []).map((li) => ({
      price: String(li.price),
      quantity: Number(li.quantity ?? 1),
    }));
    if (items.length !== 1) throw invalid('This fake supports exactly one line item', { param: 'line_items' });
    if (!this.prices.has(items[0]!.price)) throw missing('price', items[0]!.price, 'line_items[0][price]');
    if (!Number.isInteger(items[0]!.quantity) || items[0]!.quantity < 1)
      throw invalid('Invalid quantity', { param: 'line_items[0][quantity]' });
    const id = `cs_test_${(++this.seq).toString().padStart(6, '0')}`;
    const s: Obj = {
      id,
      object: 'checkout.session',
      mode: 'subscription',
      status: 'open',
      payment_status: 'unpaid',
      customer: customer ?? null,
      client_reference_id: p.client_reference_id ?? null,
      metadata: (p.metadata as Params) ?? {},
      success_url: p.success_url,
      cancel_url: p.cancel_url ?? null,
      subscription: null,
      url: `https://checkout.stripe.com/c/pay/${id}`,
      currency: this.prices.get(items[0]!.price)!.currency,
      livemode: false,
      line_items_params: items,
      subscription_metadata: ((p.subscription_data as Params)?.metadata as Params) ?? {},
    };
    this.sessions.set(id, s);
    return this.publicSession(s);
  }

  private publicSession(s: Obj): Obj {
    const rest: Obj = { ...s };
    delete rest.line_items_params; // internal bookkeeping, not part of Stripe's object
    delete rest.subscription_metadata;
    return rest;
  }

  private createPortalSession(p: Params): Obj {
    const customer = String(p.customer ?? '');
    if (!this.customers.has(customer)) throw missing('customer', customer, 'customer');
    const id = this.id('bps');
    return {
      id,
      object: 'billing_portal.session',
      customer,
      return_url: p.return_url ?? null,
      url: `https://billing.stripe.com/p/session/test_${id}`,
      created: this.now,
      livemode: false,
    };
  }

  private listSubscriptions(p: Params) {
    const customer = p.customer as string | undefined;
    if (customer && !this.customers.has(customer)) throw missing('customer', customer, 'customer');
    const status = (p.status as string | undefined) ?? 'active';
    const data = [...this.subscriptions.values()]
      .filter((s) => !customer || s.customer === customer)
      .filter((s) =>
        status === 'all'
          ? true
          : status === 'ended'
            ? ['canceled', 'incomplete_expired'].includes(String(s.status))
            : s.status === status,
      )
      .sort((x, y) => Number(y.created) - Number(x.created))
      .map((s) => this.expand(s, p));
    return this.list('/v1/subscriptions', data);
  }

  private createInvoice(i: {
    customer: string;
    subscription: string;
    currency: string;
    total: number;
    reason: string;
  }): Obj {
    const inv: Obj = {
      id: this.id('in'),
      object: 'invoice',
      customer: i.customer,
      currency: i.currency,
      total: i.total,
      subtotal: i.total,
      amount_due: Math.max(0, i.total),
      amount_paid: Math.max(0, i.total),
      amount_remaining: 0,
      status: 'paid',
      billing_reason: i.reason,
      created: this.now,
      livemode: false,
      parent: {
        type: 'subscription_details',
        subscription_details: { subscription: i.subscription, metadata: {} },
        quote_details: null,
      },
    };
    this.invoices.set(inv.id, inv);
    return inv;
  }

  private updateSubscription(id: string, p: Params): unknown {
    const sub = this.subscriptions.get(id);
    if (!sub) throw missing('subscription', id);
    if (sub.status === 'canceled')
      throw invalid('A canceled subscription can only update its cancellation_details and metadata.');
    const items = (sub.items as { data: Array<Record<string, unknown>> }).data;
    const changes = (p.items as Params[] | undefined) ?? [];
    const behavior = (p.proration_behavior as string | undefined) ?? 'create_prorations';
    if (!['create_prorations', 'always_invoice', 'none'].includes(behavior))
      throw invalid(`Invalid proration_behavior: ${behavior}`, { param: 'proration_behavior' });
    const paymentBehavior = (p.payment_behavior as string | undefined) ?? 'allow_incomplete';

    // Work out the change before applying anything.
    let prorated = 0;
    const apply: Array<() => void> = [];
    for (const [n, ch] of changes.entries()) {
      const item = items.find((i) => i.id === ch.id);
      if (!item)
        throw invalid(`No such subscription item: '${String(ch.id)}'`, {
          param: `items[${n}][id]`,
          code: 'resource_missing',
        });
      if (ch.quantity === undefined) continue;
      const quantity = Number(ch.quantity);
      if (!/^\d+$/.test(String(ch.quantity)))
        throw invalid('Invalid integer: ' + String(ch.quantity), { param: `items[${n}][quantity]` });
      const price = item.price as { unit_amount: number };
      const start = Number(item.current_period_start);
      const end = Number(item.current_period_end);
      const fraction = Math.min(1, Math.max(0, (end - this.now) / (end - start)));
      prorated += Math.round(price.unit_amount * (quantity - Number(item.quantity)) * fraction);
      apply.push(() => (item.quantity = quantity));
    }

    if (behavior === 'always_invoice' && prorated > 0) {
      const decline = this.declining.get(String(sub.customer));
      if (decline && paymentBehavior === 'error_if_incomplete') {
        throw new StripeHttpError(402, {
          type: 'card_error',
          code: 'card_declined',
          decline_code: decline,
          message: 'Your card was declined.',
          charge: this.id('ch'),
        });
      }
    }
    for (const f of apply) f();
    if (p.metadata) sub.metadata = { ...(sub.metadata as Params), ...(p.metadata as Params) };
    if (behavior === 'always_invoice' && prorated !== 0) {
      const inv = this.createInvoice({
        customer: String(sub.customer),
        subscription: id,
        currency: String(sub.currency),
        total: prorated,
        reason: 'subscription_update',
      });
      sub.latest_invoice = inv.id;
      if (prorated < 0) {
        const customer = this.customers.get(String(sub.customer));
        if (customer) customer.balance = Number(customer.balance) + prorated;
      }
    }
    return this.expand(sub, p);
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
