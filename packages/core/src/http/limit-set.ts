import { type Algorithm, bindName } from '../algorithm.js';
import { type BlockPolicy, resolveBlock } from '../block.js';
import type { Decision } from '../decision.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import {
  assertAlgorithm,
  assertNotFactory,
  assertShadowable,
  enforceOption,
  type LimitDefinition,
  limitCall,
  limitName,
} from '../limit-definitions.js';
import { combineCalls, Limiter, limiterAnswer, storeOption } from '../limiter.js';
import { all, andThen } from '../maybe.js';
import type { LimitCall, MaybePromise, Store } from '../store.js';
import { assertKnownOptions } from '../validate.js';
import { DEFAULT_LIMIT_NAME, defaultAlgorithm } from './default-limit.js';
import { byIp, type RequestAccess } from './keys.js';
import type { HttpLimit, HttpLimitOptions, LimitKey } from './options.js';
import { PlanCache, type PlanChanged, planCacheOptions } from './plan-cache.js';

const SF_STRING = /^[\x20-\x7e]+$/;

/** One limit of a middleware, compiled. */
export interface CompiledLimit<Req> {
  readonly name: string;
  readonly key: LimitKey<Req>;
  /** The bound algorithm of a fixed limit; `undefined` for a limit whose plan is per request. */
  readonly algorithm: Algorithm | undefined;
  /** The plans of a per-request limit. */
  readonly plans: PlanCache<Req> | undefined;
  /** `false` for a limit in shadow mode (`enforce: false`). */
  readonly enforce: boolean;
  /** The limit's block after a refusal, resolved; `undefined` when it has none. */
  readonly block: BlockPolicy | undefined;
}

/** A request's key and algorithm per limit (`undefined` where a limit was skipped: no key). */
export interface RequestLimits {
  readonly keys: readonly (string | undefined)[];
  readonly algorithms: readonly (Algorithm | undefined)[];
}

/**
 * What one request was checked against (its `RequestLimits`), and the units it reserved (0 when
 * refused). Kept per request, for its headers (the plans it was checked against) and to give its
 * units back (`count`, a client gone) or settle them.
 */
export interface Reservation extends RequestLimits {
  /** Units reserved; a refused request reserves none (and has nothing to settle). */
  cost: number;
  readonly admitted: boolean;
}

/**
 * The limits of a middleware: names, keys and algorithms (fixed, or a plan per request), and
 * how a request's keys and algorithms are found. A middleware whose limits are all fixed checks
 * through a `Limiter` (its fast paths); one with a plan per request calls the store itself.
 */
export class LimitSet<Req> {
  readonly limits: readonly CompiledLimit<Req>[];
  /** The `Limiter` of fixed limits; `undefined` when some limit's plan is per request. */
  readonly limiter: Limiter | undefined;
  /** Fixed limits' algorithms, in order (shared by every reservation). */
  readonly fixed: readonly Algorithm[];

