import { type Duration, ErrorCode, SluiceError } from '@sluice/core';
import { assertKnownOptions, integerOption, oneOfOption, replayGraceOption } from '@sluice/core/adapter';
import type { BreakerOptions, BreakerState } from '@sluice/core/gate';
import {
  type FailurePolicy,
  invalidOption,
  type ResolvedFailureOptions,
  resolveFailureOptions,
  type StoreErrorEvent,
  type StoreLogger,
  storeFunctionOption,
} from '@sluice/core/gate';
import type { RedisClient } from './client.js';
import { fromNodeRedis, isNodeRedis, type NodeRedisClient } from './node-redis.js';

/** What went wrong, for alerting (see `StoreErrorEvent`). */
export type RedisStoreErrorEvent = StoreErrorEvent;

export interface RedisStoreOptions {
  /**
   * The Redis client, which the store does not own (`shutdown()` leaves it connected):
   * - ioredis (5 or 6) or iovalkey: `new Redis(...)` (standalone or Sentinel) or `new Cluster(...)`.
   *   The store registers its scripts on it. Create it with `enableOfflineQueue: false` so calls
   *   fail at once while Redis is unreachable.
   * - node-redis (`redis` 5 or 6): `createClient(...)` or `createCluster(...)`, connected by you
   *   (`await client.connect()`); calls made before it is ready wait for it within `readyTimeout`.
   *   Scripts run with `EVALSHA` (`EVAL` on `NOSCRIPT`).
   */
  client: RedisClient | NodeRedisClient;
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
  /**
   * How long, in wall time, a key written at a `now` passed to `check()` (a replay) outlives the
   * state's own remaining life. Redis expires keys in wall time while a replayed state lives in
   * the trace's time; a trace replayed slower than real time (or at one frozen `now`) would lose
   * its state early and admit too much. With the grace, a replay gets the memory store's answers
   * as long as it falls no more than `replayGrace` behind real time over one state's life (real
   * time and faster: always). Costs memory: each key a replay writes stays up to that much longer.
   * Calls without `now` (the store's `clock` or Redis `TIME`) are not affected. 0: no grace.
   * @default '10m'
   */
  replayGrace?: Duration | 0;
  /** Longest wait for Redis per call, in ms; past it, the failure policy answers. @default 100 */
  timeout?: number;
  /**
   * Longest wait, in ms, for a client that is still making its first connection (created without
   * `lazyConnect`, or connecting). Calls made before the client is first `ready` wait for it
   * instead of failing (and they do not count for the breaker); past this bound they are answered
   * by the failure policy, reported once to `onError` as `operation: 'connect'`, and later calls
   * no longer wait. A client already ready, ended, or not yet told to connect (`lazyConnect`) is
   * not waited for. 0 turns the wait off. At most 2^31 − 1.
   * @default 2000
   */
  readyTimeout?: number;
  /** See {@link FailurePolicy}. @default 'local' */
  failurePolicy?: FailurePolicy;
  /**
   * The share of each limit the failure policy's store (`'local'`, or a store given as the policy)
   * lets this process use while Redis is away: each unit it admits counts `1 / outageShare`
   * there. `1 / N` for N app processes keeps the fleet within the limit during an outage; 1 lets
   * each process use the whole limit. A number in (0, 1].
   * @default 1
   */
  outageShare?: number;
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
  /**
   * Where the store says that Redis is failing, in a few lines rather than one per request: when
   * failing starts (with the policy answering meanwhile), when the circuit breaker opens or
   * closes, a count every 10 s while it lasts, and when Redis answers again. `false`: no log.
   * @default console, when `onError` is not given; none when it is (the hook has every failure)
   */
  logger?: StoreLogger | false;
  /**
   * Called when a breaker changes state. On a Cluster each primary has its own breaker: `node` is
   * its `host:port` (undefined for the store's own, on a standalone Redis).
   */
  onBreakerChange?: (state: BreakerState, previous: BreakerState, node?: string) => void;
}

const KNOWN = [
  'client',
  'prefix',
  'time',
  'clock',
  'replayGrace',
  'timeout',
  'readyTimeout',
  'failurePolicy',
  'breaker',
  'denyCache',
  'onError',
  'onBreakerChange',
  'outageShare',
  'logger',
] as const satisfies readonly (keyof RedisStoreOptions)[];

export interface ResolvedOptions extends ResolvedFailureOptions {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly redisTime: boolean;
  readonly clock: () => number;
  /** ms, a whole number (see `RedisStoreOptions.replayGrace`). */
  readonly replayGrace: number;
  readonly denyCache: number;
}

function invalid(option: string, message: string, value: unknown): SluiceError {
  return invalidOption('RedisStore', option, message, value);
}

export function resolveOptions(options: RedisStoreOptions): ResolvedOptions {
  assertKnownOptions('RedisStore', options, KNOWN);
  const given = options.client as Partial<RedisClient> | undefined;
  const client = isNodeRedis(given) ? fromNodeRedis(given) : given;
  if (client === null || typeof client !== 'object' || typeof client.defineCommand !== 'function') {
    throw new SluiceError(
      client === undefined ? ErrorCode.MISSING_OPTION : ErrorCode.INVALID_OPTION,
      'RedisStore: client must be an ioredis or iovalkey Redis or Cluster instance, or a node-redis client or cluster',
      { option: 'client', value: client },
    );
  }
  const prefix = options.prefix ?? 'sluice:';
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw invalid('prefix', 'must be a string without { or } (they would choose the hash slot)', prefix);
  }
  const clock = storeFunctionOption('RedisStore', 'clock', options.clock) ?? Date.now;
  return {
    client: client as RedisClient,
    prefix,
    redisTime: oneOfOption('time', options.time ?? 'client', ['client', 'redis']) === 'redis',
    clock,
    replayGrace: replayGraceOption('RedisStore', options.replayGrace),
    ...resolveFailureOptions('RedisStore', options, clock),
    denyCache: integerOption('denyCache', options.denyCache ?? 0, 0),
  };
}
