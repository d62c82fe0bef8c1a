/**
 * Entry files have no side effects on import (issue 25 item 1): every module of the desktop shell (main/, preload/)
 * is imported with Electron replaced by inert stand-ins (the binary is not needed), in a test worker — which, like
 * the desktop's service process, has an IPC channel to its parent — and nothing may follow: no server listens, no
 * child process or utility process starts, no file appears in the home, data or temp folders the service would
 * use, and no window or tray is made. main/service-host.ts, the service process's entry, must start the service
 * only when it is the process's entry, never because something imported it (it used to start a live service on
 * the user's default data dir in the importing process).
 *
 * It also checks the shell's two start-up facts that need no window: the app's name is set to "Switchboard"
 * before anything reads a path derived from it, and the icon file is where both a development run and a packaged
 * app (electron-builder.yml) have it.
 */
import { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/** What the shell asked of Electron, in order (`app.setName`, `utilityProcess.fork`, `new Tray`, …). */
const electronCalls = vi.hoisted(() => [] as string[]);

vi.mock('electron', () => {
  /** An object whose every member is a function that records its call and returns another such object. */
  const standIn = (name: string): unknown =>
    new Proxy(function () {}, {
      get: (_t, key) => (key === 'then' ? undefined : standIn(`${name}.${String(key)}`)),
      apply: () => {
        electronCalls.push(name);
        return standIn(`${name}()`);
      },
      construct: () => {
        electronCalls.push(`new ${name}`);
        return standIn(`new ${name}`) as object;
      },
    });
  const app = new Proxy(
    {
      isPackaged: false,
      requestSingleInstanceLock: () => (electronCalls.push('app.requestSingleInstanceLock'), true),
      setName: (name: string) => electronCalls.push(`app.setName(${name})`),
      whenReady: () => (electronCalls.push('app.whenReady'), new Promise<never>(() => {})), // never ready: no boot
      on: (event: string) => (electronCalls.push(`app.on(${event})`), app),
    } as Record<string, unknown>,
    { get: (t, key) => (key in t ? t[key as string] : key === 'then' ? undefined : standIn(`app.${String(key)}`)) },
  );
  const names = [
    'BrowserWindow',
    'Menu',
    'Tray',
    'dialog',
    'ipcMain',
    'ipcRenderer',
    'contextBridge',
    'nativeImage',
    'session',
    'shell',
    'utilityProcess',
  ];
  const module = { app, ...Object.fromEntries(names.map((n) => [n, standIn(n)])) };
  return { ...module, default: module };
});

const childProto = ChildProcess.prototype as unknown as { spawn(options: { file: string }): unknown };
const root = path.resolve(import.meta.dirname, '../..');
const modules = (folder: string, ext: RegExp) =>
  fs
    .readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => ext.test(f) && !f.endsWith('.d.ts'))
    .map((f) => path.join(folder, f))
    .sort();

/**
 * Runs a preload script as Electron's sandboxed preload does: CommonJS, whose `require` gives only `electron`
 * (here the stand-in). Vite cannot import `.cts` sources, so TypeScript compiles it first.
 */