  constructor(
    options: HttpLimitOptions<Req>,
    readonly store: Store,
    checkPlan: (algorithm: Algorithm) => void,
    changed: (policy: string) => PlanChanged,
  ) {
    const given = httpLimits(options);
    // Limiter refuses limits that are not a non-empty array with its coded error.
    if (!Array.isArray(given) || given.length === 0) new Limiter({ limits: given, store } as never);
    // A factory given uncalled would pass for a plan per request: refused before that test.
    given.forEach((limit, i) => {
      assertNotFactory(`limits[${i}].algorithm`, limit?.algorithm);
    });
    const planned = given.some((limit) => typeof limit?.algorithm === 'function');
    const cache = planCacheOptions(options.planCache);
    if (!planned) {
      // Limiter validates the algorithms and names, and binds each limit's name into its fingerprint.
      this.limiter = new Limiter({
        limits: given.map(({ name, algorithm, enforce, block }) => {
          const limit: LimitDefinition = { algorithm: algorithm as Algorithm };
          if (name !== undefined) limit.name = name;
          if (enforce !== undefined) limit.enforce = enforce;
          if (block !== undefined) limit.block = block;
          return limit;
        }),
        store,
      });
      this.fixed = this.limiter.limits.map((limit) => limit.algorithm);
      this.limits = this.limiter.limits.map((limit, i) => ({
        name: limit.name,
        key: keyOption(i, given[i]!.key),
        algorithm: limit.algorithm,
        plans: undefined,
        enforce: limit.enforce,
        block: limit.block,
      }));
    } else {
      // Limiter checks its store; a set with a plan per request calls the store itself.
      storeOption(store);
      this.limiter = undefined;
      const names = new Set<string>();
      this.limits = given.map((limit, i) => {
        const plan = typeof limit.algorithm === 'function' ? limit.algorithm : undefined;
        if (
          plan !== undefined &&
          (limit.name === undefined || typeof limit.name !== 'string' || limit.name === '')
        ) {
          throw new SluiceError(
            ErrorCode.MISSING_OPTION,
            `limits[${i}] chooses its algorithm per request, so it needs a name (its headers and stored keys use it before any plan is known)`,
            { option: `limits[${i}].name`, value: limit.name },
          );
        }
        if (plan === undefined) assertAlgorithm(`limits[${i}].algorithm`, limit.algorithm);
        const name = limitName(i, limit.name ?? (limit.algorithm as Algorithm).kind, names);
        const enforce = enforceOption(i, limit.enforce);
        const checkShadowPlan = (algorithm: Algorithm): void => assertShadowable(i, enforce, algorithm);
        if (plan === undefined) checkShadowPlan(limit.algorithm as Algorithm);
        const block = limit.block === undefined ? undefined : resolveBlock(`limits[${i}].block`, limit.block);
        return {
          name,
          key: keyOption(i, limit.key),
          algorithm: plan === undefined ? bindName(limit.algorithm as Algorithm, name) : undefined,
          plans:
            plan === undefined
              ? undefined
              : new PlanCache(
                  `limits[${i}].algorithm`,
                  name,
                  plan,
                  cache,
                  (algorithm) => {
                    checkShadowPlan(algorithm);
                    checkPlan(algorithm);
                  },
                  changed(name),
                ),
          enforce,
          block,
        };
      });
      this.fixed = [];
    }
    for (const [i, limit] of this.limits.entries()) {
      if (!SF_STRING.test(limit.name)) {
        throw new SluiceError(
          ErrorCode.INVALID_OPTION,
          `limits[${i}].name must be printable ASCII (it is sent in RateLimit headers); got ${describeValue(limit.name)}`,
          { option: `limits[${i}].name`, value: limit.name },
        );
      }
    }
  }

  /** Whether any limit chooses its plan per request. */
  get planned(): boolean {
    return this.limiter === undefined;
  }

  /** The key of limit `i` for this request; a non-string answer is an `ERR_SLUICE_INVALID_KEY`. */
  key(i: number, req: Req, access: RequestAccess<Req>): MaybePromise<string | undefined> {
    return andThen(this.limits[i]!.key(req, access), (key) => {
      if (key !== undefined && typeof key !== 'string') {
        throw new SluiceError(
          ErrorCode.INVALID_KEY,
          `limits[${i}].key must return a string or undefined; got ${describeValue(key)}`,
          { option: `limits[${i}].key`, value: key },
        );
      }
      return key;
    });
  }

  /** Every limit's key for this request. */
  keys(req: Req, access: RequestAccess<Req>): MaybePromise<(string | undefined)[]> {
    return all(this.limits.map((_, i) => this.key(i, req, access)));
  }

  /** Every limit's algorithm for this request on `keys` (plans asked or cached). */
  algorithms(req: Req, keys: readonly (string | undefined)[]): MaybePromise<(Algorithm | undefined)[]> {
    if (!this.planned) return this.fixed as Algorithm[];
    return all(
      this.limits.map((limit, i) => {
        const key = keys[i];
        if (key === undefined) return undefined;
        return limit.plans === undefined ? limit.algorithm : limit.plans.get(req, key);
      }),
    );
  }

  /** Every limit's key and algorithm for this request: what a check, a peek and a reset find first. */
  request(req: Req, access: RequestAccess<Req>): MaybePromise<RequestLimits> {
    return andThen(this.keys(req, access), (keys) =>
      andThen(this.algorithms(req, keys), (algorithms) => ({ keys, algorithms })),
    );
  }

