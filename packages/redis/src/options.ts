import { type Duration, ErrorCode, MemoryStore, SluiceError, type Store } from '@sluice/core';
import {
  assertKnownOptions,
  describeValue,
  integerOption,
  oneOfOption,
  parseDuration,
  positiveOption,
} from '@sluice/core/adapter';
import type { BreakerOptions, BreakerState } from './breaker.js';
import type { RedisClient } from './client.js';
import { fromNodeRedis, isNodeRedis, type NodeRedisClient } from './node-redis.js';

/**
 * What a call gets when Redis fails (error, timeout, or the breaker is open):
 * - `'local'` (the default): a `MemoryStore` in this process decides, with the same limits (scaled
 *   by `outageShare`): each process keeps limiting on its own, so a fleet of N admits at most N
 *   times the limit (the limit, with `outageShare: 1 / N`), never everything.
 * - `'allow'`: fail open: allowed, counted nowhere (reason `'store-unavailable'`, so no quota
 *   headers are written for it). The limit is off while Redis is away.
 * - `'deny'`: refused with reason `'store-unavailable'` (adapters answer 503).
 * - a `Store` (e.g. a `MemoryStore` of your own): that store decides instead, per process, as `'local'` does.
 */
export type FailurePolicy = 'local' | 'allow' | 'deny' | Store;

/**
 * Where a store writes its failure log: anything with `warn(message)` (console, pino, winston,
 * Nest's `Logger`, `fastify.log`).
 */
export interface StoreLogger {
  warn(message: string): void;
}

/** What went wrong, for alerting. */
export interface RedisStoreErrorEvent {
  /**
   * The store operation that failed. `'rollback'` is the refund of what a request refused in one
   * Cluster slot consumed in the slots that admitted it (those units stay until they drain);
   * `'acquire'` and `'release'` are concurrency leases (`store.leases`; their `peek` and `reset`
   * report as `'peek'` and `'reset'`); `'refund'` gives units back (a held queue slot, a response
   * that does not count, a settle downwards); `'charge'` takes them (a settle upwards, a plan
   * change carrying consumption over). `'connect'`: the
   * client was not ready within `readyTimeout` of the first calls (reported once; `keys` is the
   * limits and lease sets of the calls that waited, each then answered by the failure policy).
   * `'sync'`: a `SyncedStore` sync cycle (`keys`: the keys in its script; it is sent again).
   */
  readonly operation:
    | 'consume'
    | 'peek'
    | 'reset'
    | 'rollback'
    | 'fallback'
    | 'acquire'
    | 'release'
    | 'refund'
    | 'charge'
    | 'connect'
    | 'sync';
  /** Limits (keys) or lease sets in the failed call. */
  readonly keys: number;
  /** The error: from ioredis, or a `SluiceError` (`ERR_SLUICE_STORE_FAILURE`) for a timeout. */
  readonly error: unknown;
  /** The breaker's state after this failure was counted. */
  readonly breaker: BreakerState;
}

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

const BREAKER_KNOWN = ['failures', 'cooldown'] as const satisfies readonly (keyof BreakerOptions)[];

/**
 * The options of a store's failure handling, shared by RedisStore and ServerStore (each documents
 * them for its own backend, with the same semantics and defaults).
 */
export type FailureOptions = Pick<
  RedisStoreOptions,
  | 'timeout'
  | 'readyTimeout'
  | 'failurePolicy'
  | 'outageShare'
  | 'breaker'
  | 'onError'
  | 'onBreakerChange'
  | 'logger'
>;

/** {@link FailureOptions} validated, defaults applied. */
export interface ResolvedFailureOptions {
  readonly timeout: number;
  readonly readyTimeout: number;
  readonly failurePolicy: FailurePolicy;
  /** The store that decides while the backend is away: `'local'`'s own `MemoryStore`, or the policy's store. */
  readonly fallback: Store | undefined;
  readonly outageShare: number;
  readonly breaker: Required<BreakerOptions> | undefined;
  readonly onError: ((event: RedisStoreErrorEvent) => void) | undefined;
  readonly onBreakerChange:
    | ((state: BreakerState, previous: BreakerState, node?: string) => void)
    | undefined;
  readonly logger: StoreLogger | undefined;
}

/**
 * Validates the failure options of `store` (its name leads each error message) and applies the
 * defaults: timeout 100 ms, readyTimeout 2000 ms, failurePolicy 'local' (a `MemoryStore` on
 * `clock`), outageShare 1, breaker `{ failures: 5, cooldown: 1000 }`, logger console unless
 * `onError` is given. Throws `ERR_SLUICE_INVALID_OPTION` naming the option.
 */
