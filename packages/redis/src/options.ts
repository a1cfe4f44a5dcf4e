import {
  assertKnownOptions,
  ErrorCode,
  integerOption,
  oneOfOption,
  positiveOption,
  SluiceError,
  type Store,
} from '@sluice/core';
import type { BreakerOptions, BreakerState } from './breaker.js';
import type { RedisClient } from './client.js';

/**
 * What a call gets when Redis fails (error, timeout, or the breaker is open):
 * - `'allow'`: fail open (as Stripe does): allowed, counted nowhere.
 * - `'deny'`: refused with reason `'store-unavailable'`.
 * - a `Store` (e.g. `new MemoryStore()`): that store decides instead, per process.
 */
export type FailurePolicy = 'allow' | 'deny' | Store;

/** What went wrong, for alerting. */
export interface RedisStoreErrorEvent {
  /**
   * The store operation that failed. `'rollback'` is the refund of what a request refused in one
   * Cluster slot consumed in the slots that admitted it (those units stay until they drain);
   * `'acquire'` and `'release'` are concurrency leases (`store.leases`; their `peek` and `reset`
   * report as `'peek'` and `'reset'`); `'refund'` gives back a held queue slot.
   */
  readonly operation:
    | 'consume'
    | 'peek'
    | 'reset'
    | 'rollback'
    | 'fallback'
    | 'acquire'
    | 'release'
    | 'refund';
  /** Limits (keys) or lease sets in the failed call. */
  readonly keys: number;
  /** The error: from ioredis, or a `SluiceError` (`ERR_SLUICE_STORE_FAILURE`) for a timeout. */
  readonly error: unknown;
  /** The breaker's state after this failure was counted. */
  readonly breaker: BreakerState;
}

export interface RedisStoreOptions {
  /**
   * An ioredis (5 or 6) or iovalkey client: `new Redis(...)` (standalone or Sentinel) or
   * `new Cluster(...)`. The store
   * registers its scripts on it and does not own it: `shutdown()` leaves it connected. Create it
   * with `enableOfflineQueue: false` so calls fail at once while Redis is unreachable.
   */
  client: RedisClient;
  /** Prepended to every key. Must not contain `{` or `}` (they would move the hash slot). @default 'sluice:' */
  prefix?: string;
  /**
   * Where `now` comes from when a call passes none: `'client'` reads `clock` in this process;
   * `'redis'` reads Redis `TIME` inside the script (µs precision), so app servers with skewed
   * clocks agree. A `now` passed to `check()` always wins.
   * @default 'client'
   */
  time?: 'client' | 'redis';
  /** ms since the epoch: `now` for `time: 'client'`, and the clock of the breaker and deny cache. @default Date.now */
  clock?: () => number;
  /** Longest wait for Redis per call, in ms; past it, the failure policy answers. @default 100 */
  timeout?: number;
  /** See {@link FailurePolicy}. @default 'allow' */
  failurePolicy?: FailurePolicy;
  /** The circuit breaker, or `false` to pay the timeout on every call. @default { failures: 5, cooldown: 1000 } */
  breaker?: BreakerOptions | false;
  /**
   * Most `(limit, key)` refusals remembered locally (LRU); a remembered key is refused without a
   * round trip until its `retryAfter` has passed. 0 turns the cache off.
   * @default 0
   */
  denyCache?: number;
  /** Called on every failed call to Redis (not on calls the open breaker short-circuits). Must not throw. */
  onError?: (event: RedisStoreErrorEvent) => void;
  /** Called when the breaker changes state. */
  onBreakerChange?: (state: BreakerState, previous: BreakerState) => void;
}

const KNOWN = [
  'client',
  'prefix',
  'time',
  'clock',
  'timeout',
  'failurePolicy',
  'breaker',
  'denyCache',
  'onError',
  'onBreakerChange',
] as const satisfies readonly (keyof RedisStoreOptions)[];

const BREAKER_KNOWN = ['failures', 'cooldown'] as const satisfies readonly (keyof BreakerOptions)[];

export interface ResolvedOptions {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly redisTime: boolean;
  readonly clock: () => number;
  readonly timeout: number;
  readonly failurePolicy: FailurePolicy;
  readonly breaker: Required<BreakerOptions> | undefined;
  readonly denyCache: number;
  readonly onError: ((event: RedisStoreErrorEvent) => void) | undefined;
  readonly onBreakerChange: ((state: BreakerState, previous: BreakerState) => void) | undefined;
}

function invalid(option: string, message: string, value: unknown): SluiceError {
  return new SluiceError(ErrorCode.INVALID_OPTION, `RedisStore: ${option} ${message}`, { option, value });
}

function functionOption<T>(option: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw invalid(option, 'must be a function', value);
  return value;
}

function isStore(value: unknown): value is Store {
  const store = value as Partial<Store> | null;
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof store.consume === 'function' &&
    typeof store.peek === 'function' &&
    typeof store.reset === 'function' &&
    typeof store.shutdown === 'function'
  );
}

export function resolveOptions(options: RedisStoreOptions): ResolvedOptions {
  assertKnownOptions('RedisStore', options, KNOWN);
  const client = options.client as Partial<RedisClient> | undefined;
  if (client === null || typeof client !== 'object' || typeof client.defineCommand !== 'function') {
    throw new SluiceError(
      client === undefined ? ErrorCode.MISSING_OPTION : ErrorCode.INVALID_OPTION,
      'RedisStore: client must be an ioredis or iovalkey Redis or Cluster instance',
      { option: 'client', value: client },
    );
  }
  const prefix = options.prefix ?? 'sluice:';
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw invalid('prefix', 'must be a string without { or } (they would choose the hash slot)', prefix);
  }
  const policy = options.failurePolicy ?? 'allow';
  if (policy !== 'allow' && policy !== 'deny' && !isStore(policy)) {
    throw invalid('failurePolicy', "must be 'allow', 'deny' or a Store (e.g. new MemoryStore())", policy);
  }
  let breaker: Required<BreakerOptions> | undefined;
  if (options.breaker !== false) {
    const given = options.breaker ?? {};
    assertKnownOptions('RedisStore breaker', given, BREAKER_KNOWN);
    breaker = {
      failures: integerOption('breaker.failures', given.failures ?? 5),
      cooldown: positiveOption('breaker.cooldown', given.cooldown ?? 1000),
    };
  }
  return {
    client: options.client,
    prefix,
    redisTime: oneOfOption('time', options.time ?? 'client', ['client', 'redis']) === 'redis',
    clock: functionOption('clock', options.clock) ?? Date.now,
    timeout: positiveOption('timeout', options.timeout ?? 100),
    failurePolicy: policy,
    breaker,
    denyCache: integerOption('denyCache', options.denyCache ?? 0, 0),
    onError: functionOption('onError', options.onError),
    onBreakerChange: functionOption('onBreakerChange', options.onBreakerChange),
  };
}
