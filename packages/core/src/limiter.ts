import { type Algorithm, bindName } from './algorithm.js';
import { factoryName } from './algorithm-factories.js';
import { factoryList } from './algorithm-kinds.js';
import { type BlockOptions, type BlockPolicy, resolveBlock } from './block.js';
import { combine, type Decision, decide, shadowed } from './decision.js';
import type { Duration } from './duration.js';
import { describeValue, ErrorCode, SluiceError, storeFailure } from './errors.js';
import { MemoryStore } from './memory-store.js';
import type { LimitCall, MaybePromise, Store } from './store.js';
import { assertCost, assertKey, assertKnownOptions, assertTime } from './validate.js';

/** One named limit of a layered limiter. */
export interface LimitDefinition {
  /** Shown in `decision.policy` and in the `RateLimit` headers. @default the algorithm's kind */
  name?: string;
  /** The algorithm and its parameters, e.g. `tokenBucket({ capacity: 10, refillInterval: '1s' })`. */
  algorithm: Algorithm;
  /**
   * `false`: shadow mode. The limit is evaluated and its state kept as if it were enforced, and
   * its decision is reported (`decision.limits`, marked `shadow: true`; hooks, metrics), but it
   * never refuses a request nor vetoes the other limits. The way to roll a new limit out safely.
   * @default true
   */
  enforce?: boolean;
  /**
   * After this limit refuses a key by itself, refuse the key for a while (`reason: 'blocked'`),
   * whatever the algorithm would say: ms, `'10m'`, or `{ duration, factor, max, decay }` for
   * blocks that grow for repeat offenders (see `BlockOptions`). Requests refused during a block
   * are not counted and do not extend it.
   * @default no block
   * @example block: { duration: '1m', factor: 2, max: '1h' } // 1, 2, 4… min while the abuse goes on
   */
  block?: Duration | BlockOptions;
}

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

/** A limit as the limiter holds it: the name resolved, and bound into the algorithm. */
export interface ResolvedLimit {
  readonly name: string;
  /**
   * The limit's algorithm with its name bound into the fingerprint (`bindName`): what the store
   * sees, so pass this one to `store.keyFor` or `store.inspect`.
   */
  readonly algorithm: Algorithm;
  /** `false` for a limit in shadow mode (see `LimitDefinition.enforce`). */
  readonly enforce: boolean;
  /** The limit's block, resolved (ms); `undefined` when it has none. */
  readonly block: BlockPolicy | undefined;
}

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

  constructor(options: LimiterOptions) {
    assertKnownOptions('Limiter', options, KNOWN);
    if ((options.algorithm === undefined) === (options.limits === undefined)) {
      throw new SluiceError(ErrorCode.MISSING_OPTION, 'Limiter needs exactly one of algorithm or limits', {
        option: options.algorithm === undefined ? 'algorithm' : 'limits',
      });
    }
    this.limits = resolveLimits(options.limits ?? [{ algorithm: options.algorithm! }]);
    this.single = this.limits.length === 1;
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
      const limit = this.limits[0]!;
      let decision: MaybePromise<Decision>;
      try {
        decision = direct.consumeOne!(limit.algorithm, keys, cost, limit.name, options?.now);
      } catch (error) {
        return Promise.reject(storeFailure(error));
      }
      return decision instanceof Promise ? decision.then(single, rejected) : combine([decision]);
    }
    const calls = this.calls(keys, options);
    if (calls.length === 0) return UNLIMITED;
    let result: MaybePromise<Decision[]>;
    try {
      result = this.store.consume(calls, options?.now);
    } catch (error) {
      return Promise.reject(storeFailure(error));
    }
    return this.settle(result, calls);
  }

  /** Reports every limit without consuming anything. Smyte's `get`. */
  peek(keys: LimitKeys, options?: CheckOptions): MaybePromise<Decision> {
    const calls = this.calls(keys, options);
    if (calls.length === 0) return UNLIMITED;
    let result: MaybePromise<Decision[]>;
    try {
      result = this.store.peek(calls, options?.now);
    } catch (error) {
      return Promise.reject(storeFailure(error));
    }
    return this.settle(result, calls);
  }

  /** The combined decision of the store's per-limit decisions (shadow limits marked). */
  private settle(result: MaybePromise<Decision[]>, calls: readonly LimitCall[]): MaybePromise<Decision> {
    if (!this.shadows) return settle(result);
    const mark = (decisions: Decision[]) =>
      decisions.map((decision, i) => (calls[i]!.shadow === true ? shadowed(decision) : decision));
    return settle(Array.isArray(result) ? mark(result) : (result as Promise<Decision[]>).then(mark));
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

/** The store call of one limit; `shadow` and `block` only when the limit has them. */
export function limitCall(limit: ResolvedLimit, key: string, cost: number): LimitCall {
  if (limit.enforce && limit.block === undefined)
    return { algorithm: limit.algorithm, key, cost, policy: limit.name };
  const call: { -readonly [K in keyof LimitCall]: LimitCall[K] } = {
    algorithm: limit.algorithm,
    key,
    cost,
    policy: limit.name,
  };
  if (!limit.enforce) call.shadow = true;
  if (limit.block !== undefined) call.block = limit.block;
  return call;
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

const single = (decision: Decision): Decision => combine([decision]);
const rejected = (error: unknown): Promise<never> => Promise.reject(storeFailure(error));

function settle(result: MaybePromise<Decision[]>): MaybePromise<Decision> {
  if (Array.isArray(result)) return combine(result);
  return (result as Promise<Decision[]>).then(combine, rejected);
}

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

function resolveLimits(limits: readonly LimitDefinition[]): ResolvedLimit[] {
  if (!Array.isArray(limits) || limits.length === 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `limits must be a non-empty array; got ${describeValue(limits)}`,
      {
        option: 'limits',
        value: limits,
      },
    );
  }
  const names = new Set<string>();
  return limits.map((limit, i) => {
    assertKnownOptions(`limits[${i}]`, limit, [
      'name',
      'algorithm',
      'enforce',
      'block',
    ] satisfies (keyof LimitDefinition)[]);
    assertAlgorithm(`limits[${i}].algorithm`, limit.algorithm);
    const name = limitName(i, limit.name ?? limit.algorithm.kind, names);
    const enforce = enforceOption(i, limit.enforce);
    assertShadowable(i, enforce, limit.algorithm);
    const block = limit.block === undefined ? undefined : resolveBlock(`limits[${i}].block`, limit.block);
    return { name, algorithm: bindName(limit.algorithm, name), enforce, block };
  });
}

/**
 * A limit's name: a non-empty string no other limit of the list has (added to `names`). The name
 * is part of the stored key (in the fingerprint, outside a Redis Cluster hash tag): limits with
 * equal parameters but different names never share state, the same name and parameters are one
 * limit wherever they appear.
 */
export function limitName(i: number, name: unknown, names: Set<string>): string {
  if (typeof name !== 'string' || name === '') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `limits[${i}].name must be a non-empty string; got ${describeValue(name)}`,
      { option: `limits[${i}].name`, value: name },
    );
  }
  if (names.has(name)) {
    throw new SluiceError(
      ErrorCode.DUPLICATE_LIMIT,
      `limits[${i}].name ${JSON.stringify(name)} is used twice; give each limit its own name`,
      { option: `limits[${i}].name`, value: name },
    );
  }
  names.add(name);
  return name;
}

