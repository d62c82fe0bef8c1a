/**
 * Typed calls across `postMessage` (docs/architecture.md § Threads and the write lock): an interface `R` lists the
 * calls, each a method whose parameters and result are structured-cloneable data; `RpcClient<R>` makes them and
 * `serveRpc` answers them from handlers that tsc checks against the same `R`. Method names are `keyof R` and
 * parameters `Parameters<R[K]>` on both ends, so a call that does not match the interface does not compile.
 *
 * Every call carries a deadline (an epoch-ms instant: the threads of one process share the clock). The client rejects
 * a call that has not been answered by then with the error its `timeoutError` builds (a late answer is ignored); the
 * server does not start a call whose deadline has passed.
 */

/** The names of `R`'s calls. */
export type RpcMethod<R> = keyof R & string;
/** The parameters of call `K` of `R`. */
export type RpcParams<R, K extends keyof R> = R[K] extends (...params: infer P) => unknown ? P : never;
/** The result of call `K` of `R` (a promise's value). */
export type RpcResult<R, K extends keyof R> = R[K] extends (...params: never[]) => infer T ? Awaited<T> : never;

/** One call as it crosses `postMessage`. */
export type RpcRequest<R> = {
  [K in RpcMethod<R>]: { id: number; method: K; params: RpcParams<R, K>; deadline: number };
}[RpcMethod<R>];

/** An error as it crosses `postMessage` (an Error's own fields are lost by structured clone in older Nodes). */
export interface SerializedError {
  statusCode?: number;
  message: string;
  name: string;
  code?: string;
}

/** The answer to call `id`: its result, or the error it threw. */
export type RpcReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** What a server implements for `R`: each call, answered now or later. */
export type RpcHandlers<R> = {
  [K in RpcMethod<R>]: (...params: RpcParams<R, K>) => RpcResult<R, K> | Promise<RpcResult<R, K>>;
};

/** The fields of an error that survive the trip (status code, code), for `RpcReply`. */
export function serializeError(err: unknown): SerializedError {
  const e = err as { statusCode?: unknown; message?: unknown; name?: unknown; code?: unknown } | null;
  return {
    message: typeof e?.message === 'string' ? e.message : String(err),
    name: typeof e?.name === 'string' ? e.name : 'Error',
    ...(typeof e?.statusCode === 'number' && { statusCode: e.statusCode }),
    ...(typeof e?.code === 'string' && { code: e.code }),
  };
}

export interface RpcClientOptions<R> {
  /** Sends one request to the other side. */
  post: (request: RpcRequest<R>) => void;
  /** How long a call may take when the caller gives no deadline, in ms. */
  defaultTimeoutMs: number;
  /** The error a call rejects with when its deadline passes unanswered. */
  timeoutError: (method: string, timeoutMs: number) => Error;
  /** Turns an answer's error back into an Error (keeping its status code, for instance). */
  errorOf: (error: SerializedError) => Error;
}

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** The calling end of `R`: `call` is checked against `R` by tsc. */
export class RpcClient<R> {
  readonly #o: RpcClientOptions<R>;
  readonly #pending = new Map<number, Pending>();
  #next = 1;

  constructor(opts: RpcClientOptions<R>) {
    this.#o = opts;
  }

  /**
   * Calls `method` on the other side. @param timeoutMs its deadline from now (default `defaultTimeoutMs`)
   * @throws (rejects) what the call threw there, `timeoutError` past the deadline, or what `failAll` is given
   */
  call<K extends RpcMethod<R>>(method: K, params: RpcParams<R, K>, timeoutMs = this.#o.defaultTimeoutMs): Promise<RpcResult<R, K>> {
    const id = this.#next++;
    return new Promise<RpcResult<R, K>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(this.#o.timeoutError(method, timeoutMs));
      }, timeoutMs);
      timer.unref();
      this.#pending.set(id, { method, resolve: resolve as (value: unknown) => void, reject, timer });
      this.#o.post({ id, method, params, deadline: Date.now() + timeoutMs } as RpcRequest<R>);
    });
  }

  /** Settles the call `reply` answers (an answer after the deadline, or to an unknown id, is dropped). */
  settle(reply: RpcReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    clearTimeout(pending.timer);
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(this.#o.errorOf(reply.error));
  }

  /** Rejects every call in flight with `err(method)` (the other side is gone). */
  failAll(err: (method: string) => Error): void {
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(err(pending.method));
    }
    this.#pending.clear();
  }
}

/** Runs `handlers[method](...params)`: the one place where a request's method and its parameters meet. */
function invoke<R, K extends RpcMethod<R>>(handlers: RpcHandlers<R>, method: K, params: RpcParams<R, K>): Promise<RpcResult<R, K>> {
  return Promise.resolve(handlers[method](...params));
}

/**
 * Answers one request from `handlers` (a call past its deadline is refused without running).
 * @returns the reply to post back; never throws
 */
export async function serveRpc<R>(handlers: RpcHandlers<R>, request: RpcRequest<R>): Promise<RpcReply> {
  const { id } = request;
  try {
    if (Date.now() > request.deadline) throw new Error(`call ${request.method} arrived after its deadline`);
    if (typeof handlers[request.method] !== 'function') throw new Error(`unknown call ${request.method}`);
    const value = await invoke(handlers, request.method, request.params);
    return { id, ok: true, value };
  } catch (err) {
    return { id, ok: false, error: serializeError(err) };
  }
}
