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
import type { Context, Middleware } from 'koa';
import { koaAccess } from './access.js';
import { handlerOption, koaMiddleware, type RefusalHandler } from './exchange.js';

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
export interface ConcurrencyLimitOptions extends HttpConcurrencyOptions<Context>, KoaGuardOptions {}
/** Options of `fleetShed()`. */
export interface FleetShedOptions extends HttpFleetShedOptions<Context>, KoaGuardOptions {}
/** Options of `utilizationShed()`. */
export interface UtilizationShedOptions extends HttpUtilizationShedOptions<Context>, KoaGuardOptions {}

const HANDLER = ['handler'] as const;

function guardMiddleware(guard: HttpGuard<Context>, handler: unknown, name: string): Middleware {
  return koaMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(handler), name);
}

/**
 * `ConcurrencyLimiter` as Koa middleware: 429 past `limit` requests in flight per key; the
 * lease is given back when the response ends, however it ends (sent, failed, or the client left).
 * @example
 * router.post('/exports', concurrencyLimit({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }), runExport);
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): Middleware {
  const guard = concurrencyGuard('concurrencyLimit', options, koaAccess, CONSOLE_DEFAULTS, HANDLER);
  return guardMiddleware(guard, options.handler, 'sluiceConcurrencyLimit');
}

/**
 * `FleetShedder` as Koa middleware: 503 with a jittered `Retry-After` past the request's
 * priority's share of the fleet's in-flight budget.
 * @example
 * const fleet = new FleetShedder({ budget: 400, store: redisStore });
 * app.use(fleetShed({ shedder: fleet, priority: (ctx) => (ctx.path.startsWith('/pay') ? 'critical' : 'normal') }));
 */
export function fleetShed(options: FleetShedOptions): Middleware {
  const guard = fleetGuard('fleetShed', options, CONSOLE_DEFAULTS, HANDLER);
  return guardMiddleware(guard, options.handler, 'sluiceFleetShed');
}

/**
 * `UtilizationShedder` as Koa middleware: while this process is overloaded, 503 for the least
 * important requests. No store, no lease.
 * @example
 * const local = new UtilizationShedder();
 * app.use(utilizationShed({ shedder: local, priority: (ctx) => (ctx.path.startsWith('/pay') ? 'critical' : 'low') }));
 */
export function utilizationShed(options: UtilizationShedOptions): Middleware {
  const guard = utilizationGuard('utilizationShed', options, CONSOLE_DEFAULTS, HANDLER);
  return guardMiddleware(guard, options.handler, 'sluiceUtilizationShed');
}