/** A limit's `enforce` (default true; `false` is shadow mode). */
export function enforceOption(i: number, value: unknown): boolean {
  const enforce = value ?? true;
  if (typeof enforce !== 'boolean') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `limits[${i}].enforce must be true or false; got ${describeValue(enforce)}`,
      { option: `limits[${i}].enforce`, value: enforce },
    );
  }
  return enforce;
}

/** A limit in shadow mode never holds a request, so a queue would not describe the traffic. */
export function assertShadowable(i: number, enforce: boolean, algorithm: Algorithm): void {
  if (!enforce && algorithm.kind === 'leaky-bucket-queue') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `limits[${i}] uses leakyBucketQueue(), whose admission holds the request; a limit in shadow mode (enforce: false) never holds one, so its queue would not describe the traffic`,
      { option: `limits[${i}].enforce`, value: enforce },
    );
  }
}

/**
 * Refuses a built-in factory given uncalled (`algorithm: fixedWindow`), with a message that says
 * to call it. Plain JavaScript lets it through, and an HTTP limit would take it for a plan per
 * request, called with each request as its options.
 */
export function assertNotFactory(option: string, value: unknown): void {
  const factory = factoryName(value);
  if (factory === undefined) return;
  throw new SluiceError(
    ErrorCode.UNKNOWN_ALGORITHM,
    `${option} is the factory ${factory} itself, not an algorithm: call it with its options, ${factory}({ … })`,
    { option, value },
  );
}

/** Accepts the algorithms the factories make (`tokenBucket(...)`, `gcra(...)`, …). */
export function assertAlgorithm(option: string, value: unknown): asserts value is Algorithm {
  if (value === undefined) {
    throw new SluiceError(
      ErrorCode.MISSING_OPTION,
      `${option} is required: an algorithm made by ${factoryList()}`,
      { option },
    );
  }
  assertNotFactory(option, value);
  const candidate = value as Partial<Algorithm> | undefined;
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.kind !== 'string' ||
    typeof candidate.consume !== 'function' ||
    typeof candidate.fingerprint !== 'string'
  ) {
    throw new SluiceError(
      ErrorCode.UNKNOWN_ALGORITHM,
      `${option} must be an algorithm made by ${factoryList()}; got ${describeValue(value)}`,
      { option, value },
    );
  }
}