async function loadPreload(file: string): Promise<void> {
  const electron = await import('electron');
  const { outputText } = ts.transpileModule(fs.readFileSync(path.join(root, file), 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const module = { exports: {} };
  const require = (name: string) => {
    if (name === 'electron') return electron;
    throw new Error(`a sandboxed preload cannot require ${name}`);
  };
  new Function('require', 'module', 'exports', outputText)(require, module, module.exports);
}

/** Every file and folder under `dir`, relative. */
const contents = (dir: string) => fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

describe('importing the desktop shell (main/, preload/) with Electron replaced', { timeout: 120_000 }, () => {
  const saved = { ...process.env };
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-inert-home-'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-inert-tmp-'));
  const listened: string[] = [];
  const spawned: string[] = [];
  const files = [...modules('main', /\.ts$/), ...modules('preload', /\.c?ts$/)];
  const resourcesBefore = process.getActiveResourcesInfo();

  beforeAll(() => {
    // Everything the default data dir, the desktop's folders and os.tmpdir() come from points at empty folders.
    Object.assign(process.env, {
      HOME: home,
      USERPROFILE: home,
      XDG_DATA_HOME: path.join(home, 'data'),
      XDG_CONFIG_HOME: path.join(home, 'config'),
      APPDATA: path.join(home, 'appdata'),
      LOCALAPPDATA: path.join(home, 'localappdata'),
      TMPDIR: tmp,
    });
    for (const name of Object.keys(process.env)) if (name.startsWith('SWITCHBOARD_')) delete process.env[name];
    const listen = net.Server.prototype.listen;
    vi.spyOn(net.Server.prototype, 'listen').mockImplementation(function (this: net.Server, ...args: unknown[]) {
      listened.push(JSON.stringify(args[0]) ?? 'listen()');
      return listen.apply(this, args as Parameters<typeof listen>);
    });
    // Every child process (spawn, fork, exec…) starts through ChildProcess#spawn, an untyped internal.
    const spawn = childProto.spawn;
    vi.spyOn(childProto, 'spawn').mockImplementation(function (this: unknown, options) {
      spawned.push(options.file);
      return spawn.call(this, options);
    });
  });

  afterAll(() => {
    vi.restoreAllMocks();
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('finds the modules', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'main/index.ts',
        'main/service-host.ts',
        'main/service-supervisor.ts',
        'preload/index.cts',
      ]),
    );
  });

  it('starts nothing: no server, no process, no file, no window', async () => {
    for (const file of files) {
      if (file.endsWith('.cts')) await loadPreload(file);
      else await import(path.join(root, file));
    }
    expect(process.send, 'the worker has an IPC channel, as the service process has').toBeTypeOf('function');
    // They did run: main registered its handlers and waits for Electron; the preload exposed its bridge.
    expect(electronCalls).toEqual(expect.arrayContaining(['app.whenReady', 'contextBridge.exposeInMainWorld']));

    // A service started by an import gets going within milliseconds of it (it locks its data dir first): watch a while.
    const started = Date.now();
    const sideEffects = () => [
      ...listened.map((l) => `listen ${l}`),
      ...spawned.map((s) => `spawn ${s}`),
      ...contents(home).map((f) => `file ${path.join(home, f)}`),
      ...contents(tmp).map((f) => `file ${path.join(tmp, f)}`),
      ...electronCalls.filter((c) => /^(new |utilityProcess|dialog|shell)/.test(c)).map((c) => `electron ${c}`),
    ];
    while (Date.now() - started < 2_000 && sideEffects().length === 0) await new Promise((r) => setTimeout(r, 50));
    expect(sideEffects()).toEqual([]);

    const handles = (list: string[]) =>
      list.filter((r) => /TCP|Pipe|Process|UDP|Worker|MessagePort|FSEvent|StatWatcher/.test(r)).sort();
    expect(handles(process.getActiveResourcesInfo())).toEqual(handles(resourcesBefore));
  });

  it('names the app "Switchboard" before it asks for the single-instance lock (a dev run would say "Electron")', () => {
    const named = electronCalls.indexOf('app.setName(Switchboard)');
    expect(named).toBeGreaterThanOrEqual(0);
    expect(named).toBeLessThan(electronCalls.indexOf('app.requestSingleInstanceLock'));
  });
});

describe('the window and tray icon', () => {
  it("is the checkout's resources/icon.png in development, from main/ or dist/main/", async () => {
    const { appIconPath, SOURCE_ICON } = await import('../../main/app-icon.ts');
    for (const mainDir of [path.join(root, 'main'), path.join(root, 'dist', 'main')]) {
      expect(appIconPath({ packaged: false, resourcesPath: '/unused', mainDir })).toBe(path.join(root, SOURCE_ICON));
    }
    expect(fs.statSync(path.join(root, SOURCE_ICON)).isFile()).toBe(true);
  });

  it('is the file electron-builder.yml ships next to app.asar in a packaged app (extraResources)', async () => {
    const { appIconPath, PACKAGED_ICON, SOURCE_ICON } = await import('../../main/app-icon.ts');
    const yml = fs.readFileSync(path.join(root, 'electron-builder.yml'), 'utf8');
    const shipped = /^extraResources:\n(?:\s+.*\n)*?\s+- from: (\S+)\n\s+to: (\S+)\n/m.exec(yml);
    expect(shipped, 'electron-builder.yml has no extraResources entry for the icon').not.toBeNull();
    expect(shipped![1]).toBe(SOURCE_ICON);
    const resourcesPath = path.join(os.tmpdir(), 'Switchboard', 'resources');
    expect(
      appIconPath({ packaged: true, resourcesPath, mainDir: path.join(resourcesPath, 'app.asar', 'dist', 'main') }),
    ).toBe(path.join(resourcesPath, shipped![2]!));
    expect(shipped![2]).toBe(PACKAGED_ICON);
  });
});
