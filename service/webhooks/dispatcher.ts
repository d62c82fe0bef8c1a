/**
 * The webhook dispatcher (docs/architecture.md § Event log and webhook outbox): drains the durable outbox in
 * `webhook_deliveries`.
 *
 * - Fresh rows are claimed at insert (the dispatcher is the outbox's OutboxDrain, outbox.ts): while a webhook's
 *   lane has room, its outbox row is written already `delivering` in the transaction of its event and handed over
 *   when that commits — no claim transaction and no table scan on the hot path. Everything else (backlog, retries,
 *   rows of a previous run) is claimed from the table: woken after a commit that wrote `pending` rows, by a timer
 *   set to the
 *   next due retry, and by a 1 s poll as a safety net; one transaction claims due rows of every active webhook
 *   (lease, attempts + 1).
 * - Each webhook has its own in-memory queue and concurrency limit, so a slow or failing consumer never delays
 *   another webhook; a global limit bounds sockets. Order is best effort (oldest due first), not FIFO.
 * - One attempt: Standard Webhooks headers re-signed with a fresh timestamp, same `webhook-id`; undici POST with a
 *   5 s connect / 15 s total timeout, redirects not followed, the target address checked and pinned
 *   (net/outbound.ts). Each webhook has its own connection pool (an undici Agent, closed when the webhook is
 *   deleted or its URL's origin changes), so hanging consumers on one host cannot hold the sockets of another
 *   webhook on that host. A network-level failure is logged for the consumer as `UNREACHABLE` (one text whatever
 *   the target's state: no port-scan oracle); the cause goes to the service log at debug level.
 *   2xx = delivered; 410 = failed and the webhook is deactivated; anything else (3xx, 4xx, 5xx, network error)
 *   retries after `retryDelaysMs[attempts]` × U(0.8, 1.2), or later if `Retry-After` says so (capped at 2 h),
 *   until `maxAttempts` attempts were made → `failed`.
 * - Outcomes are written in batches (one transaction per tick). At boot, rows left `delivering` by a crashed
 *   process go back to `pending` (at-least-once: the consumer may see a `webhook-id` twice).
 */
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { ClaimedDelivery, DeliveryOutcome } from '../db/deliveries.ts';
import type { Store } from '../db/store.ts';
import type { WebhookRow } from '../db/webhooks.ts';
import type { OutboxDrain, WebhookOutbox } from './outbox.ts';
import { secretKey, signatureHeaders } from './signing.ts';
import { OutboundPolicy, UNREACHABLE, portOf, reasonOf } from '../net/outbound.ts';

/** Delay before attempts 1–5 in ms (attempt 1 is immediate): 0 s, 5 s, 5 min, 30 min, 2 h. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [0, 5_000, 300_000, 1_800_000, 7_200_000];
export const MAX_RETRY_AFTER_MS = 7_200_000;
/** Bytes of a response body kept in the log. */
export const RESPONSE_SNIPPET_BYTES = 1024;
/** Outcomes are written at most this long after the attempt ends, in one transaction. */
const FLUSH_MS = 10;

export interface DispatcherOptions {
  store: Store;
  /** The outbox it drains: fresh rows are handed over at insert while the dispatcher runs. */
  outbox: WebhookOutbox;
  logger: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
  policy: OutboundPolicy;
  /** ms before attempts 1..N; its length is the maximum number of attempts. */
  retryDelaysMs?: readonly number[];
  perWebhookConcurrency?: number;
  /** Claimed-but-unsent rows a webhook may hold in memory (plus its in-flight ones). */
  perWebhookQueue?: number;
  globalConcurrency?: number;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  leaseMs?: number;
  pollMs?: number;
  userAgent?: string;
  /** For tests: replaces Math.random in the jitter. */
  random?: () => number;
}

interface WebhookLane {
  queue: ClaimedDelivery[];
  inFlight: number;
  /** Rows claimed at insert whose transaction has not committed yet. */
  reserved: number;
}

interface HookInfo {
  row: WebhookRow;
  key: Buffer;
}

