import { type Algorithm, bindName } from '../algorithm.js';
import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertAlgorithm } from '../limit-definitions.js';
import type { MaybePromise } from '../store.js';
import { assertKnownOptions, integerOption } from '../validate.js';

/**
 * A limit's algorithm chosen per request (a plan tier read from a database): synchronous or
 * async. Its answer is cached per key of the limit (`planCache`), so key the limit by what the
 * plan depends on (the tenant, the API key).
 * @example (req) => plans.of(req.user.id).then((plan) => tokenBucket({ capacity: plan.burst, refillInterval: '1s' }))
 */
export type PlanFunction<Req> = (req: Req) => Algorithm | Promise<Algorithm>;

/** How long, and for how many keys, a `PlanFunction`'s answers are kept. */
export interface PlanCacheOptions {
  /**
   * Keys whose plan is kept, per limit; past it the oldest is forgotten. An integer ≥ 1.
   * @default 10000
   */
  max?: number;
  /**
   * How long a key's plan is used before the function is asked again: ms or `'1m'`; `0` asks on
   * every request (the previous plan is still remembered, to carry the consumption over).
   * @default '1m'
   */
  ttl?: Duration;
}

export const PLAN_CACHE_OPTIONS = ['max', 'ttl'] as const satisfies readonly (keyof PlanCacheOptions)[];

interface Entry {
  /** The plan, with the limit's name bound in (what the store sees). */
  algorithm: Algorithm | undefined;
  /** `Date.now()` after which the function is asked again. */
  expires: number;
  /** The function's answer on its way: requests arriving meanwhile wait for it rather than ask too. */
  pending: Promise<Algorithm> | undefined;
}

/**
 * Called when a key's plan changes from `previous` to `next` (both bound), before the request
 * that found the change is checked: how the limiter carries the consumption over.
 */
export type PlanChanged = (previous: Algorithm, next: Algorithm, key: string) => MaybePromise<void>;

/**
 * The plans of one dynamic limit, by key: bounded (`max`, oldest first out) and kept `ttl` ms.
 * A key whose plan expired keeps its old plan until the new one is known, so a change is seen
 * (and `changed` runs) by the process that served the key before.
 */
export class PlanCache<Req> {
  private readonly entries = new Map<string, Entry>();
  private readonly max: number;
  private readonly ttl: number;

  constructor(
    private readonly option: string,
    private readonly name: string,
    private readonly plan: PlanFunction<Req>,
    options: ResolvedPlanCache,
    private readonly check: (algorithm: Algorithm) => void,
    private readonly changed: PlanChanged,
  ) {
    this.max = options.max;
    this.ttl = options.ttl;
  }

  /** The plan this process last used for `key`, if it still remembers one. */
  known(key: string): Algorithm | undefined {
    return this.entries.get(key)?.algorithm;
  }

  /** The plan for this request on `key`: cached, or asked for (once for concurrent requests). */
  get(req: Req, key: string): MaybePromise<Algorithm> {
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      if (entry.pending !== undefined) return entry.pending;
      if (entry.algorithm !== undefined && Date.now() < entry.expires) return entry.algorithm;
    }
    return this.ask(req, key, entry);
  }

  private ask(req: Req, key: string, entry: Entry | undefined): MaybePromise<Algorithm> {
    const previous = entry?.algorithm;
    const answer = this.plan(req);
    if (!(answer instanceof Promise)) {
      const next = this.bound(answer);
      const change = previous !== undefined && previous.fingerprint !== next.fingerprint;
      if (!change) {
        this.store(key, next);
        return next;
      }
      return this.changePlan(key, previous, next);
    }
    const pending = answer.then(
      (value) => {
        const next = this.bound(value);
        if (previous === undefined || previous.fingerprint === next.fingerprint) {
          this.store(key, next);
          return next;
        }
        return this.changePlan(key, previous, next);
      },
      (error: unknown) => {
        this.forget(key, previous);
        throw error;
      },
    );
    const waiting: Entry = { algorithm: previous, expires: 0, pending };
    this.entries.set(key, waiting);
    this.bound$();
    return pending;
  }

  /** A new plan for a key that had another: the consumption is carried over first. */
  private async changePlan(key: string, previous: Algorithm, next: Algorithm): Promise<Algorithm> {
    try {
      await this.changed(previous, next, key);
    } finally {
      // Stored even when carrying failed (reported by the limiter): the new plan applies anyway.
      this.store(key, next);
    }
    return next;
  }

  private store(key: string, algorithm: Algorithm): void {
    this.entries.delete(key);
    this.entries.set(key, { algorithm, expires: Date.now() + this.ttl, pending: undefined });
    this.bound$();
  }

  /** A failed ask: the key keeps the plan it had (asked again next time), or is forgotten. */
  private forget(key: string, previous: Algorithm | undefined): void {
    if (previous === undefined) this.entries.delete(key);
    else this.entries.set(key, { algorithm: previous, expires: 0, pending: undefined });
  }

  private bound$(): void {
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  private bound(value: unknown): Algorithm {
    assertAlgorithm(this.option, value);
    this.check(value);
    return bindName(value, this.name);
  }
}

/** `planCache` with its defaults: keys kept, ms kept. */
export interface ResolvedPlanCache {
  readonly max: number;
  readonly ttl: number;
}

/** `planCache` as given, validated (also where no limit has a plan per request: a mistake anyway). */
export function planCacheOptions(value: unknown): ResolvedPlanCache {
  if (value === undefined) return { max: 10_000, ttl: 60_000 };
  if (value === null || typeof value !== 'object') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `planCache must be an options object { max, ttl }; got ${describeValue(value)}`,
      { option: 'planCache', value },
    );
  }
  assertKnownOptions('planCache', value, PLAN_CACHE_OPTIONS);
  const options = value as PlanCacheOptions;
  return {
    max: integerOption('planCache.max', options.max ?? 10_000),
    ttl: options.ttl === 0 ? 0 : parseDuration('planCache.ttl', options.ttl ?? '1m'),
  };
}
