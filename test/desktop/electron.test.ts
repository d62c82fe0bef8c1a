/**
 * The desktop app as issue 18 checks it, on the built app (`npm run build:desktop`, dist/main/index.js) through
 * Playwright's Electron driver, under a virtual display (`xvfb-run`) on a Linux machine without one:
 *
 * 1. it starts, and the service answers `GET /api/` on the port pinned by the data dir's settings.json, from
 *    the Electron `utilityProcess` named "Switchboard service" (not the main process), while the window shows
 *    the console signed in at that origin, with a locked-down renderer;
 * 2. a `kill -9` of that utility process stops the API; the supervisor (main/service-supervisor.ts) starts a new
 *    one on the same port, and the window, which is not reloaded, shows the notice ("The service stopped" →
 *    "The service is back") that main sends through the preload bridge.
 *
 * Skipped, with the reason in the suite's name and on the console, where the Electron binary is absent (it
 * cannot be downloaded on the build machines; docs/desktop.md says how to get it), where the app is not built,
 * or where there is neither a display nor xvfb-run. The same restart under Node's `fork` runs everywhere
 * (service-supervisor.test.ts), and the window's notice against the real preload and App in jsdom
 * (test/console/service-notice.test.tsx).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ElectronApplication, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.ts';

const require = createRequire(import.meta.url);

/** The Electron executable that `npm ci` would have downloaded, when it is there. */
function electronBinary(): string | undefined {
  try {
    const dir = path.dirname(require.resolve('electron/package.json'));
    const pathFile = path.join(dir, 'path.txt');
    if (!fs.existsSync(pathFile)) return undefined;
    const bin = path.join(dir, 'dist', fs.readFileSync(pathFile, 'utf8').trim());
    return fs.existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir, command);
    if (dir && fs.existsSync(file)) return file;
  }
  return undefined;
}

const bin = electronBinary();
const mainEntry = path.resolve('dist/main/index.js');
const needsVirtualDisplay = process.platform === 'linux' && !process.env.DISPLAY;
const xvfbRun = needsVirtualDisplay ? onPath('xvfb-run') : undefined;
const reason = !bin
  ? 'the Electron binary is not installed (node_modules/electron/dist is absent; see docs/desktop.md)'
  : !fs.existsSync(mainEntry)
    ? 'the desktop app is not built (run `npm run build:desktop` first)'
    : needsVirtualDisplay && !xvfbRun
      ? 'no display: set DISPLAY or install xvfb-run'
      : '';
if (reason) console.log(`[electron test] SKIPPED: ${reason}`);

/**
 * A display of its own from `xvfb-run -a`, held by a shell that prints the DISPLAY and XAUTHORITY that xvfb-run
 * gave it (Xvfb refuses clients without that cookie); `close()` ends that process group.
 */
async function startVirtualDisplay(xvfb: string): Promise<{ env: { DISPLAY: string; XAUTHORITY: string }; close(): void }> {
  const child: ChildProcess = spawn(
    xvfb,
    ['-a', '-s', '-screen 0 1280x1024x24', 'sh', '-c', 'echo "$DISPLAY"; echo "$XAUTHORITY"; exec sleep 86400'],
    {
      detached: true, // its own process group: xvfb-run, Xvfb and the shell end together
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const close = () => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* already gone */
    }
  };
  try {
    const [DISPLAY, XAUTHORITY] = await new Promise<string[]>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const lines = out.split('\n');
        if (lines.length >= 3) resolve(lines.slice(0, 2).map((l) => l.trim()));
      });
      child.once('exit', (code) => reject(new Error(`xvfb-run exited (code ${code}) before it gave a display`)));
      setTimeout(() => reject(new Error('xvfb-run gave no display within 20 s')), 20_000).unref();
    });
    if (!DISPLAY || !XAUTHORITY) throw new Error(`xvfb-run gave no display (DISPLAY=${DISPLAY}, XAUTHORITY=${XAUTHORITY})`);
    return { env: { DISPLAY, XAUTHORITY }, close };
  } catch (err) {
    close();
    throw err;
  }
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/** The health answer on `origin`, or undefined when nothing answers there. */
async function health(origin: string): Promise<{ status: string; sandbox: boolean; portFallback?: unknown } | undefined> {
  try {
    const res = await fetch(`${origin}/api/`, { signal: AbortSignal.timeout(2_000) });
    return res.ok ? ((await res.json()) as { status: string; sandbox: boolean; portFallback?: unknown }) : undefined;
  } catch {
    return undefined;
  }
}

/** PIDs of the service's utility processes (main/index.ts forks it with serviceName "Switchboard service"). */
function servicePids(app: ElectronApplication): Promise<number[]> {
  return app.evaluate(({ app }) =>
    app
      .getAppMetrics()
      .filter((m) => m.type === 'Utility' && m.name === 'Switchboard service')
      .map((m) => m.pid),
  );
}

