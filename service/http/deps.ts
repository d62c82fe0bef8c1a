/** What the HTTP layer needs from the rest of the service; passed to every route plugin as its options. */
import type { Billing } from '../billing/billing.ts';
import type { MachineSettings } from '../config/machine-settings.ts';
import type { Store } from '../db/store.ts';
import type { Engine } from '../engine/types.ts';
import type { OutboundPolicy } from '../net/outbound.ts';

/** What the webhook routes need beyond the store. */
export interface WebhookDeps {
  /** Which URLs webhooks may target (checked at create/update). */
  policy: OutboundPolicy;
  /** Asks the dispatcher to look for due deliveries now (after a manual retry). */
  wake(): void;
  /** Tells the dispatcher a webhook is gone (its connection pool is closed). */
  deleted?(webhookId: string): void;
}

export interface ApiDeps {
  store: Store;
  engine: Engine;
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
  /** Webhook URL policy and dispatcher; without it webhooks accept only public https:// URLs and wait for the poll. */
  webhooks?: WebhookDeps;
  /** The machine's settings (the `/settings` routes, registered only when present). */
  settings?: MachineSettings;
  /** Set when the configured port was taken and the API listens on another one (health `portFallback`). */
  portFallback?: () => { requested: number; port: number; message: string } | undefined;
}
