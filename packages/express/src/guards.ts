import {
  CONSOLE_DEFAULTS,
  concurrencyGuard,
  fleetGuard,
  guardLifecycle,
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpGuard,
  type HttpUtilizationShedOptions,
  utilizationGuard,
} from '@sluice/core/adapter';
import type { Request, RequestHandler } from 'express';
import { expressAccess } from './access.js';
import { expressMiddleware } from './exchange.js';
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

const middleware = (guard: HttpGuard<Request>, handler: unknown, name: string): RequestHandler =>
  expressMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(handler), name);

/**
 * `ConcurrencyLimiter` as Express middleware: 429 past `limit` requests in flight per key; the
 * lease is given back when the response finishes, fails, or the client disconnects.
 * @example
 * app.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): RequestHandler {
  const guard = concurrencyGuard('concurrencyLimit', options, expressAccess, CONSOLE_DEFAULTS, HANDLER);
  return middleware(guard, options.handler, 'sluiceConcurrencyLimit');
}

/**
 * `FleetShedder` as Express middleware: 503 with a jittered `Retry-After` past the request's
 * priority's share of the fleet's in-flight budget.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'normal') }));
 * app.use('/reports', fleetShed({ shedder: fleet, priority: 'low' }));
 */
export function fleetShed(options: FleetShedOptions): RequestHandler {
  return middleware(
    fleetGuard('fleetShed', options, CONSOLE_DEFAULTS, HANDLER),
    options.handler,
    'sluiceFleetShed',
  );
}

/**
 * `UtilizationShedder` as Express middleware: while this process is overloaded, 503 for the least
 * important requests. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'low') }));
 * process.on('SIGTERM', () => local.close());
 */
export function utilizationShed(options: UtilizationShedOptions): RequestHandler {
  const guard = utilizationGuard('utilizationShed', options, CONSOLE_DEFAULTS, HANDLER);
  return middleware(guard, options.handler, 'sluiceUtilizationShed');
}