describe.skipIf(!!reason)(`desktop app (Electron)${reason ? ` — SKIPPED: ${reason}` : ''}`, { timeout: 120_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-desktop-'));
  let port = 0;
  let origin = '';
  let display: Awaited<ReturnType<typeof startVirtualDisplay>> | undefined;
  let app: ElectronApplication;
  let page: Page;
  let mainPid = 0;
  let firstServicePid = 0;

  beforeAll(async () => {
    // The settings file pins the API to a free port (not the default 7575: test runs and a desktop app may share a machine).
    port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ port }));
    if (xvfbRun) display = await startVirtualDisplay(xvfbRun);
    // Only this test's settings: no SWITCHBOARD_* of the caller's environment (a variable would win over the file).
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !k.startsWith('SWITCHBOARD_') && k !== 'ELECTRON_RUN_AS_NODE') env[k] = v;
    }
    const { _electron } = await import('playwright-core');
    app = await _electron.launch({
      executablePath: bin!,
      args: ['--no-sandbox', mainEntry],
      env: {
        ...env,
        ...display?.env,
        SWITCHBOARD_SANDBOX: '1',
        SWITCHBOARD_DATA_DIR: dataDir,
        SWITCHBOARD_LOG_LEVEL: 'warn',
      },
      timeout: 60_000,
    });
    page = await app.firstWindow();
    mainPid = await app.evaluate(() => process.pid);
  });

  afterAll(async () => {
    await app?.evaluate(({ app }) => app.quit()).catch(() => undefined);
    await app?.close().catch(() => undefined);
    display?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts: the service answers on the configured port from its utilityProcess, the window shows the console', async () => {
    await page.getByText('Connections').first().waitFor({ timeout: 60_000 });
    expect(new URL(page.url()).origin).toBe(origin);
    await page.getByTestId('sandbox-badge').first().waitFor();

    const answer = await health(origin);
    expect(answer).toMatchObject({ status: 'ok', sandbox: true });
    expect(answer?.portFallback).toBeUndefined(); // the pinned port itself, no fallback

    const pids = await servicePids(app);
    expect(pids).toHaveLength(1);
    firstServicePid = pids[0]!;
    expect(firstServicePid).not.toBe(mainPid);
    expect(firstServicePid).not.toBe(process.pid);

    // A locked-down renderer: no Node, the one bridge object.
    expect(await page.evaluate(() => typeof (globalThis as { require?: unknown }).require)).toBe('undefined');
    expect(await page.evaluate(() => typeof (globalThis as { switchboardDesktop?: unknown }).switchboardDesktop)).toBe('object');
  });

  it('survives a killed service process: restarted on the same port, with the notice in the window', async () => {
    expect(firstServicePid).toBeGreaterThan(0);
    // What the window hears through the preload bridge; kept in the page, so it also shows the page is not reloaded.
    await page.evaluate(() => {
      const w = globalThis as unknown as {
        notices: unknown[];
        switchboardDesktop: { onServiceNotice(l: (n: unknown) => void): () => void };
      };
      w.notices = [];
      w.switchboardDesktop.onServiceNotice((n) => w.notices.push(n));
    });

    process.kill(firstServicePid, 'SIGKILL');
    // Nothing answers until the supervisor's first restart (after 1 s): the API was in that process.
    await waitFor('the API to stop answering', async () => ((await health(origin)) ? undefined : true), {
      timeoutMs: 900,
      intervalMs: 50,
    });
    await page.getByText('The service stopped').first().waitFor({ timeout: 15_000 });
    await page.getByText('The service is back').first().waitFor({ timeout: 60_000 });

    expect(await health(origin)).toMatchObject({ status: 'ok', sandbox: true });
    const pids = await servicePids(app);
    expect(pids).toHaveLength(1);
    expect(pids[0]).not.toBe(firstServicePid);
    expect(pids[0]).not.toBe(mainPid);
    expect(await app.evaluate(() => process.pid)).toBe(mainPid); // main lived through it

    const notices = await page.evaluate(() => (globalThis as unknown as { notices: unknown[] }).notices);
    expect(notices).toHaveLength(2);
    expect(notices[0]).toMatchObject({ kind: 'crashed' });
    expect(notices[1]).toEqual({ kind: 'restarted', apiUrl: `${origin}/api` });
    expect(new URL(page.url()).origin).toBe(origin);
    await page.getByText('Connections').first().waitFor(); // the console is still there
  });

  it('hides the window on close instead of quitting (sessions stay online)', async () => {
    const afterClose = await app.evaluate(async ({ BrowserWindow }) => {
      const w = BrowserWindow.getAllWindows()[0]!;
      w.close();
      await new Promise((r) => setTimeout(r, 300));
      return { exists: !w.isDestroyed(), visible: !w.isDestroyed() && w.isVisible() };
    });
    expect(afterClose).toEqual({ exists: true, visible: false });
    expect(await health(origin)).toMatchObject({ status: 'ok' });
  });
});
