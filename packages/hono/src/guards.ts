import {
  concurrencyGuard,
  fleetGuard,
  guardLifecycle,
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpGuard,
  type HttpUtilizationShedOptions,
  utilizationGuard,
} from '@sluice/core/adapter';
import type { Context, MiddlewareHandler } from 'hono';
import { ACCESS_OPTIONS, type HonoAccessOptions, honoAccess } from './access.js';
import { honoDefaults } from './defaults.js';
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
  extends HttpConcurrencyOptions<Context>,
    HonoGuardOptions,
    HonoAccessOptions {}
/** Options of `fleetShed()`. */
export interface FleetShedOptions extends HttpFleetShedOptions<Context>, HonoGuardOptions {}
/** Options of `utilizationShed()`. */
export interface UtilizationShedOptions extends HttpUtilizationShedOptions<Context>, HonoGuardOptions {}

const HANDLER = ['handler'] as const;

function guardMiddleware(guard: HttpGuard<Context>, handler: unknown, name: string): MiddlewareHandler {
  return honoMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(handler), name);
}

/**
 * `ConcurrencyLimiter` as Hono middleware: 429 past `limit` requests in flight per key; the
 * lease is given back when the response ends (on Node), or once the handlers after it have
 * returned (other runtimes).
 * @example
 * app.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): MiddlewareHandler {
  const guard = concurrencyGuard('concurrencyLimit', options, honoAccess(options), honoDefaults, [
    ...HANDLER,
    ...ACCESS_OPTIONS,
  ]);
  return guardMiddleware(guard, options.handler, 'sluiceConcurrencyLimit');
}

/**
 * `FleetShedder` as Hono middleware: 503 with a jittered `Retry-After` past the request's
 * priority's share of the fleet's in-flight budget.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (c) => (c.req.path.startsWith('/pay') ? 'critical' : 'normal') }));
 */
export function fleetShed(options: FleetShedOptions): MiddlewareHandler {
  const guard = fleetGuard('fleetShed', options, honoDefaults, HANDLER);
  return guardMiddleware(guard, options.handler, 'sluiceFleetShed');
}

/**
 * `UtilizationShedder` as Hono middleware: while this process is overloaded, 503 for the least
 * important requests. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (c) => (c.req.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export function utilizationShed(options: UtilizationShedOptions): MiddlewareHandler {
  const guard = utilizationGuard('utilizationShed', options, honoDefaults, HANDLER);
  return guardMiddleware(guard, options.handler, 'sluiceUtilizationShed');
}
