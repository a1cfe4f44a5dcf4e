import type * as shared from '@sluice/core/adapter';
import { guardLifecycle, guardMiddlewares, type HttpGuard } from '@sluice/core/adapter';
import type { Context, MiddlewareHandler } from 'hono';
import type { HonoAccessOptions } from './access.js';
import { honoAdapter } from './defaults.js';
import { handlerOption, honoMiddleware, type RefusalHandler } from './exchange.js';

/** The Hono-only option of every guard. */
interface HonoGuardOptions {
  /**
   * Answers a refused request instead of the default RFC 9457 problem body: return the
   * `Response`. Called after `Retry-After` is set with `c.header`.
   * @default a 429 (concurrency) or 503 (shed) `application/problem+json` response
   */
  handler?: RefusalHandler;
}

/** Options of `concurrencyLimit()`. */
export interface ConcurrencyLimitOptions
  extends shared.HttpConcurrencyOptions<Context>,
    HonoGuardOptions,
    HonoAccessOptions {}
/** Options of `fleetShed()`. */
export interface FleetShedOptions extends shared.HttpFleetShedOptions<Context>, HonoGuardOptions {}
/** Options of `utilizationShed()`. */
export interface UtilizationShedOptions
  extends shared.HttpUtilizationShedOptions<Context>,
    HonoGuardOptions {}
/** Options of `adaptiveConcurrency()`. */
export interface AdaptiveConcurrencyGuardOptions
  extends shared.HttpAdaptiveConcurrencyOptions<Context>,
    HonoGuardOptions {}

const middleware = (guard: HttpGuard<Context>, options: HonoGuardOptions, name: string): MiddlewareHandler =>
  honoMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(options.handler), name);

// The shedders read no request address: the default access, never used by them.
const guards = guardMiddlewares<Context, HonoGuardOptions, MiddlewareHandler>(
  honoAdapter(undefined),
  middleware,
);

/**
 * `ConcurrencyLimiter` as Hono middleware: 429 past `limit` requests in flight per key; the
 * lease is given back when the response ends (on Node), or once the handlers after it have
 * returned (other runtimes).
 * @example
 * app.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): MiddlewareHandler {
  // Its key reads the client address: the Hono access options are this guard's own.
  return guardMiddlewares(honoAdapter(options), middleware).concurrencyLimit(options);
}

/**
 * `FleetShedder` as Hono middleware: 503 with a jittered `Retry-After` past the request's
 * priority's share of the fleet's in-flight budget.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (c) => (c.req.path.startsWith('/pay') ? 'critical' : 'normal') }));
 */
export const fleetShed: (options: FleetShedOptions) => MiddlewareHandler = guards.fleetShed;

/**
 * `UtilizationShedder` as Hono middleware: while this process is overloaded, 503 for the least
 * important requests. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (c) => (c.req.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export const utilizationShed: (options: UtilizationShedOptions) => MiddlewareHandler = guards.utilizationShed;

/**
 * `AdaptiveConcurrency` as Hono middleware: a concurrency limit found from latency (Vegas by
 * default), 503 with a jittered `Retry-After` past it or past the request's partition's share.
 * The lease is given back when the response ends on Node (its latency, or a drop for a 503 or
 * 504, or the client gone), or once the handlers after it have returned (other runtimes).
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: gradient2(), partitions: { critical: 0.8, low: 0.2 } });
 * app.use(adaptiveConcurrency({ limiter, priority: (c) => (c.req.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export const adaptiveConcurrency: (options: AdaptiveConcurrencyGuardOptions) => MiddlewareHandler =
  guards.adaptiveConcurrency;
