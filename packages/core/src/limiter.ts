import type { Algorithm } from './algorithm.js';
import { combine, combineOne, type Decision, decide, shadowed } from './decision.js';
import { describeValue, ErrorCode, SluiceError, storeFailure } from './errors.js';
import { type LimitDefinition, limitCall, type ResolvedLimit, resolveLimits } from './limit-definitions.js';
import { MemoryStore } from './memory-store.js';
import type { LimitCall, MaybePromise, Store } from './store.js';
import { assertCost, assertKey, assertKnownOptions, assertTime } from './validate.js';

export interface LimiterOptions {
  /** One algorithm (a single limit), or use `limits` for layered limits. */
  algorithm?: Algorithm;
  /** Several limits checked together, all-or-nothing: every limit admits and consumes, or none does. */
  limits?: readonly LimitDefinition[];
  /** Where state lives. @default a new `MemoryStore()` */
  store?: Store;
}

export interface CheckOptions {
  /** Units this request takes, an integer ≥ 1. @default 1 */
  cost?: number;
  /** The request's time, ms since the epoch (client timestamps, replays). @default the store's clock */
  now?: number;
}

/**
 * One key for every limit, or one key per limit in the order of `limits`. A per-limit key that is
 * `undefined` skips that limit (an anonymous user has no token to limit).
 */
export type LimitKeys = string | readonly (string | undefined)[];

const KNOWN = ['algorithm', 'limits', 'store'] as const satisfies readonly (keyof LimiterOptions)[];
const CHECK_KNOWN = ['cost', 'now'] as const satisfies readonly (keyof CheckOptions)[];

/** The store, checked for the methods every call uses: a wrong value would fail every call. */
export function storeOption(store: Store | undefined): Store {
  if (store === undefined) return new MemoryStore();
  const methods = ['consume', 'peek', 'reset', 'shutdown'] as const;
  const given = store as Partial<Record<(typeof methods)[number], unknown>> | null;
  if (
    given === null ||
    typeof given !== 'object' ||
    methods.some((name) => typeof given[name] !== 'function')
  ) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `Limiter: store must be a Store (consume, peek, reset and shutdown methods, e.g. new MemoryStore() or new RedisStore({ client })); got ${describeValue(store)}`,
      { option: 'store', value: store },
    );
  }
  return store;
}

/** The limiter's consumption as its store answered it (`limiterAnswer`); set by `Limiter`'s static block. */
let answerOf: (
  limiter: Limiter,
  keys: LimitKeys,
  options: CheckOptions | undefined,
) => MaybePromise<Decision>;

/**
 * `limiter.check`, answered as the store answered: a decision when it answered synchronously, else
 * a promise. For the HTTP lifecycle inside this package (not exported from the package): a request
 * on the memory store then takes no microtask.
 */
export function limiterAnswer(
  limiter: Limiter,
  keys: LimitKeys,
  options?: CheckOptions,
): MaybePromise<Decision> {
  return answerOf(limiter, keys, options);
}

/** A store's error as `ERR_SLUICE_STORE_FAILURE`: thrown for a synchronous call, else rejected. */
function failed(error: unknown, sync: boolean): Promise<never> {
  if (sync) throw storeFailure(error);
  return Promise.reject(storeFailure(error));
}

/** `checkSync` or `peekSync` on a store without `Store.synchronous`: refused before the store is called. */
function notSynchronous(method: string): SluiceError {
  return new SluiceError(
    ErrorCode.UNSUPPORTED,
    `Limiter.${method} needs a store that answers synchronously (Store.synchronous, e.g. MemoryStore); this store answers with promises: await check() or peek() instead`,
    { option: 'store' },
  );
}

/**
 * A store that says it is synchronous and answered a synchronous call with a promise broke its
 * contract: `ERR_SLUICE_STORE_FAILURE`, to throw. The promise's own outcome is observed, so that
 * its rejection is never unhandled.
 */