export class WebhookDispatcher implements OutboxDrain {
  readonly #o: Required<Omit<DispatcherOptions, 'store' | 'outbox' | 'logger' | 'policy'>>;
  readonly #store: Store;
  readonly #outbox: WebhookOutbox;
  readonly #log: DispatcherOptions['logger'];
  readonly #policy: OutboundPolicy;
  readonly #lanes = new Map<string, WebhookLane>();
  /** One connection pool per webhook id, for the origin it was made for. */
  readonly #agents = new Map<string, { origin: string; agent: Agent }>();
  readonly #keys = new Map<string, Buffer>();
  #inFlight = 0;
  #outcomes: DeliveryOutcome[] = [];
  #flushScheduled = false;
  #pumpScheduled = false;
  /** A pump waits for the write lock (store.txAsync); a wake meanwhile pumps again once it is done. */
  #pumping: Promise<void> | undefined;
  #pumpAgain = false;
  #drainScheduled = false;
  /** The table may hold rows due now that are not claimed yet (at boot, after pending rows, retries, releases). */
  #backlog = true;
  #timer: NodeJS.Timeout | undefined;
  #sweep: NodeJS.Timeout | undefined;
  #running = false;
  readonly #idle = new Set<() => void>();
  /** Counters for benchmarks and logs. */
  readonly stats = { delivered: 0, retried: 0, failed: 0, claims: 0 };

