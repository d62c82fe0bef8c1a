/**
 * Sandbox media trust (docs/architecture.md § Sandbox trust): HTTP agents that trust the sandbox's own CA for the
 * sandbox-mode requests Baileys makes — uploads via Node `https.request` (`fetchAgent`) and downloads via global
 * `fetch` (`options.dispatcher`) — and nothing else. Never process-wide (no NODE_EXTRA_CA_CERTS, no
 * NODE_TLS_REJECT_UNAUTHORIZED); a live-mode engine never builds these.
 */
import { Agent as HttpsAgent } from 'node:https';
import { Agent as UndiciAgent, type Dispatcher } from 'undici';

export interface SandboxTrust {
  /** For `makeWASocket({ fetchAgent })` (media uploads). */
  fetchAgent: HttpsAgent;
  /** For `makeWASocket({ options: { dispatcher } })` and `downloadMediaMessage(…, { options: { dispatcher } })`. */
  dispatcher: Dispatcher;
}

/** Agents trusting exactly `caCertPem` (the sandbox CA) in addition to nothing else. */
export function sandboxTrust(caCertPem: string): SandboxTrust {
  return {
    fetchAgent: new HttpsAgent({ ca: caCertPem, keepAlive: true }),
    dispatcher: new UndiciAgent({ connect: { ca: caCertPem } }),
  };
}
