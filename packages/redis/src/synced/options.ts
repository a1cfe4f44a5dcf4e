import { type Duration, ErrorCode, SluiceError } from '@sluice/core';
import { assertKnownOptions, describeValue, integerOption, parseDuration } from '@sluice/core/adapter';
import type { BreakerOptions, BreakerState } from '@sluice/core/gate';
import { type StoreLogger, shareOption } from '@sluice/core/gate';
import type { RedisClient } from '../client.js';
import { type RedisStoreErrorEvent, type ResolvedOptions, resolveOptions } from '../options.js';

export interface SyncedStoreOptions {
  /**
   * An ioredis (5 or 6) or iovalkey client, standalone or Cluster, as for `RedisStore` (create it
   * with `enableOfflineQueue: false`). The store does not own it: `shutdown()` leaves it connected.
   */
  client: RedisClient;
  /**
   * How often a node sends what it consumed and reads the fleet's state: ms or `'100ms'`, `'1s'`…
   * The over-admission bound grows with it (see the README). 0: no timer; call `sync()` yourself.
   * @default '100ms'
   */
  interval?: Duration | 0;
  /**
   * Prepended to every key; must not contain `{` or `}`. The keys and their states are
   * `RedisStore`'s: a `RedisStore` on the same prefix shares the limits.
   * @default 'sluice:'
   */
  prefix?: string;
  /** ms since the epoch, for calls without `now`, the breaker and the keys' expiry. @default Date.now */
  clock?: () => number;
  /** Longest wait for one sync round trip (and an exact decision), in ms. @default 1000 */
  timeout?: number;
  /** As `RedisStore`'s: longest wait, in ms, for a client still making its first connection. @default 2000 */
  readyTimeout?: number;
  /** As `RedisStore`'s circuit breaker (counts failed syncs), or `false`. @default { failures: 5, cooldown: 1000 } */
  breaker?: BreakerOptions | false;
  /** Called on every failed sync (`operation: 'sync'`) and exact decision. Must not throw. */
  onError?: (event: RedisStoreErrorEvent) => void;
  /**
   * Where the store says that syncs fail, in a few lines (as `RedisStore`'s `logger`): when
   * failing starts, breaker changes, a count every 10 s, recovery. `false`: no log.
   * @default console, when `onError` is not given; none when it is
   */
  logger?: StoreLogger | false;
  /** Called when the breaker changes state. */
  onBreakerChange?: (state: BreakerState, previous: BreakerState) => void;
  /**
   * The share of each limit one node may use on its own while Redis is unreachable (the last sync
   * failed): each unit it admits then counts `1 / outageShare` units in its local view (never in
   * what it sends). `1 / N` for N nodes keeps the fleet within the limit during an outage; 1 lets
   * each node use the whole limit. A number in (0, 1].
   * @default 1
   */
  outageShare?: number;
  /**
   * Hot keys: once an admission would leave less than `1 - exactAbove` of a limit (in this node's
   * view), the decision is made in Redis instead (a sync, then `RedisStore`'s script): exact near
   * the limit, local below it. Single-limit checks only. A number in (0, 1], or `false`.
   * @default false
   */
  exactAbove?: number | false;
  /** Most keys held in this process across all limits, as `MemoryStore`'s. @default 100_000 */
  maxKeys?: number;
}

const KNOWN = [
  'client',
  'interval',
  'prefix',
  'clock',
  'timeout',
  'readyTimeout',
  'breaker',
  'onError',
  'logger',
  'onBreakerChange',
  'outageShare',
  'exactAbove',
  'maxKeys',
] as const satisfies readonly (keyof SyncedStoreOptions)[];

export interface ResolvedSyncedOptions {
  /** What the call gate and the exact-decision `RedisStore` read. */
  readonly redis: ResolvedOptions;
  /** ms; 0 for no timer. */
  readonly interval: number;
  readonly outageShare: number;
  /** Fraction of a limit used at which decisions go to Redis; undefined: never. */
  readonly exactAbove: number | undefined;
  readonly maxKeys: number;
}

/** Longest delay `setInterval` honours: past it, Node fires the timer at once. */
const MAX_TIMER = 2 ** 31 - 1;

export function resolveSyncedOptions(options: SyncedStoreOptions): ResolvedSyncedOptions {
  assertKnownOptions('SyncedStore', options, KNOWN);
  const { client, prefix, clock, timeout, readyTimeout, breaker, onError, onBreakerChange, logger } = options;
  const redis = resolveOptions({
    client,
    ...(prefix === undefined ? {} : { prefix }),
    ...(clock === undefined ? {} : { clock }),
    timeout: timeout ?? 1000,
    ...(readyTimeout === undefined ? {} : { readyTimeout }),
    ...(breaker === undefined ? {} : { breaker }),
    ...(onError === undefined ? {} : { onError }),
    ...(onBreakerChange === undefined ? {} : { onBreakerChange }),
    ...(logger === undefined ? {} : { logger }),
    // Exact decisions that fail are answered from the local view (see SyncedStore.exact).
    failurePolicy: 'deny',
  });
  const interval = options.interval === 0 ? 0 : parseDuration('interval', options.interval ?? '100ms');
  if (interval > MAX_TIMER) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `SyncedStore: interval must be at most ${MAX_TIMER} ms (a timer's longest delay); got ${describeValue(options.interval)}`,
      { option: 'interval', value: options.interval },
    );
  }
  return {
    redis,
    interval,
    outageShare: shareOption('SyncedStore', 'outageShare', options.outageShare ?? 1),
    exactAbove:
      options.exactAbove === undefined || options.exactAbove === false
        ? undefined
        : shareOption('SyncedStore', 'exactAbove', options.exactAbove),
    maxKeys: integerOption('maxKeys', options.maxKeys ?? 100_000),
  };
}
