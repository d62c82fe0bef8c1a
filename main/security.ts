/**
 * Electron security checklist applied (desktop-anchors §2.1): deny every permission request, lock navigation
 * to the service's own origin (compared with URL.origin, never startsWith), refuse new windows (https links go
 * to the system browser), no <webview>. The CSP comes from the service as an HTTP header (routes/console.ts).
 */
import { shell, type Session, type WebContents } from 'electron';

export function isAllowedExternalUrl(url: string): boolean {
  try {
    return new URL(url).protocol === 'https:';
  } catch {
    return false;
  }
}

export function hardenSession(s: Session): void {
  s.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  s.setPermissionCheckHandler(() => false);
}

export function hardenWebContents(contents: WebContents, origin: () => string | undefined): void {
  contents.on('will-navigate', (e, url) => {
    const own = origin();
    if (!own || new URL(url).origin !== own) e.preventDefault();
  });
  contents.on('will-redirect', (e, url) => {
    const own = origin();
    if (!own || new URL(url).origin !== own) e.preventDefault();
  });
  contents.on('will-attach-webview', (e) => e.preventDefault());
  contents.setWindowOpenHandler(({ url }) => {
    if (isAllowedExternalUrl(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
}
