/**
 * Electron main: a thin shell around the service, which runs in its own Electron `utilityProcess`
 * (main/service-host.ts) so no message, query or HTTP request ever costs the thread that drives the window.
 * Single instance; starts the service process before any window and restarts it if it dies (the window shows a
 * notice); creates or reads the operator token (OS keychain via SecretStore); opens one hardened window on the
 * console the service serves at `http://127.0.0.1:PORT/`; closing the window hides it (sessions stay online) and
 * only the tray's or the menu's Quit stops the service. Updates through electron-updater (generic provider,
 * packaged builds only). Settings come from the same places as `switchboard serve`'s (docs/settings.md): the
 * `SWITCHBOARD_*` variables (SWITCHBOARD_SANDBOX=1, SWITCHBOARD_DATA_DIR, …), then the data dir's settings.json,
 * which the console's Settings view edits; the API port defaults to 7575, with a free one (and a notice) when it is
 * taken. A restart asked for in Settings starts the service afresh and reloads the window at its new origin.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  app,
  BrowserWindow,
  dialog,
  ipcMain,
  Menu,
  nativeImage,
  session,
  shell,
  Tray,
  utilityProcess,
  type IpcMainInvokeEvent,
} from 'electron';
import { clearSandboxOnlyVariables, resolveDataDir, resolveSandboxMode } from '../service/config/service-config.ts';
import { openSecretStore, type SecretStore } from '../service/secrets/secret-store.ts';
import { VERSION } from '../service/config/version.ts';
import { appIconPath } from './app-icon.ts';
import { SERVICE_HOST_ENTRY, type HostToMain } from './host-protocol.ts';
import { ensureOperatorToken } from './operator-token.ts';
import { hardenSession, hardenWebContents, isAllowedExternalUrl } from './security.ts';
import { ServiceSupervisor, type HostProcess, type SupervisorNotice } from './service-supervisor.ts';
import { startUpdater } from './updater.ts';

// The name the desktop shows (menus, the window list, the user-data folder): a development run would show
// "Electron", the name of the binary it runs on. Before anything reads a path derived from it (the instance lock).
app.setName('Switchboard');

// A packaged app is sealed: nothing in its environment may point it at another WhatsApp server or trust anchor.
if (app.isPackaged) {
  const removed = clearSandboxOnlyVariables();
  if (removed.length > 0) console.warn(`Switchboard ignores ${removed.join(' and ')} in the packaged app`);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const iconFile = appIconPath({ packaged: app.isPackaged, resourcesPath: process.resourcesPath, mainDir: here });

let service: ServiceSupervisor | undefined;
let win: BrowserWindow | undefined;
let tray: Tray | undefined;
let quitting = false;
let desktopConfig: { apiUrl: string; token: string; sandbox: boolean; version: string; secretsDegraded: boolean } | undefined;

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => showWindow());
  app.on('window-all-closed', () => {
    /* keep running in the background: sessions stay online */
  });
  app.on('before-quit', () => {
    quitting = true;
  });
  app.on('will-quit', (e) => {
    if (!service) return;
    e.preventDefault();
    const s = service;
    service = undefined;
    void s.stop().finally(() => app.quit());
  });
  app.on('activate', () => showWindow());
  app.on('web-contents-created', (_e, contents) => hardenWebContents(contents, () => serviceOrigin()));
  void app.whenReady().then(boot).catch((err: unknown) => {
    console.error('Switchboard could not start:', err);
    // A settings.json or keychain problem names the file and key: show it, since there is no window yet.
    dialog.showErrorBox('Switchboard could not start', err instanceof Error ? err.message : String(err));
    app.exit(1);
  });
}

function serviceOrigin(): string | undefined {
  return desktopConfig ? new URL(desktopConfig.apiUrl).origin : undefined;
}

/** The service's process: Electron's utilityProcess running main/service-host.ts with the shell's environment. */
function forkServiceHost(env: Record<string, string>): HostProcess {
  const child = utilityProcess.fork(path.join(here, SERVICE_HOST_ENTRY), [], {
    serviceName: 'Switchboard service',
    env: { ...process.env, ...env },
    stdio: 'inherit',
  });
  return {
    postMessage: (m) => child.postMessage(m),
    onMessage: (l) => child.on('message', (m: unknown) => l(m as HostToMain)),
    onExit: (l) => child.once('exit', (code) => l(code)),
    kill: () => void child.kill(),
  };
}