export function resolveFailureOptions(
  store: string,
  options: FailureOptions,
  clock: () => number = Date.now,
): ResolvedFailureOptions {
  const policy = options.failurePolicy ?? 'local';
  if (policy !== 'local' && policy !== 'allow' && policy !== 'deny' && !isStore(policy)) {
    throw invalid(
      'failurePolicy',
      "must be 'local', 'allow', 'deny' or a Store (e.g. new MemoryStore())",
      policy,
      store,
    );
  }
  const onError = functionOption(store, 'onError', options.onError);
  let breaker: Required<BreakerOptions> | undefined;
  if (options.breaker !== false) {
    const given = options.breaker ?? {};
    assertKnownOptions(`${store} breaker`, given, BREAKER_KNOWN);
    breaker = {
      failures: integerOption('breaker.failures', given.failures ?? 5),
      cooldown: positiveOption('breaker.cooldown', given.cooldown ?? 1000),
    };
  }
  return {
    timeout: timerOption(store, 'timeout', options.timeout ?? 100, false),
    readyTimeout: timerOption(store, 'readyTimeout', options.readyTimeout ?? 2000, true),
    failurePolicy: policy,
    fallback:
      policy === 'local' ? new MemoryStore({ clock }) : typeof policy === 'object' ? policy : undefined,
    outageShare: shareOption(store, 'outageShare', options.outageShare ?? 1),
    breaker,
    onError,
    onBreakerChange: functionOption(store, 'onBreakerChange', options.onBreakerChange),
    logger: loggerOption(store, options.logger, onError),
  };
}

/**
 * A configuration warning, once per process and code: to the store's logger, else (the user took
 * failures to `onError`) as a Node process warning with its code.
 */
export function warn(logger: StoreLogger | undefined, code: string, message: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  if (logger !== undefined) {
    try {
      logger.warn(`[sluice] [${code}] ${message}`);
    } catch {
      // A logger that throws must not stop the store from being made.
    }
  } else process.emitWarning(message, { code });
}

const warned = new Set<string>();

/** A fraction in (0, 1]. */
export function shareOption(store: string, option: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0 && value <= 1)) {
    throw invalid(
      option,
      `must be a number above 0 and at most 1; got ${describeValue(value)}`,
      value,
      store,
    );
  }
  return value;
}

/** The logger: the given one, none for `false`, else console when no `onError` hook has the failures. */
function loggerOption(
  store: string,
  logger: StoreLogger | false | undefined,
  onError: unknown,
): StoreLogger | undefined {
  if (logger === false) return undefined;
  if (logger === undefined) return onError === undefined ? console : undefined;
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function') {
    throw invalid(
      'logger',
      'must be an object with a warn(message) method (console, pino…) or false',
      logger,
      store,
    );
  }
  return logger;
}

export interface ResolvedOptions extends ResolvedFailureOptions {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly redisTime: boolean;
  readonly clock: () => number;
  /** ms, a whole number (see `RedisStoreOptions.replayGrace`). */
  readonly replayGrace: number;
  readonly denyCache: number;
}

function invalid(option: string, message: string, value: unknown, store = 'RedisStore'): SluiceError {
  return new SluiceError(ErrorCode.INVALID_OPTION, `${store}: ${option} ${message}`, { option, value });
}

function functionOption<T>(store: string, option: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw invalid(option, 'must be a function', value, store);
  }
  return value;
}

/** Longest delay `setTimeout` honours: past it, Node fires the timer at once. */
const MAX_TIMER = 2 ** 31 - 1;

/** ms for a timer: finite, above 0 (or 0 when `zero` is allowed), at most MAX_TIMER. */
function timerOption(store: string, option: string, value: unknown, zero: boolean): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value > MAX_TIMER ||
    value < 0 ||
    (value === 0 && !zero)
  ) {
    const least = zero ? 'from 0' : 'above 0';
    throw invalid(option, `must be a number of ms ${least} up to ${MAX_TIMER}`, value, store);
  }
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

/** Longest replay grace: 30 days (a key's PX must stay a plain integer). */
const MAX_REPLAY_GRACE = 30 * 86_400_000;

function replayGraceOption(value: Duration | 0): number {
  if (value === 0) return 0;
  const ms = Math.ceil(parseDuration('replayGrace', value));
  if (ms > MAX_REPLAY_GRACE) throw invalid('replayGrace', 'must be at most 30 days', value);
  return ms;
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
  const clock = functionOption('RedisStore', 'clock', options.clock) ?? Date.now;
  return {
    client: client as RedisClient,
    prefix,
    redisTime: oneOfOption('time', options.time ?? 'client', ['client', 'redis']) === 'redis',
    clock,
    replayGrace: replayGraceOption(options.replayGrace ?? '10m'),
    ...resolveFailureOptions('RedisStore', options, clock),
    denyCache: integerOption('denyCache', options.denyCache ?? 0, 0),
  };
}
