import {
  concurrencyGuard,
  fleetGuard,
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpUtilizationShedOptions,
  utilizationGuard,
} from '@sluice/core';
import type { Request, RequestHandler } from 'express';
import { expressAccess } from './access.js';
import { expressDefaults } from './defaults.js';
import { guardMiddleware } from './guard.js';
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
export interface ConcurrencyLimitOptions extends HttpConcurrencyOptions<Request>, ExpressGuardOptions {}
/** Options of `fleetShed()`. */
export interface FleetShedOptions extends HttpFleetShedOptions<Request>, ExpressGuardOptions {}
/** Options of `utilizationShed()`. */
export interface UtilizationShedOptions extends HttpUtilizationShedOptions<Request>, ExpressGuardOptions {}

const HANDLER = ['handler'] as const;

/**
 * Stripe's concurrent requests limiter as Express middleware: at most `limit` requests in flight
 * per key; past it, 429 with a short `Retry-After`. The lease is given back when the response
 * finishes, fails, or the client disconnects.
 * @example
 * app.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): RequestHandler {
  const guard = concurrencyGuard('concurrencyLimit', options, expressAccess, expressDefaults, HANDLER);
  return guardMiddleware(guard, handlerOption(options.handler), 'sluiceConcurrencyLimit');
}

/**
 * Stripe's fleet usage load shedder as Express middleware: one in-flight budget for every process
 * sharing the store, with shares reserved for the more important priorities; a request past its
 * priority's share gets 503 with a jittered `Retry-After`.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'normal') }));
 * app.use('/reports', fleetShed({ shedder: fleet, priority: 'low' }));
 */
export function fleetShed(options: FleetShedOptions): RequestHandler {
  const guard = fleetGuard('fleetShed', options, expressDefaults, HANDLER);
  return guardMiddleware(guard, handlerOption(options.handler), 'sluiceFleetShed');
}

/**
 * Stripe's worker utilization load shedder as Express middleware: while this process is
 * overloaded, the least important requests get 503, with a probability that ramps up slowly.
 * The most important priority is never shed. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'low') }));
 * process.on('SIGTERM', () => local.close());
 */
export function utilizationShed(options: UtilizationShedOptions): RequestHandler {
  const guard = utilizationGuard('utilizationShed', options, expressDefaults, HANDLER);
  return guardMiddleware(guard, handlerOption(options.handler), 'sluiceUtilizationShed');
}