function noticeToWindow(notice: SupervisorNotice): void {
  if (notice.kind === 'crashed') console.error(`Switchboard: the service process exited (code ${notice.code}); restarting it`);
  if (notice.kind === 'restarted' && desktopConfig && notice.apiUrl !== desktopConfig.apiUrl) {
    // A restart from Settings may move the API to another port: follow it (IPC and navigation checks read the origin).
    desktopConfig = { ...desktopConfig, apiUrl: notice.apiUrl };
    void win?.loadURL(`${serviceOrigin()}/`);
    return;
  }
  win?.webContents.send('switchboard:service-notice', notice);
}

async function boot(): Promise<void> {
  const sandbox = resolveSandboxMode({});
  const dataDir = resolveDataDir({}, sandbox);
  const secrets: SecretStore = await openSecretStore({
    dataDir,
    onDegraded: (reason) => console.warn(`[secrets] degraded: ${reason}`),
  });
  const supervisor = new ServiceSupervisor({ fork: forkServiceHost, onNotice: noticeToWindow });
  service = supervisor;
  const apiUrl = await supervisor.start();
  const token = await ensureOperatorToken({ secrets, apiUrl, create: () => supervisor.issueOperatorToken() });
  desktopConfig = { apiUrl, token, sandbox, version: VERSION, secretsDegraded: secrets.degraded };

  hardenSession(session.defaultSession);
  registerIpc();
  createTray();
  showWindow();
  if (app.isPackaged) startUpdater();
}

/** IPC handlers check that the sender is our console's main frame, then do exactly one thing. */
function registerIpc(): void {
  const trusted = (e: IpcMainInvokeEvent) => {
    const origin = serviceOrigin();
    const url = e.senderFrame?.url;
    if (!origin || !url || new URL(url).origin !== origin || e.sender !== win?.webContents) throw new Error('untrusted sender');
  };
  ipcMain.handle('switchboard:get-config', (e) => {
    trusted(e);
    return desktopConfig;
  });
  ipcMain.handle('switchboard:open-external', async (e, url: unknown) => {
    trusted(e);
    if (typeof url !== 'string' || !isAllowedExternalUrl(url)) throw new Error('only https: links can be opened');
    await shell.openExternal(url);
  });
  ipcMain.handle('switchboard:hide-window', (e) => {
    trusted(e);
    win?.hide();
  });
  ipcMain.handle('switchboard:quit', (e) => {
    trusted(e);
    app.quit();
  });
}

function showWindow(): void {
  if (!desktopConfig) return;
  if (win) {
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
    return;
  }
  win = new BrowserWindow({
    width: 1280,
    height: 820,
    minWidth: 900,
    minHeight: 600,
    title: 'Switchboard',
    icon: iconFile,
    show: false,
    webPreferences: {
      preload: path.join(here, '../preload/index.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
    },
  });
  win.once('ready-to-show', () => win?.show());
  win.on('close', (e) => {
    if (!quitting) {
      e.preventDefault();
      win?.hide();
    }
  });
  win.on('closed', () => {
    win = undefined;
  });
  void win.loadURL(`${serviceOrigin()}/`);
}

function createTray(): void {
  const icon = nativeImage.createFromPath(iconFile).resize({ width: 18, height: 18 });
  tray = new Tray(icon);
  tray.setToolTip(desktopConfig?.sandbox ? 'Switchboard (sandbox)' : 'Switchboard');
  const menu = Menu.buildFromTemplate([
    { label: 'Open console', click: () => showWindow() },
    { type: 'separator' },
    { label: 'Quit Switchboard', click: () => app.quit() },
  ]);
  tray.setContextMenu(menu);
  tray.on('click', () => showWindow());
  Menu.setApplicationMenu(
    Menu.buildFromTemplate([
      { label: 'Switchboard', submenu: [{ label: 'Hide window', accelerator: 'CmdOrCtrl+W', click: () => win?.hide() }, { type: 'separator' }, { label: 'Quit', accelerator: 'CmdOrCtrl+Q', click: () => app.quit() }] },
      { role: 'editMenu' },
      { role: 'viewMenu' },
    ]),
  );
}
