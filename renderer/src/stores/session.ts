/**
 * Who the console is talking to: the API base URL, the operator's token (entered in a browser, handed over by
 * the preload in the desktop app), the service's health (version, sandbox mode) and the API client built from them.
 */
import { create } from 'zustand';
import { ApiClient, ApiError, errorMessage } from '../api/client.ts';
import { desktopBridge } from '../api/desktop.ts';
import type { Health } from '../api/types.ts';

const TOKEN_KEY = 'switchboard.token';

export type SessionPhase = 'booting' | 'need-token' | 'ready';

interface SessionState {
  phase: SessionPhase;
  baseUrl: string;
  client: ApiClient | null;
  health: Health | null;
  desktop: boolean;
  secretsDegraded: boolean;
  error: string | null;
  /** Whether the service answered lately (false while it is down: statuses are then unknown). */
  reachable: boolean;
  setReachable(reachable: boolean): void;
  /** The token stopped working (401, or the stream closed with 4401): back to sign-in, saying why. */
  expire(): void;
  /** Reads the desktop config or a stored token, checks it, and goes to `ready` or `need-token`. */
  boot(): Promise<void>;
  /** Checks `token` against the API; on success stores it (localStorage when `remember`). */
  signIn(token: string, remember: boolean): Promise<boolean>;
  signOut(): void;
}

function defaultBaseUrl(): string {
  return typeof location === 'undefined' ? 'http://127.0.0.1:7575/api' : `${location.origin}/api`;
}

function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/** What the sign-in page says after the token stopped working while signed in. */
export const EXPIRED_MESSAGE = 'Your token is no longer accepted (revoked or expired). Sign in again.';

function forgetToken(): void {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* ignore */
  }
}

async function verify(baseUrl: string, token: string): Promise<{ client: ApiClient; health: Health }> {
  const client = new ApiClient({ baseUrl, token, onUnauthorized: () => useSession.getState().expire() });
  const health = await client.health();
  await client.listConnections(); // 401 for a bad token
  return { client, health };
}

export const useSession = create<SessionState>((set, get) => ({
  phase: 'booting',
  baseUrl: defaultBaseUrl(),
  client: null,
  health: null,
  desktop: false,
  secretsDegraded: false,
  error: null,
  reachable: true,

  setReachable(reachable) {
    if (get().reachable !== reachable) set({ reachable });
  },

  expire() {
    if (get().phase !== 'ready') return;
    forgetToken();
    set({ phase: 'need-token', client: null, error: EXPIRED_MESSAGE });
  },

  async boot() {
    const bridge = desktopBridge();
    if (bridge) {
      try {
        const cfg = await bridge.getConfig();
        const { client, health } = await verify(cfg.apiUrl, cfg.token);
        set({ phase: 'ready', baseUrl: cfg.apiUrl, client, health, desktop: true, secretsDegraded: cfg.secretsDegraded, error: null });
      } catch (err) {
        set({ phase: 'need-token', desktop: true, error: `The desktop service did not answer: ${errorMessage(err)}` });
      }
      return;
    }
    const token = storedToken();
    if (!token) {
      set({ phase: 'need-token' });
      void new ApiClient({ baseUrl: get().baseUrl, token: '' }).health().then((health) => set({ health }), () => undefined);
      return;
    }
    try {
      const { client, health } = await verify(get().baseUrl, token);
      set({ phase: 'ready', client, health, error: null });
    } catch (err) {
      set({ phase: 'need-token', error: err instanceof ApiError && err.status === 401 ? 'Your saved token is no longer valid.' : errorMessage(err) });
    }
  },

  async signIn(token, remember) {
    const trimmed = token.trim();
    try {
      const { client, health } = await verify(get().baseUrl, trimmed);
      try {
        (remember ? localStorage : sessionStorage).setItem(TOKEN_KEY, trimmed);
      } catch {
        /* storage may be disabled; the session still works */
      }
      set({ phase: 'ready', client, health, error: null });
      return true;
    } catch (err) {
      set({ error: err instanceof ApiError && err.status === 401 ? 'That token was not accepted (invalid or revoked).' : errorMessage(err) });
      return false;
    }
  },

  signOut() {
    forgetToken();
    set({ phase: 'need-token', client: null, error: null });
  },
}));

/** The API client of a signed-in console (components below the token gate only). */
export function useClient(): ApiClient {
  const client = useSession((s) => s.client);
  if (!client) throw new Error('useClient outside a signed-in console');
  return client;
}
