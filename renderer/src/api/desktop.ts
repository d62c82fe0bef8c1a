/**
 * The desktop bridge (preload/index.cts) as the renderer sees it: `window.switchboardDesktop`, present only in
 * the desktop app. In a browser the console asks for a token instead.
 */
export interface DesktopConfig {
  /** e.g. `http://127.0.0.1:7575/api` */
  apiUrl: string;
  token: string;
  sandbox: boolean;
  version: string;
  /** The operator token is kept in a 0600 file because no OS keychain was reachable. */
  secretsDegraded: boolean;
}

export interface DesktopBridge {
  getConfig(): Promise<DesktopConfig>;
  /** Opens an https: URL (checkout / billing portal) in the system browser. */
  openExternal(url: string): Promise<void>;
  /** Hides the window; sessions stay online. */
  hideWindow(): Promise<void>;
  quit(): Promise<void>;
  /** Notices about the service's own process (it runs apart from the window); returns an unsubscribe. */
  onServiceNotice?(listener: (notice: ServiceNotice) => void): () => void;
}

/** What main/service-supervisor.ts reports about the service process. */
export type ServiceNotice =
  | { kind: 'crashed'; code: number | null }
  | { kind: 'restarted'; apiUrl: string }
  | { kind: 'failed'; message: string };

declare global {
  interface Window {
    switchboardDesktop?: DesktopBridge;
  }
}

export function desktopBridge(): DesktopBridge | undefined {
  return typeof window === 'undefined' ? undefined : window.switchboardDesktop;
}

/** Opens an external https: page: through the desktop bridge, or a new browser tab. */
export async function openExternal(url: string): Promise<void> {
  if (!/^https:\/\//.test(url)) throw new Error('Only https: links can be opened');
  const bridge = desktopBridge();
  if (bridge) return bridge.openExternal(url);
  window.open(url, '_blank', 'noopener,noreferrer');
}
