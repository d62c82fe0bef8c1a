/**
 * Units written once for both storage engines (docs/architecture.md § Storage engines): a *steps unit* is a generator
 * function that makes each repository call as `yield* t.<repo>.<method>(…)`. The Store that runs it decides how a
 * step is taken:
 * - on SQLite every call returns at once, so the unit runs to its end inside the Store's call, synchronously, as one
 *   savepoint of the group commit — no Promise per statement (each costs an async-hooks callback in a session thread,
 *   where Baileys' key store keeps an AsyncLocalStorage), and the unit cannot interleave with anything;
 * - on PostgreSQL a step yields the statement's Promise, and the Store resumes the unit with its result (or throws
 *   its error into it) once it settles.
 * A unit must make no other asynchronous call: there is nothing to `await` in a generator.
 */
import type { Repos } from './store-api.ts';

/** What a step yields to the Store running the unit: the Promise of one repository call (PostgreSQL only). */
export type Step = Promise<unknown>;

/** A repository call as a step: `yield*` it for its result. */
export type StepCall<R> = Generator<Step, R, unknown>;

/** An `Async<>` repository (store-api.ts) with each method a step: `(...args) => Promise<R>` becomes `(...args) => StepCall<R>`. */
export type Stepwise<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => Promise<unknown> ? K : never]: T[K] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => StepCall<R>
    : never;
};

/** The repositories a steps unit gets (Repos, store-api.ts, method for method). */
export type StepRepos = { [K in keyof Repos]: Stepwise<Repos[K]> };

/** A transaction's work or group-commit unit written as steps (see the module's comment). */
export type Steps<T> = (t: StepRepos) => Generator<Step, T, unknown>;

type Method = (...args: unknown[]) => unknown;

function wrapEach(repos: Record<string, unknown>, wrap: (fn: Method, self: unknown) => Method): StepRepos {
  const out: Record<string, Record<string, Method>> = {};
  for (const [name, repo] of Object.entries(repos)) {
    const methods: Record<string, Method> = {};
    for (const [key, value] of Object.entries(repo as Record<string, unknown>)) {
      // Generator methods (messages.iterate) and nested objects are for reads outside units: not steps.
      if (typeof value === 'function' && value.constructor.name !== 'GeneratorFunction') methods[key] = wrap(value as Method, repo);
    }
    out[name] = methods;
  }
  return out as unknown as StepRepos;
}

/**
 * Steps over synchronous repositories (the SQLite store's, `names` of them): each step calls the method and returns
 * its value without yielding. Build it once per store; it holds no transaction state.
 *
 * A step here allocates nothing: it returns one shared iterator that is already done, holding the call's value,
 * which the `yield*` reads at once — before any other step can run, since nothing in between yields. (A generator
 * per call, and an arguments array, cost the engine's hot path a few per cent: docs/performance.md.)
 */
export function stepsOverSync(sync: Record<string, unknown>, names: readonly string[]): StepRepos {
  const repos: Record<string, unknown> = {};
  for (const name of names) repos[name] = sync[name];
  const result: IteratorReturnResult<unknown> = { done: true, value: undefined };
  const done = {
    next: () => result,
    [Symbol.iterator]() {
      return this;
    },
  };
  return wrapEach(repos, (fn, self) =>
    function (this: unknown) {
      // eslint-disable-next-line prefer-rest-params -- passed straight on: V8 does not materialise it
      result.value = fn.apply(self, arguments as unknown as unknown[]);
      return done;
    },
  );
}

/** Steps over asynchronous repositories (a transaction's Repos): each step yields the call's Promise. */
export function stepsOver(repos: Repos): StepRepos {
  return wrapEach(repos as unknown as Record<string, unknown>, (fn, self) =>
    function* (...args: unknown[]): Generator<Step, unknown, unknown> {
      return yield fn.apply(self, args) as Step;
    },
  );
}

/**
 * Runs a unit over synchronous steps to its end, now.
 * @throws whatever the unit throws; Error when it yielded (an asynchronous call inside a unit over synchronous steps)
 */
export function runStepsNow<T>(unit: Generator<Step, T, unknown>): T {
  const first = unit.next();
  if (first.done) return first.value;
  unit.return(undefined as T);
  throw new Error('a steps unit yielded on a synchronous store (only yield* repository calls)');
}

/** Runs a unit over asynchronous steps: each yielded Promise is awaited and its result (or error) handed back in. */
export async function runSteps<T>(unit: Generator<Step, T, unknown>): Promise<T> {
  let step = unit.next();
  while (!step.done) {
    let value: unknown;
    try {
      value = await step.value;
    } catch (err) {
      step = unit.throw(err);
      continue;
    }
    step = unit.next(value);
  }
  return step.value;
}
