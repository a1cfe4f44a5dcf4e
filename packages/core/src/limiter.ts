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
    this.direct =
      this.single &&
      this.limits[0]!.enforce &&
      this.limits[0]!.block === undefined &&
      definesBoth(this.store, 'consume', 'consumeOne')
        ? this.store
        : undefined;
  }

  /** Consumes `cost` from every limit, or from none. Smyte's `reduce`. */
  check(keys: LimitKeys, options?: CheckOptions): MaybePromise<Decision> {
    const direct = this.direct;
    if (direct !== undefined && typeof keys === 'string' && direct.consume === this.directConsume) {
      const cost = this.cost(options);
      const limit = this.first;
      let decision: MaybePromise<Decision>;
      try {
        decision = direct.consumeOne!(limit.algorithm, keys, cost, limit.name, options?.now);
      } catch (error) {
        return Promise.reject(storeFailure(error));
      }
      return decision instanceof Promise ? decision.then(combineOne, rejected) : combineOne(decision);
    }
    return this.ask('consume', keys, options);
  }

  /** Reports every limit without consuming anything. Smyte's `get`. */
  peek(keys: LimitKeys, options?: CheckOptions): MaybePromise<Decision> {
    return this.ask('peek', keys, options);
  }

  /** One batch call to the store for every limit with a key, its answer combined. */
  private ask(
    method: 'consume' | 'peek',
    keys: LimitKeys,
    options: CheckOptions | undefined,
  ): MaybePromise<Decision> {
    const calls = this.calls(keys, options);
    if (calls.length === 0) return UNLIMITED;
    let result: MaybePromise<Decision[]>;
    try {
      result = this.store[method](calls, options?.now);
    } catch (error) {
      return Promise.reject(storeFailure(error));
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