  /**
   * The one store call of a request's check, `cost` units from every limit with a key, or from
   * none: through the `Limiter` when the limits are fixed (its direct path for a single limit, no
   * batch arrays; a store error rejects as `ERR_SLUICE_STORE_FAILURE`), else the store's batch on
   * the request's plans, combined (a store error as the store gave it).
   */
  consume(limits: RequestLimits, cost: number): MaybePromise<Decision> {
    const limiter = this.limiter;
    if (limiter !== undefined) {
      const keys = this.limits.length === 1 ? (limits.keys[0] as string) : limits.keys;
      return limiterAnswer(limiter, keys, cost === 1 ? undefined : { cost });
    }
    const calls = this.calls(limits, cost);
    return andThen(this.store.consume(calls, undefined), (decisions) => combineCalls(calls, decisions));
  }

  /** The store calls of a request's limits (a reservation's) for `cost` units (limits without a key left out). */
  calls(limits: RequestLimits, cost: number): LimitCall[] {
    const calls: LimitCall[] = [];
    for (let i = 0; i < this.limits.length; i++) {
      const key = limits.keys[i];
      const algorithm = limits.algorithms[i];
      if (key !== undefined && algorithm !== undefined) {
        const { name, enforce, block } = this.limits[i]!;
        calls.push(limitCall({ name, algorithm, enforce, block }, key, cost));
      }
    }
    return calls;
  }
}

function keyOption<Req>(i: number, key: unknown): LimitKey<Req> {
  if (key !== undefined && typeof key !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `limits[${i}].key must be a key function such as byIp(); got ${describeValue(key)}`,
      { option: `limits[${i}].key`, value: key },
    );
  }
  return (key as LimitKey<Req> | undefined) ?? byIp();
}

/**
 * The limits of the options, from `limits` or from the single-limit shorthand; options that give
 * neither, nor a `name`, get the default limit (`defaultAlgorithm()`, named `'default'`) with
 * their `key`, `enforce` and `block`.
 */
export function httpLimits<Req>(options: HttpLimitOptions<Req>): readonly HttpLimit<Req>[] {
  if (options === null || typeof options !== 'object') return [];
  const shorthand = options.algorithm !== undefined;
  if (!shorthand && options.limits === undefined && options.name === undefined) {
    return [singleLimit(options, defaultAlgorithm(), DEFAULT_LIMIT_NAME)];
  }
  if (!shorthand && options.limits === undefined) {
    // A name says which limit was meant: its algorithm is missing, not defaulted.
    throw new SluiceError(
      ErrorCode.MISSING_OPTION,
      "a rate limit needs an algorithm: give the single-limit algorithm (with key and name), e.g. algorithm: fixedWindow({ limit: 100, window: '1m' }), or limits: [{ name, key, algorithm }, …]",
      { option: 'algorithm' },
    );
  }
  if (shorthand && options.limits !== undefined) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      'give either limits (one or several { name, key, algorithm }) or the single-limit algorithm (with key and name), not both',
      { option: 'limits', value: options.limits },
    );
  }
  if (!shorthand) {
    if (options.key !== undefined || options.name !== undefined) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        'key and name belong to each limit when limits is given: limits: [{ name, key, algorithm }]',
        { option: options.key !== undefined ? 'key' : 'name' },
      );
    }
    if (Array.isArray(options.limits)) {
      options.limits.forEach((limit, i) => {
        assertKnownOptions(`limits[${i}]`, limit, [
          'name',
          'key',
          'algorithm',
          'enforce',
          'block',
        ] satisfies (keyof HttpLimit<Req>)[]);
      });
    }
    return options.limits!;
  }
  return [singleLimit(options, options.algorithm!, options.name)];
}

/** The single-limit shorthand's limit: `algorithm` and `name`, with the options' key, enforce and block. */
function singleLimit<Req>(
  options: HttpLimitOptions<Req>,
  algorithm: HttpLimit<Req>['algorithm'],
  name: string | undefined,
): HttpLimit<Req> {
  const limit: HttpLimit<Req> = { algorithm };
  if (options.key !== undefined) limit.key = options.key;
  if (options.enforce !== undefined) limit.enforce = options.enforce;
  if (options.block !== undefined) limit.block = options.block;
  if (name !== undefined) limit.name = name;
  return limit;
}
