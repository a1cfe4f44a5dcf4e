import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { MemoryStore } from '../memory-store.js';
import type { Store } from '../store.js';
import { assertKnownOptions, integerOption, positiveOption } from '../validate.js';
import type { BreakerOptions, BreakerState } from './breaker.js';

/**
 * What a call gets when the backend fails (error, timeout, or the breaker is open):
 * - `'local'` (the default): a `MemoryStore` in this process decides, with the same limits (scaled
 *   by `outageShare`): each process keeps limiting on its own, so a fleet of N admits at most N
 *   times the limit (the limit, with `outageShare: 1 / N`), never everything.
 * - `'allow'`: fail open: allowed, counted nowhere (reason `'store-unavailable'`, so no quota
 *   headers are written for it). The limit is off while the backend is away.
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
export interface StoreErrorEvent {
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
  /** The error: from the client, or a `SluiceError` (`ERR_SLUICE_STORE_FAILURE`) for a timeout. */
  readonly error: unknown;
  /** The breaker's state after this failure was counted. */
  readonly breaker: BreakerState;
}

/**
 * The options of a store's failure handling, shared by every store on a remote backend
 * (`RedisStore`, `ServerStore`; each documents them for its own backend, with these semantics and
 * defaults).
 */
export interface FailureOptions {
  /** Longest wait for the backend per call, in ms; past it, the failure policy answers. @default 100 */
  timeout?: number;
  /**
   * Longest wait, in ms, for a client still making its first connection; past it, the waiting
   * calls are answered by the failure policy, reported once as `operation: 'connect'`. 0 turns
   * the wait off. @default 2000
   */
  readyTimeout?: number;
  /** See {@link FailurePolicy}. @default 'local' */
  failurePolicy?: FailurePolicy;
  /** The share of each limit the failure policy's store lets this process use, in (0, 1]. @default 1 */
  outageShare?: number;
  /** The circuit breaker, or `false` to pay the timeout on every call. @default { failures: 5, cooldown: 1000 } */
  breaker?: BreakerOptions | false;
  /** Called on every failed call (not on calls the open breaker short-circuits). Must not throw. */
  onError?: (event: StoreErrorEvent) => void;
  /** Called when a breaker changes state (`node`: a Cluster primary's `host:port`). */
  onBreakerChange?: (state: BreakerState, previous: BreakerState, node?: string) => void;
  /**
   * Where the store says that its backend is failing, in a few lines. `false`: no log.
   * @default console, when `onError` is not given; none when it is
   */
  logger?: StoreLogger | false;
}

/** {@link FailureOptions} validated, defaults applied. */
export interface ResolvedFailureOptions {
  readonly timeout: number;
  readonly readyTimeout: number;
  readonly failurePolicy: FailurePolicy;
  /** The store that decides while the backend is away: `'local'`'s own `MemoryStore`, or the policy's store. */
  readonly fallback: Store | undefined;
  readonly outageShare: number;
  readonly breaker: Required<BreakerOptions> | undefined;
  readonly onError: ((event: StoreErrorEvent) => void) | undefined;
  readonly onBreakerChange:
    | ((state: BreakerState, previous: BreakerState, node?: string) => void)
    | undefined;
  readonly logger: StoreLogger | undefined;
}

const BREAKER_KNOWN = ['failures', 'cooldown'] as const satisfies readonly (keyof BreakerOptions)[];

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
    throw invalidOption(
      store,
      'failurePolicy',
      "must be 'local', 'allow', 'deny' or a Store (e.g. new MemoryStore())",
      policy,
    );
  }
  const onError = storeFunctionOption(store, 'onError', options.onError);
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
    onBreakerChange: storeFunctionOption(store, 'onBreakerChange', options.onBreakerChange),
    logger: loggerOption(store, options.logger, onError),
  };
}

/** The coded error of a bad option of `store`: `<store>: <option> <message>`. */
export function invalidOption(store: string, option: string, message: string, value: unknown): SluiceError {
  return new SluiceError(ErrorCode.INVALID_OPTION, `${store}: ${option} ${message}`, { option, value });
}

/** A function option of `store`, or undefined. */
export function storeFunctionOption<T>(store: string, option: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw invalidOption(store, option, 'must be a function', value);
  }
  return value;
}

/** A fraction in (0, 1]. */
export function shareOption(store: string, option: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0 && value <= 1)) {
    throw invalidOption(
      store,
      option,
      `must be a number above 0 and at most 1; got ${describeValue(value)}`,
      value,
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
    throw invalidOption(
      store,
      'logger',
      'must be an object with a warn(message) method (console, pino…) or false',
      logger,
    );
  }
  return logger;
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
    throw invalidOption(store, option, `must be a number of ms ${least} up to ${MAX_TIMER}`, value);
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
