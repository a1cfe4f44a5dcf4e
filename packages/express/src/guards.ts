import type * as shared from '@sluice/core/adapter';
import { guardLifecycle, guardMiddlewares } from '@sluice/core/adapter';
import type { Request, RequestHandler } from 'express';
import { EXPRESS, expressMiddleware } from './exchange.js';
import { handlerOption, type RefusalHandler } from './refuse.js';

/** The Express-only option of every guard. */
interface ExpressGuardOptions {
  /**
   * Answers a refused request instead of the default RFC 9457 problem body. Called after
   * `Retry-After` is set. It must end the response (or call `next`).
   * @default a 429 (concurrency) or 503 (shed) `application/problem+json` response
   */
  handler?: RefusalHandler;
}

/** Options of `concurrencyLimit()`. */
export interface ConcurrencyLimitOptions
  extends shared.HttpConcurrencyOptions<Request>,
    ExpressGuardOptions {}
/** Options of `fleetShed()`. */
export interface FleetShedOptions extends shared.HttpFleetShedOptions<Request>, ExpressGuardOptions {}
/** Options of `utilizationShed()`. */
export interface UtilizationShedOptions
  extends shared.HttpUtilizationShedOptions<Request>,
    ExpressGuardOptions {}
/** Options of `adaptiveConcurrency()`. */
export interface AdaptiveConcurrencyGuardOptions
  extends shared.HttpAdaptiveConcurrencyOptions<Request>,
    ExpressGuardOptions {}

const guards = guardMiddlewares<Request, ExpressGuardOptions, RequestHandler>(
  EXPRESS,
  (guard, options, name) =>
    expressMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(options.handler), name),
);

/**
 * `ConcurrencyLimiter` as Express middleware: 429 past `limit` requests in flight per key; the
 * lease is given back when the response finishes, fails, or the client disconnects.
 * @example
 * app.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export const concurrencyLimit: (options: ConcurrencyLimitOptions) => RequestHandler = guards.concurrencyLimit;

/**
 * `FleetShedder` as Express middleware: 503 with a jittered `Retry-After` past the request's
 * priority's share of the fleet's in-flight budget.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'normal') }));
 * app.use('/reports', fleetShed({ shedder: fleet, priority: 'low' }));
 */
export const fleetShed: (options: FleetShedOptions) => RequestHandler = guards.fleetShed;

/**
 * `UtilizationShedder` as Express middleware: while this process is overloaded, 503 for the least
 * important requests. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'low') }));
 * process.on('SIGTERM', () => local.close());
 */
export const utilizationShed: (options: UtilizationShedOptions) => RequestHandler = guards.utilizationShed;

/**
 * `AdaptiveConcurrency` as Express middleware: a concurrency limit found from latency (Vegas by
 * default), 503 with a jittered `Retry-After` past it or past the request's partition's share.
 * The lease is given back when the response finishes (its latency, or a drop for a 503 or 504)
 * or the client disconnects (a drop).
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: gradient2(), partitions: { critical: 0.8, low: 0.2 } });
 * app.use(adaptiveConcurrency({ limiter, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export const adaptiveConcurrency: (options: AdaptiveConcurrencyGuardOptions) => RequestHandler =
  guards.adaptiveConcurrency;