function brokenPromise(answer: Promise<unknown>, method: string): SluiceError {
  answer.catch(() => {});
  return storeFailure(
    new Error(
      `Limiter.${method}: the store says it is synchronous (Store.synchronous) but answered with a promise`,
    ),
  );
}

/** A store's answer without `allowed`: no decision, a store failure (`ERR_SLUICE_STORE_FAILURE`). */
function noDecision(): SluiceError {
  return storeFailure(new Error('the store answered no decision (no allowed)'));
}

/** A synchronous call's answer: a decision, or the store's broken contract thrown. */
function syncDecision(answer: MaybePromise<Decision>, method: string): Decision {
  if (answer instanceof Promise) throw brokenPromise(answer, method);
  if (answer.allowed === undefined) throw noDecision();
  return answer;
}

/**
 * A decision as a promise already fulfilled with it; a promise as it is. The decision's `allowed` is read first (a
 * store's answer without it is no decision): V8 then knows the decision's shape at the `resolve`,
 * a shape without `then`, and fulfils the promise without looking `then` up along its prototype
 * chain. Without that read, an awaited hot check took 2,163 instructions (one measurement; with
 * it, 1,628–1,848).
 */
function asPromise(answer: MaybePromise<Decision>): Promise<Decision> {
  if (answer instanceof Promise) return answer;
  if (answer.allowed === undefined) return Promise.reject(noDecision());
  return Promise.resolve(answer);
}

/** The decision when every limit was skipped: allowed, nothing counted, no headers. */
const UNLIMITED: Decision = decide(true, 0, 0, 0, 0, 0, '', undefined);

/**
 * Checks requests against one or several limits on a store.
 * @example
 * const limiter = new Limiter({ limits: [
 *   { name: 'burst', algorithm: tokenBucket({ capacity: 10, refillInterval: '1s' }) },
 *   { name: 'hourly', algorithm: slidingWindowLog({ limit: 1000, window: '1h' }) },
 * ] });
 * const decision = await limiter.check('user:42');
 */
export class Limiter {
  readonly limits: readonly ResolvedLimit[];
  readonly store: Store;
  private readonly single: boolean;
  /** Whether any limit is in shadow mode: decisions are then marked (`Decision.shadow`). */
  private readonly shadows: boolean;
  /**
   * The store, when a single enforced limit without a block sits on a store with `consumeOne`:
   * `check` of a string key then takes its direct path (no batch arrays).
   */
  private readonly direct: Store | undefined;
  /** The store's `consume` when the limiter was made: a replaced one (a test's spy) sees every call. */
  private readonly directConsume: Store['consume'];
  /** `limits[0]`, read by the direct path without the array. */
  private readonly first: ResolvedLimit;
  /** The store's `synchronous` when the limiter was made: `checkSync` and `peekSync` need it. */
  private readonly synchronous: boolean;

  constructor(options: LimiterOptions) {
    assertKnownOptions('Limiter', options, KNOWN);
    if ((options.algorithm === undefined) === (options.limits === undefined)) {
      throw new SluiceError(ErrorCode.MISSING_OPTION, 'Limiter needs exactly one of algorithm or limits', {
        option: options.algorithm === undefined ? 'algorithm' : 'limits',
      });
    }
    this.limits = resolveLimits(options.limits ?? [{ algorithm: options.algorithm! }]);
    this.single = this.limits.length === 1;
    this.first = this.limits[0]!;
    this.shadows = this.limits.some((limit) => !limit.enforce);
    this.store = storeOption(options.store);
    this.directConsume = this.store.consume;
    this.synchronous = this.store.synchronous === true;
    this.direct =
      this.single &&
      this.limits[0]!.enforce &&
      this.limits[0]!.block === undefined &&
      definesBoth(this.store, 'consume', 'consumeOne')
        ? this.store
        : undefined;
  }

