/**
 * The one bridge object the console sees in the desktop app (`window.switchboardDesktop`): the service's base
 * URL and the operator token (from the main process, which keeps it in the OS keychain), plus a few explicit
 * actions. No ipcRenderer or Node API is exposed. CommonJS because sandboxed preloads cannot be ES modules.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS import syntax under verbatimModuleSyntax
import electron = require('electron');

const { contextBridge, ipcRenderer } = electron;

contextBridge.exposeInMainWorld('switchboardDesktop', {
  getConfig: () => ipcRenderer.invoke('switchboard:get-config'),
  openExternal: (url: string) => ipcRenderer.invoke('switchboard:open-external', String(url)),
  hideWindow: () => ipcRenderer.invoke('switchboard:hide-window'),
  quit: () => ipcRenderer.invoke('switchboard:quit'),
  /** Calls `listener` with each notice about the service process (crashed, restarted, failed); returns an unsubscribe. */
  onServiceNotice: (listener: (notice: unknown) => void) => {
    const handler = (_event: unknown, notice: unknown) => listener(notice);
    ipcRenderer.on('switchboard:service-notice', handler);
    return () => {
      ipcRenderer.off('switchboard:service-notice', handler);
    };
  },
});
