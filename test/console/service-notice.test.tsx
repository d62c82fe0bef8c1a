// @vitest-environment jsdom
/**
 * The desktop window's notice about the service process (issue 18 item 1), renderer side: the real preload
 * (preload/index.cts, compiled as Electron loads it) runs against a stand-in for the two Electron objects it uses
 * (contextBridge puts the bridge on `window`, ipcRenderer is an event emitter), and the real <App> subscribes
 * through the bridge it exposed. What main sends on `switchboard:service-notice` (main/index.ts, from the
 * supervisor's notices) shows as "The service stopped… restarting", then "The service is back"; a failed start
 * says so; unmounting the console unsubscribes. main → webContents is Electron's and is covered by
 * test/desktop/electron.test.ts where the binary exists; the supervisor's notices by service-supervisor.test.ts.
 */
import { notifications } from '@mantine/notifications';
import { act, cleanup, render, screen } from '@testing-library/react';
import ts from 'typescript';
import { installDomShims } from './dom-shims.tsx';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DesktopBridge, ServiceNotice } from '../../renderer/src/api/desktop.ts';
import { App } from '../../renderer/src/App.tsx';
import preloadSource from '../../preload/index.cts?raw';

beforeAll(() => {
  installDomShims();
});
afterEach(() => {
  cleanup();
  act(() => notifications.clean()); // Mantine keeps its notifications in a module-wide store
  delete window.switchboardDesktop;
});

const NOTICE_CHANNEL = 'switchboard:service-notice';

/** ipcRenderer as the preload uses it: on/off for main's messages, invoke for requests to main. */
class FakeIpcRenderer {
  readonly invoked: string[] = [];
  #listeners = new Map<string, Set<(event: unknown, ...args: unknown[]) => void>>();
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void {
    if (!this.#listeners.has(channel)) this.#listeners.set(channel, new Set());
    this.#listeners.get(channel)!.add(listener);
  }
  off(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void {
    this.#listeners.get(channel)?.delete(listener);
  }
  listenerCount(channel: string): number {
    return this.#listeners.get(channel)?.size ?? 0;
  }
  /** Main's answer to get-config never comes here: the console stays on its loader; the notice shows regardless. */
  invoke(channel: string): Promise<never> {
    this.invoked.push(channel);
    return new Promise(() => undefined);
  }
  /** What main/index.ts does with a supervisor notice: `webContents.send(NOTICE_CHANNEL, notice)`. */
  sendFromMain(channel: string, ...args: unknown[]): void {
    for (const l of this.#listeners.get(channel) ?? []) l({ sender: 'main' }, ...args);
  }
}

/** Runs the real preload, compiled to CommonJS as Electron loads it, with a stand-in `electron`. */
function loadPreload(): FakeIpcRenderer {
  const { outputText } = ts.transpileModule(preloadSource, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const ipcRenderer = new FakeIpcRenderer();
  const electron = {
    contextBridge: { exposeInMainWorld: (key: string, api: unknown) => Object.assign(window, { [key]: api }) },
    ipcRenderer,
  };
  const module = { exports: {} };
  const requireStub = (id: string) => {
    if (id !== 'electron') throw new Error(`the preload may require only electron, not ${id}`);
    return electron;
  };
  new Function('require', 'module', 'exports', outputText)(requireStub, module, module.exports);
  return ipcRenderer;
}

function fromMain(ipc: FakeIpcRenderer, notice: ServiceNotice): void {
  act(() => ipc.sendFromMain(NOTICE_CHANNEL, notice));
}

describe('the service notice in the desktop window', () => {
  it('shows the crash, then the recovery, of the service process as main reports them through the preload bridge', async () => {
    const ipc = loadPreload();
    const bridge: DesktopBridge | undefined = window.switchboardDesktop;
    expect(Object.keys(bridge ?? {}).sort()).toEqual(['getConfig', 'hideWindow', 'onServiceNotice', 'openExternal', 'quit']);

    const { unmount } = render(<App />);
    expect(ipc.invoked).toContain('switchboard:get-config');
    expect(ipc.listenerCount(NOTICE_CHANNEL)).toBe(1);
    expect(screen.queryByText('The service stopped')).toBeNull();

    fromMain(ipc, { kind: 'crashed', code: null });
    expect(await screen.findByText('The service stopped')).toBeTruthy();
    expect(screen.getByText(/exited unexpectedly \(code none\); restarting it/)).toBeTruthy();

    fromMain(ipc, { kind: 'restarted', apiUrl: 'http://127.0.0.1:7575/api' });
    expect(await screen.findByText('The service is back')).toBeTruthy();
    expect(screen.getByText('Sessions reconnect by themselves.')).toBeTruthy();
    expect(screen.queryByText('The service stopped')).toBeNull(); // the same notice, updated

    unmount();
    expect(ipc.listenerCount(NOTICE_CHANNEL)).toBe(0);
  });

  it('says when the service could not start again, and keeps trying', async () => {
    const ipc = loadPreload();
    render(<App />);
    fromMain(ipc, { kind: 'crashed', code: 137 });
    expect(await screen.findByText(/exited unexpectedly \(code 137\)/)).toBeTruthy();
    fromMain(ipc, { kind: 'failed', message: 'Port 7575 is in use' });
    expect(await screen.findByText('The service did not start')).toBeTruthy();
    expect(screen.getByText('Port 7575 is in use — trying again…')).toBeTruthy();
  });
});
