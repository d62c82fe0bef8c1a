/**
 * Long-lived connections (WebSocket event streams) authenticated by an API token. A token checked once at the
 * upgrade must not keep working after it is revoked or its user is disabled, so every open stream is registered
 * here with its token and user:
 *
 * - `DELETE /tokens/:id` closes the token's streams at once (`revokeToken`);
 * - a sweep re-checks every open stream against the database every `sweepIntervalMs` (default 2 s), which catches
 *   revocations and user disables made by the CLI in another process (`switchboard token revoke`, `user disable`).
 *
 * Streams closed this way get close code 4401 (4000-4999 are application codes; 4401 mirrors HTTP 401) with the
 * reason `Invalid or revoked API token`. Clients must not reconnect with the same token.
 */
import type { Store } from '../db/store.ts';
import { AUTH_MESSAGES } from './authenticate.ts';

export const REVOKED_CLOSE = { code: 4401, reason: AUTH_MESSAGES.invalidApiToken } as const;
export const DEFAULT_SWEEP_INTERVAL_MS = 2_000;

export interface LiveSession {
  userId: string;
  tokenId: string;
  close(code: number, reason: string): unknown;
}

export class LiveCredentials {
  readonly #sessions = new Set<LiveSession>();
  #timer: NodeJS.Timeout | undefined;

  /** Registers an open session; the returned function unregisters it (call it when the socket closes). */
  add(session: LiveSession): () => void {
    this.#sessions.add(session);
    return () => this.#sessions.delete(session);
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Closes every session opened with `tokenId`. */
  revokeToken(tokenId: string): void {
    this.#closeWhere((s) => s.tokenId === tokenId);
  }

  /** Closes every session of `userId`. */
  revokeUser(userId: string): void {
    this.#closeWhere((s) => s.userId === userId);
  }

  /** Closes the sessions whose token is no longer active or whose user is disabled or gone. */
  sweep(store: Pick<Store, 'tokens' | 'users'>): void {
    this.#closeWhere((s) => {
      const token = store.tokens.get(s.tokenId);
      const user = store.users.get(s.userId);
      return !token || token.revokedAt !== null || !user || user.disabled;
    });
  }

  /** Sweeps every `intervalMs` until `stop()`. */
  start(store: Pick<Store, 'tokens' | 'users'>, intervalMs = DEFAULT_SWEEP_INTERVAL_MS): void {
    this.stop();
    this.#timer = setInterval(() => {
      if (this.#sessions.size === 0) return;
      try {
        this.sweep(store);
      } catch {
        // The database is closing; the streams are closed by the shutdown path.
      }
    }, intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #closeWhere(pred: (s: LiveSession) => boolean): void {
    for (const s of [...this.#sessions]) {
      if (!pred(s)) continue;
      this.#sessions.delete(s);
      s.close(REVOKED_CLOSE.code, REVOKED_CLOSE.reason);
    }
  }
}