  /**
   * Consumes `cost` from every limit, or from none (Smyte's `reduce`). Always a promise: on a store
   * that answers at once (the memory store) it is already fulfilled when returned, and `await`
   * takes it as is. A plain decision handed to `await` costs V8 a wrapper promise and a generic
   * lookup of `then` on it: an awaited hot token bucket check took 1,950–2,124 instructions
   * answered as a plain decision, 1,628–1,848 as this promise (issue 36; callgrind, Node 20, the
   * difference of 2,000,000 and 1,000,000 checks; runs of one build differ by up to 9%).
   * `checkSync` answers without a promise. Bad input (a key, `cost`, `now`) throws here, before
   * any store call.
   */
  check(keys: LimitKeys, options?: CheckOptions): Promise<Decision> {
    return asPromise(this.answer(keys, options));
  }

  /**
   * `check` without a promise, on a store that answers synchronously (`Store.synchronous`: the
   * memory store). Any other store is refused with `ERR_SLUICE_UNSUPPORTED` before it is called:
   * nothing is consumed.
   */
  checkSync(keys: LimitKeys, options?: CheckOptions): Decision {
    const direct = this.direct;
    // The direct path of `answer`, written out, a store failure thrown: called through `answer`, a
    // hot check took 1,034–1,036 instructions, written out 822–842 (callgrind, young generation
    // fixed, two and three runs; the two forms side by side in one of them), against 819–874 for
    // the synchronous `check` before promises.
    if (direct !== undefined && typeof keys === 'string' && direct.consume === this.directConsume) {
      if (direct.synchronous !== true) throw notSynchronous('checkSync');
      const cost = this.cost(options);
      const limit = this.first;
      let decision: MaybePromise<Decision>;
      try {
        decision = direct.consumeOne!(limit.algorithm, keys, cost, limit.name, options?.now);
      } catch (error) {
        throw storeFailure(error);
      }
      if (decision instanceof Promise) throw brokenPromise(decision, 'checkSync');
      const combined = combineOne(decision);
      if (combined.allowed === undefined) throw noDecision();
      return combined;
    }
    if (!this.synchronous) throw notSynchronous('checkSync');
    return syncDecision(this.ask('consume', keys, options, true), 'checkSync');
  }

  /** Reports every limit without consuming anything (Smyte's `get`). Always a promise, as `check`. */
  peek(keys: LimitKeys, options?: CheckOptions): Promise<Decision> {
    return asPromise(this.ask('peek', keys, options));
  }

  /** `peek` without a promise, on a store that answers synchronously (as `checkSync`). */
  peekSync(keys: LimitKeys, options?: CheckOptions): Decision {
    if (!this.synchronous) throw notSynchronous('peekSync');
    return syncDecision(this.ask('peek', keys, options, true), 'peekSync');
  }

  /**
   * The consumption as the store answered it: a decision from a store that answered at once, a
   * promise from one that did I/O. The HTTP lifecycle takes it as is (`limiterAnswer`): a memory
   * store's request then never waits a microtask. A store that throws is a rejected promise of
   * `ERR_SLUICE_STORE_FAILURE`.
   */
  private answer(keys: LimitKeys, options: CheckOptions | undefined): MaybePromise<Decision> {
    const direct = this.direct;
    if (direct !== undefined && typeof keys === 'string' && direct.consume === this.directConsume) {
      const cost = this.cost(options);
      const limit = this.first;
      let decision: MaybePromise<Decision>;
      try {
        decision = direct.consumeOne!(limit.algorithm, keys, cost, limit.name, options?.now);
      } catch (error) {
        return rejected(error);
      }
      return decision instanceof Promise ? decision.then(combineOne, rejected) : combineOne(decision);
    }
    return this.ask('consume', keys, options);
  }

  static {
    answerOf = (limiter, keys, options) => limiter.answer(keys, options);
  }

