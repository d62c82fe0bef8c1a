/** What the HTTP layer needs from the rest of the service; passed to every route plugin as its options. */
import type { Billing } from '../billing/billing.ts';
import type { MachineSettings } from '../config/machine-settings.ts';
import type { Store as AsyncStore } from '../db/store-api.ts';
import type { Store } from '../db/store.ts';
import type { Engine } from '../engine/types.ts';
import type { EventLog } from '../events/log.ts';
import type { OutboundPolicy } from '../net/outbound.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';

export interface ApiDeps {
  /** The synchronous SQLite store (the parts of the API not on `asyncStore` yet). */
  store: Store;
  /** The data plane's asynchronous Store (db/store-api.ts) over the same database: the routes' reads and writes. */
  asyncStore: AsyncStore;
  engine: Engine;
  /** The event log: the WebSocket streams subscribe to it. */
  events: EventLog;
  /** The webhook outbox: test events, retries and replays (its dispatcher, when one runs, is attached to it). */
  outbox: WebhookOutbox;
  /** Shown as Connection.workerId of new connections. */
  workerId: string;
  version: string;
  /** True when the engine talks to the sandbox (test mode), reported by the health route. */
  sandbox: boolean;
  /** When the service started (ms since the epoch), for the health route's uptime. */
  startedAt: number;
  /** The data dir's state for the health route: `low` below twice --min-free-mb, `unavailable` while commits fail. */
  storage?: () => 'ok' | 'low' | 'unavailable';
  /** Slots and billing (issue #6); absent: the local provider with the default settings (100 slots per user). */
  billing?: Billing;
  /** Which URLs webhooks may target (checked at create/update); absent: only public https:// URLs. */
  webhookPolicy?: OutboundPolicy;
  /** The machine's settings (the `/settings` routes, registered only when present). */
  settings?: MachineSettings;
  /** Set when the configured port was taken and the API listens on another one (health `portFallback`). */
  portFallback?: () => { requested: number; port: number; message: string } | undefined;
}
