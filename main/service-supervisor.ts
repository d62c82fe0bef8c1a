/**
 * Keeps the service's process (main/service-host.ts) running for the desktop shell: starts it, waits for its
 * `ready` message, restarts it after an unexpected exit on the same API port (the window's origin stays valid),
 * with a growing delay (1 s, 2 s, 5 s, 10 s, then 30 s between attempts), and stops it cleanly on quit (a `stop`
 * message, then a kill after `stopTimeoutMs`). `restart()` — also what a `restart-request` from the service
 * (`POST /api/settings/restart`) does — stops it cleanly and starts it afresh so saved settings apply, on the
 * newly configured port. It does not import Electron: `fork` is Electron's `utilityProcess.fork` in the app and
 * `child_process.fork` in tests, behind the small `HostProcess` shape.
 *
 * Notices (`onNotice`) tell the window what happened: `crashed` (with the exit code) as soon as the process is
 * gone, `restarted` when the new one answers (with its API URL, which a settings restart may have changed),
 * `failed` when a start fails (the supervisor keeps retrying).
 */
import { PINNED_PORT_VARIABLE, type HostToMain, type MainToHost } from './host-protocol.ts';

/** What the supervisor needs of a started service process. */
export interface HostProcess {
  postMessage(message: MainToHost): void;
  onMessage(listener: (message: HostToMain) => void): void;
  onExit(listener: (code: number | null) => void): void;
  kill(): void;
}

/** Starts the host with these extra environment variables (the fixed port after the first start). */
export type ForkHost = (env: Record<string, string>) => HostProcess;

export type SupervisorNotice =
  | { kind: 'crashed'; code: number | null }
  | { kind: 'restarted'; apiUrl: string }
  | { kind: 'failed'; message: string };

export interface SupervisorOptions {
  fork: ForkHost;
  onNotice?: (notice: SupervisorNotice) => void;
  /** Delays between restart attempts, in ms (the last one repeats). */
  restartDelaysMs?: readonly number[];
  /** How long a clean stop may take before the process is killed, in ms (default 15 000). */
  stopTimeoutMs?: number;
}

const DEFAULT_RESTART_DELAYS_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

export class ServiceSupervisor {
  #opts: Required<Omit<SupervisorOptions, 'onNotice'>> & Pick<SupervisorOptions, 'onNotice'>;
  #child: HostProcess | undefined;
  #apiUrl: string | undefined;
  #stopped = false;
  #attempt = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #nextRequestId = 1;
  #pending = new Map<number, { resolve: (token: string) => void; reject: (err: Error) => void }>();
  /** Processes stopped on purpose (a restart): their exit is not a crash. */
  #expectedExits = new WeakSet<HostProcess>();
  #restarting: Promise<string> | undefined;

  constructor(opts: SupervisorOptions) {
    this.#opts = {
      restartDelaysMs: DEFAULT_RESTART_DELAYS_MS,
      stopTimeoutMs: 15_000,
      ...opts,
    };
  }

  /** Base URL of the API once started (`http://127.0.0.1:PORT/api`); the same after every restart. */
  get apiUrl(): string | undefined {
    return this.#apiUrl;
  }

  /** Starts the service process and resolves with the API URL. @throws Error with the host's message */
  async start(): Promise<string> {
    return this.#launch(false);
  }

  /** Asks the running service for a new API token of the local user `operator`. */
  issueOperatorToken(): Promise<string> {
    const child = this.#child;
    if (!child) return Promise.reject(new Error('the service is not running'));
    const requestId = this.#nextRequestId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(requestId, { resolve, reject });
      child.postMessage({ type: 'issue-operator-token', requestId });
    });
  }

  /**
   * Stops the service process cleanly and starts it afresh (not pinned to the old port), so saved settings apply;
   * resolves with the new API URL and sends the `restarted` notice. A second call while one runs joins it.
   * @throws Error when the new process cannot start (the `failed` notice; the supervisor keeps retrying)
   */
  restart(): Promise<string> {
    if (this.#stopped) return Promise.reject(new Error('the supervisor is stopped'));
    this.#restarting ??= (async () => {
      clearTimeout(this.#restartTimer);
      await this.#stopChild();
      this.#apiUrl = undefined; // the saved port, not the old one
      try {
        const apiUrl = await this.#launch(true);
        this.#opts.onNotice?.({ kind: 'restarted', apiUrl });
        return apiUrl;
      } catch (err) {
        this.#opts.onNotice?.({ kind: 'failed', message: err instanceof Error ? err.message : String(err) });
        throw err;
      }
    })().finally(() => {
      this.#restarting = undefined;
    });
    return this.#restarting;
  }

  /** Stops the service process: a clean shutdown, or a kill after `stopTimeoutMs`. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#restartTimer);
    await this.#stopChild();
  }

  async #stopChild(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#expectedExits.add(child);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        child.kill();
        resolve();
      }, this.#opts.stopTimeoutMs);
      child.onExit(() => {
        clearTimeout(timer);
        resolve();
      });
      child.postMessage({ type: 'stop' });
    });
    this.#child = undefined;
  }

  #launch(isRestart: boolean): Promise<string> {
    const port = this.#apiUrl ? new URL(this.#apiUrl).port : undefined;
    const child = this.#opts.fork(port ? { [PINNED_PORT_VARIABLE]: port } : {});
    this.#child = child;
    return new Promise<string>((resolve, reject) => {
      let ready = false;
      child.onMessage((message) => {
        if (message.type === 'ready') {
          ready = true;
          this.#attempt = 0;
          this.#apiUrl = message.apiUrl;
          resolve(message.apiUrl);
        } else if (message.type === 'fatal') {
          reject(new Error(message.message));
        } else if (message.type === 'restart-request') {
          void this.restart().catch(() => undefined); // reported through the `failed` notice
        } else if (message.type === 'token') {
          const waiter = this.#pending.get(message.requestId);
          this.#pending.delete(message.requestId);
          if (message.token) waiter?.resolve(message.token);
          else waiter?.reject(new Error(message.error ?? 'no token'));
        }
      });
      child.onExit((code) => {
        if (this.#child === child) this.#child = undefined;
        for (const waiter of this.#pending.values()) waiter.reject(new Error('the service process exited'));
        this.#pending.clear();
        if (!ready) reject(new Error(`the service process exited with code ${code} before it was ready`));
        if (this.#stopped || this.#expectedExits.has(child)) return;
        if (ready) {
          this.#opts.onNotice?.({ kind: 'crashed', code });
          this.#scheduleRestart();
        } else if (isRestart) this.#scheduleRestart(); // a restart that failed: try again later
      });
    });
  }

  #scheduleRestart(): void {
    const delays = this.#opts.restartDelaysMs;
    const delay = delays[Math.min(this.#attempt, delays.length - 1)] ?? 1_000;
    this.#attempt++;
    this.#restartTimer = setTimeout(() => {
      if (this.#stopped) return;
      this.#launch(true).then(
        (apiUrl) => this.#opts.onNotice?.({ kind: 'restarted', apiUrl }),
        (err: unknown) =>
          this.#opts.onNotice?.({ kind: 'failed', message: err instanceof Error ? err.message : String(err) }),
      );
    }, delay);
  }
}
