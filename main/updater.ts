/**
 * Auto-update with electron-updater from a generic provider (the URL in electron-builder.yml `publish`, or
 * SWITCHBOARD_UPDATE_URL). Packaged builds only; never in development. Downloads in the background and installs
 * on quit.
 */
import electronUpdater from 'electron-updater';

export function startUpdater(): void {
  const { autoUpdater } = electronUpdater;
  if (process.env.SWITCHBOARD_UPDATE_URL) autoUpdater.setFeedURL({ provider: 'generic', url: process.env.SWITCHBOARD_UPDATE_URL });
  autoUpdater.autoDownload = true;
  autoUpdater.autoInstallOnAppQuit = true;
  autoUpdater.on('error', (err) => console.warn('[updater]', err.message));
  void autoUpdater.checkForUpdatesAndNotify().catch((err: unknown) => console.warn('[updater]', (err as Error).message));
}
