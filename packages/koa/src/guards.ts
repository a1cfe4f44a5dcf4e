import type * as shared from '@sluice/core/adapter';
import { guardLifecycle, guardMiddlewares } from '@sluice/core/adapter';
import type { Context, Middleware } from 'koa';
import { handlerOption, KOA, koaMiddleware, type RefusalHandler } from './exchange.js';

/** The Koa-only option of every guard. */
interface KoaGuardOptions {
  /**
   * Answers a refused request instead of the default RFC 9457 problem body: set `ctx.body`
   * (`ctx.status` is preset: 429 or 503). Called after `Retry-After` is set.
   * @default a 429 (concurrency) or 503 (shed) `application/problem+json` response
   */
  handler?: RefusalHandler;
}

/** Options of `concurrencyLimit()`. */
export interface ConcurrencyLimitOptions extends shared.HttpConcurrencyOptions<Context>, KoaGuardOptions {}
/** Options of `fleetShed()`. */
export interface FleetShedOptions extends shared.HttpFleetShedOptions<Context>, KoaGuardOptions {}
/** Options of `utilizationShed()`. */
export interface UtilizationShedOptions extends shared.HttpUtilizationShedOptions<Context>, KoaGuardOptions {}
/** Options of `adaptiveConcurrency()`. */
export interface AdaptiveConcurrencyGuardOptions
  extends shared.HttpAdaptiveConcurrencyOptions<Context>,
    KoaGuardOptions {}

const guards = guardMiddlewares<Context, KoaGuardOptions, Middleware>(KOA, (guard, options, name) =>
  koaMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(options.handler), name),
);

/**
 * `ConcurrencyLimiter` as Koa middleware: 429 past `limit` requests in flight per key; the
 * lease is given back when the response ends, however it ends (sent, failed, or the client left).
 * @example
 * router.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export const concurrencyLimit: (options: ConcurrencyLimitOptions) => Middleware = guards.concurrencyLimit;

/**
 * `FleetShedder` as Koa middleware: 503 with a jittered `Retry-After` past the request's
 * priority's share of the fleet's in-flight budget.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (ctx) => (ctx.path.startsWith('/pay') ? 'critical' : 'normal') }));
 */
export const fleetShed: (options: FleetShedOptions) => Middleware = guards.fleetShed;

/**
 * `UtilizationShedder` as Koa middleware: while this process is overloaded, 503 for the least
 * important requests. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (ctx) => (ctx.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export const utilizationShed: (options: UtilizationShedOptions) => Middleware = guards.utilizationShed;

/**
 * `AdaptiveConcurrency` as Koa middleware: a concurrency limit found from latency (Vegas by
 * default), 503 with a jittered `Retry-After` past it or past the request's partition's share.
 * The lease is given back when the response ends (its latency, or a drop for a 503 or 504) or the
 * client leaves (a drop).
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: gradient2(), partitions: { critical: 0.8, low: 0.2 } });
 * app.use(adaptiveConcurrency({ limiter, priority: (ctx) => (ctx.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export const adaptiveConcurrency: (options: AdaptiveConcurrencyGuardOptions) => Middleware =
  guards.adaptiveConcurrency;
