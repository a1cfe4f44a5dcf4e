import type {
  BreakerOptions,
  BreakerState,
  FailurePolicy,
  StoreErrorEvent,
  StoreLogger,
} from '@sluice/core/gate';
import type { Redis } from 'ioredis';

/** What went wrong, for alerting: the same event as RedisStore's (see `onError`). */
export type ServerStoreErrorEvent = StoreErrorEvent;

export interface ServerStoreOptions {
  /**
   * An ioredis client connected to a sluice-server (host, port, password and TLS are ioredis's
   * options). Create it with `enableOfflineQueue: false`: while the server is unreachable calls
   * then fail at once (answered by `failurePolicy`) instead of waiting in ioredis' queue, and none
   * runs late, consuming quota, when the server returns. The store never closes it.
   * Give either `client` or `clients`.
   */
  client?: Redis;
  /**
   * Several sluice-servers, each owning part of the key space: a key goes to the server a
   * consistent-hash ring (160 virtual nodes per server, named by the client's `host:port`) picks
   * for it. Adding a server moves about 1/(n+1) of the keys to it; their state starts fresh there.
   * The store never closes these clients.
   */
  clients?: readonly Redis[];
  /** Prepended to every key (a namespace per application on a shared server). @default '' */
  prefix?: string;
  /**
   * The time of a decision made without `now`, ms since the epoch. @default the server's clock
   * (one clock for every client, as Redis `TIME` is for RedisStore). Given, it is sent as each
   * command's `AT`, which the server cannot tell from a replay's: every state it writes then lives
   * the server's replay grace (10 minutes) longer than its ttl (room, not limits: a state past its
   * ttl reads as fresh). Leave it out unless the app servers' clocks must decide.
   */
  clock?: () => number;
  /**
   * Longest wait for the server per call, in ms; past it, the failure policy answers (a command
   * already sent is not cancelled: the server may still apply it). @default 100
   */
  timeout?: number;
  /**
   * Longest wait, in ms, for a client still making its first connection: calls made before it is
   * first `ready` wait for it instead of failing (and do not count for the breaker); past this
   * bound they are answered by the failure policy, reported once to `onError` as
   * `operation: 'connect'`, and later calls no longer wait. A client already ready, ended, or not
   * yet told to connect (`lazyConnect`) is not waited for. 0 turns the wait off. At most 2^31 − 1.
   * @default 2000
   */
  readyTimeout?: number;
  /**
   * What a call gets when the server fails (error, timeout, or the breaker is open): `'local'`
   * (a `MemoryStore` in this process decides, with the same limits scaled by `outageShare`),
   * `'allow'` (fail open, counted nowhere), `'deny'` (refused with reason `'store-unavailable'`),
   * or a `Store` of your own deciding instead, per process. @default 'local'
   */
  failurePolicy?: FailurePolicy;
  /**
   * The share of each limit the policy's store lets this process use while the server is away
   * (each unit counts `1 / outageShare` there): `1 / N` for N app processes. A number in (0, 1].
   * @default 1
   */
  outageShare?: number;
  /**
   * Where the store says a server is failing, in a few lines (when it starts, breaker changes, a
   * count every 10 s, recovery); `false`: no log.
   * @default console, when `onError` is not given; none when it is
   */
  logger?: StoreLogger | false;
  /**
   * The circuit breaker (one per server with `clients`), or `false` to pay the timeout on every
   * call: after `failures` consecutive failures, calls are answered by the policy at once for
   * `cooldown` ms, then one probe goes through. Its clock is `clock` (else `Date.now`).
   * @default { failures: 5, cooldown: 1000 }
   */
  breaker?: BreakerOptions | false;
  /** Called on every failed call to the server (not on calls the open breaker short-circuits). Must not throw. */
  onError?: (event: ServerStoreErrorEvent) => void;
  /** Called when a breaker changes state. */
  onBreakerChange?: (state: BreakerState, previous: BreakerState) => void;
}

export const KNOWN = [
  'client',
  'clients',
  'prefix',
  'clock',
  'timeout',
  'readyTimeout',
  'failurePolicy',
  'outageShare',
  'logger',
  'breaker',
  'onError',
  'onBreakerChange',
] as const satisfies readonly (keyof ServerStoreOptions)[];