  /** One batch call to the store for every limit with a key, its answer combined. */
  private ask(
    method: 'consume' | 'peek',
    keys: LimitKeys,
    options: CheckOptions | undefined,
    sync = false,
  ): MaybePromise<Decision> {
    const calls = this.calls(keys, options);
    if (calls.length === 0) return UNLIMITED;
    let result: MaybePromise<Decision[]>;
    try {
      result = this.store[method](calls, options?.now);
    } catch (error) {
      return failed(error, sync);
    }
    return this.combined(result, calls);
  }

  /** The combined decision of the store's per-limit decisions (shadow limits marked). */
  private combined(result: MaybePromise<Decision[]>, calls: readonly LimitCall[]): MaybePromise<Decision> {
    if (!this.shadows) {
      if (Array.isArray(result)) return combine(result);
      return (result as Promise<Decision[]>).then(combine, rejected);
    }
    if (Array.isArray(result)) return combineCalls(calls, result);
    return (result as Promise<Decision[]>).then((decisions) => combineCalls(calls, decisions), rejected);
  }

  /** Forgets the state of every limit for these keys. */
  reset(keys: LimitKeys): MaybePromise<void> {
    const calls = this.calls(keys, undefined);
    return this.store.reset(calls);
  }

  /** Validates the per-call options; returns the cost. */
  private cost(options: CheckOptions | undefined): number {
    let cost = 1;
    if (options !== undefined) {
      assertCheckOptions(options);
      if (options.cost !== undefined) {
        assertCost(options.cost);
        cost = options.cost;
      }
      if (options.now !== undefined) assertTime(options.now);
    }
    return cost;
  }

  private calls(keys: LimitKeys, options: CheckOptions | undefined): LimitCall[] {
    const cost = this.cost(options);
    if (typeof keys === 'string') {
      if (this.single) return [limitCall(this.limits[0]!, keys, cost)];
      return this.limits.map((limit) => limitCall(limit, keys, cost));
    }
    if (!Array.isArray(keys) || keys.length !== this.limits.length) {
      throw new SluiceError(
        ErrorCode.INVALID_KEY,
        `keys must be a string or an array with one key per limit (${this.limits.length}); got ${describeValue(keys)}`,
        { option: 'keys', value: keys },
      );
    }
    const calls: LimitCall[] = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (key === undefined) continue;
      assertKey(key);
      calls.push(limitCall(this.limits[i]!, key, cost));
    }
    return calls;
  }
}

/**
 * Whether the object nearest on `value`'s prototype chain that has `a` also has `b` as its own:
 * a subclass or an instance replacing `consume` alone keeps its `consume` on every call.
 */
function definesBoth(value: object, a: string, b: string): boolean {
  for (let o: object | null = value; o !== null; o = Object.getPrototypeOf(o)) {
    if (Object.hasOwn(o, a))
      return Object.hasOwn(o, b) && typeof (o as Record<string, unknown>)[b] === 'function';
  }
  return false;
}

/**
 * The combined decision of a store's answer to `calls`, the decisions of shadow limits marked
 * (`Decision.shadow`) so that they decide nothing: how the `Limiter` and an HTTP rate limit
 * whose plans are per request combine what the store answered.
 */
export function combineCalls(calls: readonly LimitCall[], decisions: readonly Decision[]): Decision {
  return combine(decisions.map((decision, i) => (calls[i]!.shadow === true ? shadowed(decision) : decision)));
}

const rejected = (error: unknown): Promise<never> => Promise.reject(storeFailure(error));

/** `assertKnownOptions` for the per-call options, without its `Object.keys` array on the hot path. */
function assertCheckOptions(options: CheckOptions): void {
  if (typeof options !== 'object' || options === null) {
    assertKnownOptions('check', options, CHECK_KNOWN);
    return;
  }
  for (const name in options) {
    if (name !== 'cost' && name !== 'now') assertKnownOptions('check', options, CHECK_KNOWN);
  }
}
