/** What the HTTP layer needs from the rest of the service; passed to every route plugin as its options. */
import type { Store } from '../db/store.ts';
import type { Engine } from '../engine/types.ts';

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
}