  constructor(opts: DispatcherOptions) {
    this.#store = opts.store;
    this.#outbox = opts.outbox;
    this.#log = opts.logger;
    this.#policy = opts.policy;
    this.#o = {
      retryDelaysMs: opts.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
      perWebhookConcurrency: opts.perWebhookConcurrency ?? 32,
      perWebhookQueue: opts.perWebhookQueue ?? 512,
      globalConcurrency: opts.globalConcurrency ?? 256,
      connectTimeoutMs: opts.connectTimeoutMs ?? 5_000,
      totalTimeoutMs: opts.totalTimeoutMs ?? 15_000,
      leaseMs: opts.leaseMs ?? 10 * 60_000,
      pollMs: opts.pollMs ?? 1_000,
      userAgent: opts.userAgent ?? 'Switchboard-Webhooks',
      random: opts.random ?? Math.random,
    };
  }

  get maxAttempts(): number {
    return this.#o.retryDelaysMs.length;
  }

  get leaseMs(): number {
    return this.#o.leaseMs;
  }

  /** OutboxDrain: room for one more fresh row of the webhook? Reserves it. */
  reserve(webhookId: string): boolean {
    if (!this.#running) return false;
    const lane = this.#lane(webhookId);
    if (lane.queue.length + lane.inFlight + lane.reserved >= this.#o.perWebhookQueue) return false;
    lane.reserved++;
    return true;
  }

  /** OutboxDrain: the reserved rows are committed; they are sent from the next tick. */
  committed(rows: ClaimedDelivery[]): void {
    for (const d of rows) {
      const lane = this.#lane(d.webhookId);
      lane.reserved = Math.max(0, lane.reserved - 1);
      if (this.#running) lane.queue.push(d);
      else void this.#complete([{ id: d.id, kind: 'release' }]);
    }
    if (this.#running && !this.#drainScheduled) {
      // Not from inside the committer's call stack: it may be an API request waiting for its commit.
      this.#drainScheduled = true;
      setImmediate(() => {
        this.#drainScheduled = false;
        if (this.#running) for (const id of this.#lanes.keys()) this.#drain(id);
      });
    }
  }

  /** OutboxDrain: the reserved rows were rolled back. */
  abandoned(rows: readonly ClaimedDelivery[]): void {
    for (const d of rows) {
      const lane = this.#lanes.get(d.webhookId);
      if (lane) lane.reserved = Math.max(0, lane.reserved - 1);
    }
  }

  /**
   * Recovers rows of a crashed run and starts draining: claims begin once the recovery committed (it waits for the
   * write lock without blocking the main thread, store.ts txAsync); resolves then.
   */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      const { requeued, failed } = await this.#store.txAsync(() => this.#store.deliveries.requeue({ all: true, maxAttempts: this.maxAttempts }));
      if (requeued || failed) this.#log.info({ requeued, failed }, 'webhook deliveries recovered after restart');
    } catch (err) {
      // The rows stay `delivering` until their lease expires; the lease sweep requeues them then.
      this.#log.error({ err }, 'recovering webhook deliveries after restart failed');
    }
    if (!this.#running) return;
    this.#outbox.attach(this);
    this.#sweep = setInterval(() => this.#sweepLeases(), 60_000);
    this.#sweep.unref();
    this.wake();
  }

  /** OutboxDrain: a commit wrote `pending` rows; claims them from the table soon. */
  backlog(): void {
    this.#backlog = true;
    this.wake();
  }

  /** Looks for due deliveries soon (coalesced to once per tick). */
  wake(): void {
    if (!this.#running || this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    setImmediate(() => {
      this.#pumpScheduled = false;
      void this.#pump();
    });
  }

  /** Stops claiming, waits up to `graceMs` for in-flight attempts, records outcomes, releases unsent claims. */
  async close(graceMs = 5_000): Promise<void> {
    if (!this.#running) return;
    // Rows claimed in a still-open group-commit batch: commit them now, so they are handed over (then released).
    try {
      this.#store.commitPending();
    } catch (err) {
      this.#log.warn({ err }, 'committing the open batch before closing the webhook dispatcher failed');
    }
    this.#outbox.detach(this);
    this.#running = false;
    clearTimeout(this.#timer);
    clearInterval(this.#sweep);
    // A claim waiting for the write lock: its rows are released (pumpOnce sees the dispatcher stopped).
    await this.#pumping?.catch(() => undefined);
    for (const lane of this.#lanes.values()) {
      for (const d of lane.queue.splice(0)) this.#outcomes.push({ id: d.id, kind: 'release' });
    }
    if (this.#inFlight > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, graceMs);
        this.#idle.add(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    await this.#flush();
    await Promise.all([...this.#agents.values()].map(({ agent }) => agent.destroy().catch(() => undefined)));
    this.#agents.clear();
  }

  #lane(id: string): WebhookLane {
    let lane = this.#lanes.get(id);
    if (!lane) this.#lanes.set(id, (lane = { queue: [], inFlight: 0, reserved: 0 }));
    return lane;
  }

  async #pump(): Promise<void> {
    if (!this.#running) return;
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#pumping = this.#pumpOnce();
    try {
      await this.#pumping;
    } finally {
      this.#pumping = undefined;
    }
    if (this.#pumpAgain) {
      this.#pumpAgain = false;
      this.wake();
    }
  }

  async #pumpOnce(): Promise<void> {
    const now = Date.now();
    const want = new Map<string, number>();
    let active: string[] = [];
    try {
      // The claim waits for the write lock without blocking the main thread (store.ts writeAsync; the claim is its
      // own relaxed transaction); the room of each lane is counted in the same synchronous step.
      const claimed = await this.#store.writeAsync(() => {
        want.clear(); // a try that found SQLite busy left its count: counted again
        active = this.#store.webhooks.activeIds();
        for (const id of active) {
          const lane = this.#lanes.get(id);
          const room = this.#o.perWebhookQueue - (lane ? lane.queue.length + lane.inFlight + lane.reserved : 0);
          if (room > 0) want.set(id, room);
        }
        const at = Date.now();
        return want.size ? this.#store.deliveries.claim(want, at, at + this.#o.leaseMs) : [];
      });
      if (!this.#running) {
        for (const d of claimed) this.#outcomes.push({ id: d.id, kind: 'release' });
        return;
      }
      if (claimed.length) this.stats.claims++;
      const got = new Map<string, number>();
      for (const d of claimed) {
        this.#lane(d.webhookId).queue.push(d);
        got.set(d.webhookId, (got.get(d.webhookId) ?? 0) + 1);
      }
      // A webhook that had no room, or took all it had room for, may have more due rows; one with room left has none.
      this.#backlog = active.some((id) => !want.has(id) || (got.get(id) ?? 0) >= want.get(id)!);
    } catch (err) {
      this.#log.error({ err }, 'webhook claim failed');
      this.#timer = setTimeout(() => void this.#pump(), this.#o.pollMs);
      return;
    }
    for (const id of this.#lanes.keys()) this.#drain(id);
    // Next wake: the earliest retry of a webhook that has room, but at least once per poll interval.
    let next = now + this.#o.pollMs;
    for (const id of active) {
      if (!want.has(id)) continue;
      const t = this.#store.deliveries.nextDue(id);
      if (t !== undefined && t < next) next = t;
    }
    this.#timer = setTimeout(() => void this.#pump(), Math.max(0, next - Date.now()));
  }

  #drain(webhookId: string): void {
    const lane = this.#lanes.get(webhookId);
    if (!lane) return;
    while (lane.queue.length && lane.inFlight < this.#o.perWebhookConcurrency && this.#inFlight < this.#o.globalConcurrency) {
      const d = lane.queue.shift()!;
      lane.inFlight++;
      this.#inFlight++;
      void this.#attempt(d).then((outcome) => {
        lane.inFlight--;
        this.#inFlight--;
        this.#record(outcome);
        if (lane.queue.length === 0 && lane.inFlight === 0 && lane.reserved === 0) this.#lanes.delete(webhookId);
        if (this.#running) {
          this.#drain(webhookId);
          // A webhook waiting on the global limit may proceed now.
          if (this.#inFlight === this.#o.globalConcurrency - 1) for (const id of this.#lanes.keys()) this.#drain(id);
        }
        if (this.#inFlight === 0) for (const f of this.#idle) f();
      });
    }
  }

  #record(outcome: DeliveryOutcome): void {
    this.#outcomes.push(outcome);
    if (outcome.kind === 'delivered') this.stats.delivered++;
    else if (outcome.kind === 'retry') this.stats.retried++;
    else if (outcome.kind === 'failed') this.stats.failed++;
    // Batch outcomes: one transaction per FLUSH_MS (each commit is an fsync with synchronous=FULL).
    if (this.#outcomes.length >= 512) void this.#flush();
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setTimeout(() => void this.#flush(), FLUSH_MS);
    }
  }

  /** Records outcomes (waiting for the write lock without blocking: store.ts writeAsync); never throws. */
  async #complete(batch: DeliveryOutcome[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      await this.#store.writeAsync(() => this.#store.deliveries.complete(batch));
    } catch (err) {
      // The rows stay `delivering`; the lease sweep or the next boot sends them again.
      this.#log.error({ err, count: batch.length }, 'recording webhook outcomes failed');
    }
  }

  async #flush(): Promise<void> {
    this.#flushScheduled = false;
    const batch = this.#outcomes;
    if (batch.length === 0) return;
    this.#outcomes = [];
    if (batch.some((o) => o.kind === 'retry' || o.kind === 'release')) this.#backlog = true;
    await this.#complete(batch);
    // Claim more from the table only when it may hold some and a lane ran low; a pump also re-arms the timer for
    // retries just scheduled.
    const low = this.#o.perWebhookQueue / 2;
    if (this.#backlog && (this.#lanes.size === 0 || [...this.#lanes.values()].some((l) => l.queue.length < low))) this.wake();
  }

  #hook(webhookId: string): HookInfo | undefined {
    const row = this.#store.webhooks.getCached(webhookId);
    if (!row) return undefined;
    let key = this.#keys.get(row.secret);
    if (!key) {
      key = secretKey(row.secret);
      if (this.#keys.size > 1000) this.#keys.clear();
      this.#keys.set(row.secret, key);
    }
    return { row, key };
  }

  /** A webhook is gone (or moved to another origin): its connection pool is destroyed, in-flight attempts on it end. */
  deleted(webhookId: string): void {
    const entry = this.#agents.get(webhookId);
    if (!entry) return;
    this.#agents.delete(webhookId);
    void entry.agent.destroy().catch(() => undefined);
  }

  /** The webhook's connection pool for `url`'s origin (a new one when the URL moved to another origin). */
  #agent(webhookId: string, url: URL): Agent {
    const origin = url.origin;
    const entry = this.#agents.get(webhookId);
    if (entry && entry.origin !== origin) this.deleted(webhookId);
    let agent = entry?.origin === origin ? entry.agent : undefined;
    if (!agent) {
      agent = new Agent({
        connect: { timeout: this.#o.connectTimeoutMs, lookup: this.#policy.lookupFor(portOf(url)) },
        headersTimeout: this.#o.totalTimeoutMs,
        bodyTimeout: this.#o.totalTimeoutMs,
        keepAliveTimeout: 4_000,
        connections: this.#o.perWebhookConcurrency * 2,
      });
      this.#agents.set(webhookId, { origin, agent });
    }
    return agent;
  }

  async #attempt(d: ClaimedDelivery): Promise<DeliveryOutcome> {
    const hook = this.#hook(d.webhookId);
    if (!hook) {
      this.deleted(d.webhookId);
      return { id: d.id, kind: 'release' }; // deleted: its rows are gone with it
    }
    // Paused after the claim: held (back to pending) until resumed; a test delivery goes out whatever the state.
    if (!hook.row.active && !d.ignorePause) return { id: d.id, kind: 'release' };
    let status: number | null = null;
    let response: string | null = null;
    let retryAfterMs: number | undefined;
    try {
      const url = this.#policy.checkWebhookUrl(hook.row.url);
      const res = await request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': this.#o.userAgent,
          ...signatureHeaders(hook.key, d.msgId, d.body),
        },
        body: d.body,
        dispatcher: this.#agent(d.webhookId, url),
        signal: AbortSignal.timeout(this.#o.totalTimeoutMs),
      });
      status = res.statusCode;
      response = await readSnippet(res.body);
      if (status >= 200 && status < 300) return { id: d.id, kind: 'delivered', status, response };
      if (status === 410) {
        await this.#store.txAsync(() => this.#store.webhooks.update(d.webhookId, { active: false, disabledReason: 'Consumer answered 410 Gone' }));
        this.#log.warn({ webhookId: d.webhookId }, 'webhook deactivated: consumer answered 410 Gone');
        return { id: d.id, kind: 'failed', status, error: 'HTTP 410 Gone: webhook deactivated', response };
      }
      retryAfterMs = parseRetryAfter(res.headers['retry-after']);
      return this.#retryOrFail(d, status, `HTTP ${status}`, response, retryAfterMs);
    } catch (err) {
      if (status === null) {
        this.#log.debug({ webhookId: d.webhookId, reason: reasonOf(err) }, 'webhook delivery attempt failed');
        return this.#retryOrFail(d, status, UNREACHABLE, response, undefined);
      }
      return this.#retryOrFail(d, status, reasonOf(err), response, undefined);
    }
  }

  #retryOrFail(d: ClaimedDelivery, status: number | null, error: string, response: string | null, retryAfterMs: number | undefined): DeliveryOutcome {
    if (d.attempts >= this.maxAttempts) return { id: d.id, kind: 'failed', status, error, response };
    const base = this.#o.retryDelaysMs[d.attempts] ?? 0;
    let delay = base * (0.8 + 0.4 * this.#o.random());
    if (retryAfterMs !== undefined) delay = Math.max(delay, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
    return { id: d.id, kind: 'retry', status, error, response, nextAttemptAt: Date.now() + Math.round(delay) };
  }

  #sweepLeases(): void {
    for (const id of this.#agents.keys()) if (!this.#store.webhooks.getCached(id)) this.deleted(id);
    this.#store.txAsync(() => this.#store.deliveries.requeue({ all: false, maxAttempts: this.maxAttempts })).then(
      (r) => {
        if (r.requeued || r.failed) this.#log.warn(r, 'webhook deliveries with expired leases requeued');
        if (r.requeued) this.wake();
      },
      (err: unknown) => this.#log.error({ err }, 'webhook lease sweep failed'),
    );
  }
}

/** At most RESPONSE_SNIPPET_BYTES of a body as text; the rest is discarded (the stream destroyed). */
async function readSnippet(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_SNIPPET_BYTES) {
      body.destroy();
      break;
    }
  }
  if (size === 0) return null;
  return Buffer.concat(chunks).subarray(0, RESPONSE_SNIPPET_BYTES).toString('utf8');
}

/** `Retry-After` as seconds or an HTTP date → ms from now. */
export function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}
