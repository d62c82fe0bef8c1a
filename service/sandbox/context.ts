/**
 * The wiring shared by the sandbox's parts (one instance per running sandbox), so modules depend on
 * interfaces of each other rather than on construction order.
 */
import type { Logger } from 'pino';
import type { Accounts } from './accounts.ts';
import type { AppStateKeys } from './app-state.ts';
import type { Blocklist } from './blocklist.ts';
import type { Calls } from './calls.ts';
import type { ServerIdentity } from './certs.ts';
import type { Delivery } from './delivery.ts';
import type { Groups } from './groups.ts';
import type { LinkCodes } from './link-code.ts';
import type { MediaHost } from './media.ts';
import type { Messaging } from './messaging.ts';
import type { Pairing } from './pairing.ts';
import type { Phones } from './signal-device.ts';
import type { Profiles } from './profiles.ts';
import type { Signals } from './signals.ts';
import type { Statuses } from './statuses.ts';
import type { Store } from './store.ts';

export interface SandboxContext {
  store: Store;
  logger: Logger;
  identity: ServerIdentity;
  accounts: Accounts;
  phones: Phones;
  pairing: Pairing;
  /** Linking by phone code (`link_code_companion_reg`). */
  linkCodes: LinkCodes;
  delivery: Delivery;
  messaging: Messaging;
  groups: Groups;
  /** Status posts of companions (status@broadcast) and the phones' status lists. */
  statuses: Statuses;
  /** Who blocked whom (blocklist IQs, refused sends). */
  blocklist: Blocklist;
  /** Calls placed by the phones (signalling only). */
  calls: Calls;
  /** About texts and profile pictures. */
  profiles: Profiles;
  /** The accounts' app-state sync keys (shared with companions; push-name patches). */
  appState: AppStateKeys;
  signals: Signals;
  /** The HTTPS media host; `media.host` (`host:port`) is advertised in `media_conn` answers. */
  media: MediaHost;
  /** History sync sizing (per-chat cap and messages per history-sync chunk). */
  history: { messagesPerChat: number; messagesPerChunk: number };
}

/** Unix time in seconds, as a string (binary-node attribute values must be strings). */
export function unixNow(): string {
  return String(Math.floor(Date.now() / 1000));
}
