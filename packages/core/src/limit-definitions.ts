import { type Algorithm, bindName } from './algorithm.js';
import { factoryName } from './algorithm-factories.js';
import { factoryList } from './algorithm-kinds.js';
import { type BlockOptions, type BlockPolicy, resolveBlock } from './block.js';
import type { Duration } from './duration.js';
import { describeValue, ErrorCode, SluiceError } from './errors.js';
import type { LimitCall } from './store.js';
import { assertKnownOptions } from './validate.js';

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

export function resolveLimits(limits: readonly LimitDefinition[]): ResolvedLimit[] {
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
