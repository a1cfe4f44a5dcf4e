import { ADAPTIVE_ENGINE, adaptiveGuard, type HttpAdaptiveConcurrencyOptions } from './adaptive-guard.js';
import { type RateLimitControl, withControl } from './control.js';
import {
  CONCURRENCY_ENGINE,
  FLEET_ENGINE,
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpUtilizationShedOptions,
  UTILIZATION_ENGINE,
} from './guard-options.js';
import { concurrencyGuard, fleetGuard, type GuardName, type HttpGuard, utilizationGuard } from './guards.js';
import { guardFunctionName, RATE_LIMIT_FUNCTION_NAME } from './middleware-name.js';
import type { HttpLimitOptions } from './options.js';
import { HttpLimiter } from './rate-limit.js';
import type { AdapterDefaults, RequestAccessBase } from './reporter.js';

/** Each guard's shared options, by its name. */
export interface HttpGuardOptionsByName<Req> {
  concurrencyLimit: HttpConcurrencyOptions<Req>;
  fleetShed: HttpFleetShedOptions<Req>;
  utilizationShed: HttpUtilizationShedOptions<Req>;
  adaptiveConcurrency: HttpAdaptiveConcurrencyOptions<Req>;
}

/** Each guard's engine options (the instance option first), by its name: what a built engine replaces. */
export const GUARD_ENGINES: { readonly [G in GuardName]: readonly string[] } = {
  concurrencyLimit: CONCURRENCY_ENGINE,
  fleetShed: FLEET_ENGINE,
  utilizationShed: UTILIZATION_ENGINE,
  adaptiveConcurrency: ADAPTIVE_ENGINE,
};

/** What the middleware factories (`buildGuard`, `guardMiddlewares`, `rateLimitMiddleware`) need of an adapter. */
export interface MiddlewareAdapter<Req> {
  /** How keys read the adapter's request (of the guards, only the concurrency limit has a key). */
  readonly access: RequestAccessBase<Req>;
  readonly defaults: AdapterDefaults<Req>;
  /** The adapter's own option names (`handler`, `hook`), accepted beside the shared ones. */
  readonly options?: readonly string[];
}

/**
 * One guard, by its name, for an adapter: the factory an adapter's `concurrencyLimit()`,
 * `fleetShed()`, `utilizationShed()` and `adaptiveConcurrency()` share.
 * @param where the name its option errors give (`'fleetShed'`, `'FleetShedGuard'`)
 */
export function buildGuard<Req, G extends GuardName>(
  name: G,
  options: HttpGuardOptionsByName<Req>[G],
  adapter: MiddlewareAdapter<Req>,
  where: string = name,
): HttpGuard<Req> {
  const own = adapter.options ?? [];
  if (name === 'concurrencyLimit') {
    const concurrency = options as HttpConcurrencyOptions<Req>;
    return concurrencyGuard(where, concurrency, adapter.access, adapter.defaults, own);
  }
  if (name === 'fleetShed')
    return fleetGuard(where, options as HttpFleetShedOptions<Req>, adapter.defaults, own);
  if (name === 'adaptiveConcurrency') {
    return adaptiveGuard(where, options as HttpAdaptiveConcurrencyOptions<Req>, adapter.defaults, own);
  }
  return utilizationGuard(where, options as HttpUtilizationShedOptions<Req>, adapter.defaults, own);
}

/**
 * An adapter's `concurrencyLimit()`, `fleetShed()` and `utilizationShed()`, each a guard built by
 * `buildGuard` and made into the framework's middleware by `middleware` (which runs
 * `guardLifecycle` over the adapter's exchange and reads the adapter's own options, `Own`).
 * @example
 * const guards = guardMiddlewares<Request, ExpressGuardOptions, RequestHandler>(EXPRESS, (guard, options, name) =>
 *   expressMiddleware((exchange) => guardLifecycle(guard, exchange), handlerOption(options.handler), name));
 */
export function guardMiddlewares<Req, Own, M>(
  adapter: MiddlewareAdapter<Req>,
  middleware: (guard: HttpGuard<Req>, options: Own, name: string) => M,
): { readonly [G in GuardName]: (options: HttpGuardOptionsByName<Req>[G] & Own) => M } {
  const factory =
    <G extends GuardName>(name: G) =>
    (options: HttpGuardOptionsByName<Req>[G] & Own): M =>
      middleware(buildGuard(name, options, adapter), options, guardFunctionName(name));
  return {
    concurrencyLimit: factory('concurrencyLimit'),
    fleetShed: factory('fleetShed'),
    utilizationShed: factory('utilizationShed'),
    adaptiveConcurrency: factory('adaptiveConcurrency'),
  };
}

/**
 * An adapter's `rateLimit()`: the limiter compiled from `options` (its errors name `rateLimit`),
 * made into the framework's middleware by `middleware` (which runs `rateLimitLifecycle` over the
 * adapter's exchange and reads the adapter's own options), named `sluiceRateLimit`, carrying
 * `peek`, `reset` and `settle` for the app.
 * @example
 * rateLimitMiddleware(EXPRESS, options, (limiter, name) =>
 *   expressMiddleware((exchange) => rateLimitLifecycle(limiter, exchange), handlerOption(options.handler), name));
 */
export function rateLimitMiddleware<Req, M extends object>(
  adapter: MiddlewareAdapter<Req>,
  options: HttpLimitOptions<Req>,
  middleware: (limiter: HttpLimiter<Req>, name: string) => M,
): M & RateLimitControl<Req> {
  const limiter = new HttpLimiter<Req>(
    'rateLimit',
    options,
    adapter.access,
    adapter.defaults,
    adapter.options,
  );
  return withControl(middleware(limiter, RATE_LIMIT_FUNCTION_NAME), limiter);
}
