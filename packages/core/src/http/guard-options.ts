import type { ConcurrencyLimiter, ConcurrencyLimiterOptions } from '../concurrency/concurrency-limiter.js';
import type { Decision } from '../decision.js';
import {
  FLEET_SHEDDER_OPTIONS,
  type FleetShedder,
  type FleetShedderOptions,
} from '../shedding/fleet-shedder.js';
import type { UtilizationShedder } from '../shedding/utilization-shedder.js';
import type { KeyFunction } from './keys.js';
import type { SluiceWarning } from './options.js';

/**
 * Options every guard (the concurrency limit and both load shedders) shares with the rate limit
 * middleware. Resolved once, when the middleware is created.
 */
export interface HttpGuardOptions<Req> {
  /** Requests for which this returns `true` are not guarded (no lease, never shed). Synchronous. */
  skip?: (req: Req) => boolean;
  /**
   * When the store fails (or a key, priority or skip function throws): `'allow'` serves the
   * request unguarded (fail open), `'deny'` answers 503 with `Retry-After: 1` (fail closed).
   * Either way `onError` is told; the error never becomes an unhandled rejection.
   * @default 'allow'
   */
  storeFailure?: 'allow' | 'deny';
  /** Called for every refused request, before the response. For metrics. */
  onLimited?: (req: Req, decision: Decision) => void;
  /**
   * Called when the store or a key/priority/skip function fails.
   * @default logs through the framework (Fastify `request.log.error`, or `console.error` when the
   * app has no Fastify logger; Express, Koa and Hono `console.error`; Nest's `Logger`), in a few
   * lines: the first error of each distinct message with its stack (up to 10 messages), then a
   * count at most every 10 s. A function given here is called for every error.
   */
  onError?: (error: Error, req: Req) => void;
}

/**
 * A request's priority: a name from the shedder's `priorities`, most important first
 * (`'critical'`, `'normal'`, `'low'` by default), or a function of the request returning one. A
 * fixed name suits a route-level middleware (`priority: 'low'` on the reporting routes).
 */
export type Priority<Req> = string | ((req: Req) => string);

/** `concurrencyLimit()`: at most `limit` requests in flight per key (429 past it). */
export interface HttpConcurrencyOptions<Req>
  extends HttpGuardOptions<Req>,
    Partial<Omit<ConcurrencyLimiterOptions, 'onError'>> {
  /**
   * A limiter built elsewhere, to share it between middlewares or to give it its own `onError`
   * for failed releases. Instead of `limit`, `ttl`, `retryAfter`, `name` and `store`.
   */
  limiter?: ConcurrencyLimiter;
  /**
   * What the limit counts against. Returning `undefined` lets the request through unguarded.
   * @default byIp()
   */
  key?: KeyFunction<Req>;
  /**
   * Configuration warnings of the key (`byIp()` behind an untrusted proxy), each given once.
   * @default Fastify `app.log.warn` (`process.emitWarning` when the app has no Fastify logger),
   * Express and Koa `process.emitWarning`, Hono `console.warn`, Nest's `Logger`
   */
  onWarning?: (warning: SluiceWarning) => void;
}

/** `fleetShed()`: one in-flight budget across the fleet, shares reserved for important traffic (503). */
export interface HttpFleetShedOptions<Req>
  extends HttpGuardOptions<Req>,
    Partial<Omit<FleetShedderOptions, 'onError'>> {
  /**
   * A shedder built elsewhere (one per app is the usual case: the budget is global). Instead of
   * `budget`, `priorities`, `reserve`, `ttl`, `retryAfter`, `random`, `name` and `store`.
   */
  shedder?: FleetShedder;
  /** The request's priority. Required. */
  priority: Priority<Req>;
}

/** `utilizationShed()`: sheds the least important traffic while this process is overloaded (503). */
export interface HttpUtilizationShedOptions<Req> extends HttpGuardOptions<Req> {
  /**
   * The shedder. Required, and built by you: it runs a sampling timer you `close()` on shutdown,
   * and its `fractions()` are what you export as metrics. One per process.
   */
  shedder: UtilizationShedder;
  /** The request's priority. Required. */
  priority: Priority<Req>;
}

export const GUARD_OPTIONS = [
  'skip',
  'storeFailure',
  'onLimited',
  'onError',
] as const satisfies readonly (keyof HttpGuardOptions<unknown>)[];

/** Options that build the concurrency limiter (all but `limiter` replaced by it). */
export const CONCURRENCY_ENGINE = [
  'limiter',
  'limit',
  'ttl',
  'retryAfter',
  'name',
  'store',
] as const satisfies readonly (keyof HttpConcurrencyOptions<unknown>)[];

export const CONCURRENCY_OPTIONS = [
  ...GUARD_OPTIONS,
  ...CONCURRENCY_ENGINE,
  'key',
  'onWarning',
] as const satisfies readonly (keyof HttpConcurrencyOptions<unknown>)[];

/** Options that build the fleet shedder (all but `shedder` replaced by it). */
export const FLEET_ENGINE = [
  'shedder',
  ...FLEET_SHEDDER_OPTIONS,
] as const satisfies readonly (keyof HttpFleetShedOptions<unknown>)[];

export const FLEET_OPTIONS = [
  ...GUARD_OPTIONS,
  ...FLEET_ENGINE,
  'priority',
] as const satisfies readonly (keyof HttpFleetShedOptions<unknown>)[];

export const UTILIZATION_ENGINE = [
  'shedder',
] as const satisfies readonly (keyof HttpUtilizationShedOptions<unknown>)[];

export const UTILIZATION_OPTIONS = [
  ...GUARD_OPTIONS,
  ...UTILIZATION_ENGINE,
  'priority',
] as const satisfies readonly (keyof HttpUtilizationShedOptions<unknown>)[];

/** Compile-time check: an option added to an interface but not to its list is an error here. */
type AssertNever<T extends never> = T;
export type UnlistedGuardOptions = AssertNever<
  | Exclude<keyof HttpConcurrencyOptions<unknown>, (typeof CONCURRENCY_OPTIONS)[number]>
  | Exclude<keyof HttpFleetShedOptions<unknown>, (typeof FLEET_OPTIONS)[number]>
  | Exclude<keyof HttpUtilizationShedOptions<unknown>, (typeof UTILIZATION_OPTIONS)[number]>
>;
