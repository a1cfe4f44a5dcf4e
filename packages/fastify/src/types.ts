import type { Decision, RateLimitControl } from '@sluice/core';
import type { FastifyRateLimitRouteOptions } from './compat/options.js';
import type { PeerCheck } from './compat/peer-limit.js';
import type { SluiceHook } from './hook.js';
import type {
  AdaptiveConcurrencyGuardOptions,
  ConcurrencyLimitOptions,
  FleetShedOptions,
  SluiceOptions,
  UtilizationShedOptions,
} from './options.js';

/**
 * A route config's options object. Fastify infers a route's `config` type from the literal and
 * intersects it with `FastifyContextConfig`, so `rateLimit?: SluiceOptions | false` alone accepts
 * `rateLimit: true` (as `SluiceOptions & true`). Every object's `valueOf` returns an object and no
 * primitive's does, so this member refuses `true`, numbers and strings and costs objects nothing.
 * (The same intersection hides a misspelt option inside the object from the compiler; the plugin
 * refuses it by name when the route is registered, and `satisfies SluiceOptions` checks it.)
 */
export type RouteOptions<O> = O & { valueOf?: () => object };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Per-route limits: options that add to or override the global ones, or `false` to exempt the route. */
    rateLimit?: RouteOptions<SluiceOptions> | false;
    /** Per-route concurrency limit: options over the plugin's (a new `limit` gets its own limiter), or `false` to exempt the route. */
    concurrencyLimit?: RouteOptions<Partial<ConcurrencyLimitOptions>> | false;
    /** Per-route fleet shedding: options over the plugin's (`{ priority: 'low' }`), or `false` to exempt the route. */
    fleetShed?: RouteOptions<Partial<FleetShedOptions>> | false;
    /** Per-route utilization shedding: options over the plugin's (`{ priority: 'low' }`), or `false` to exempt the route. */
    utilizationShed?: RouteOptions<Partial<UtilizationShedOptions>> | false;
    /** Per-route adaptive concurrency: options over the plugin's (`{ priority: 'low' }` shares its limit), or `false` to exempt the route. */
    adaptiveConcurrency?: RouteOptions<Partial<AdaptiveConcurrencyGuardOptions>> | false;
  }
  interface FastifyRequest {
    /** The rate-limit Decision of the last sluice hook that limited this request. */
    rateLimit: Decision | undefined;
  }
  interface FastifyInstance {
    /**
     * A hook applying these limits, for a route's `onRequest` or `preHandler`; it carries
     * `peek(request)`, `reset(request | key)` and `settle(request, actual)` for them.
     */
    rateLimit(options: SluiceOptions): SluiceHook & RateLimitControl<FastifyRequest>;
    /**
     * The plugin's own limits from the app's code: `peek(request)` and `reset(request | key)`
     * (they reject when the plugin was registered without limits), and `settle(request, actual)`,
     * which settles every sluice limit that admitted the request (the plugin's, its route's, a
     * decorator's).
     */
    rateLimits: RateLimitControl<FastifyRequest>;
    /**
     * With `fromFastifyRateLimit` registered: @fastify/rate-limit's check for a handler's own use,
     * `(request, { increment })` answering `{ isAllowed, key, max, remaining, ttl, isExceeded… }`
     * (`increment: false` reads without counting).
     */
    createRateLimit(
      options?: FastifyRateLimitRouteOptions,
    ): (request: FastifyRequest, call?: { increment?: boolean }) => Promise<PeerCheck>;
    /** A hook applying this concurrency limit, for a route's `onRequest` or `preHandler`. */
    concurrencyLimit(options: ConcurrencyLimitOptions): SluiceHook;
    /** A hook applying this fleet shedder, for a route's `onRequest` or `preHandler`. */
    fleetShed(options: FleetShedOptions): SluiceHook;
    /** A hook applying this utilization shedder, for a route's `onRequest` or `preHandler`. */
    utilizationShed(options: UtilizationShedOptions): SluiceHook;
    /** A hook applying this adaptive concurrency limit, for a route's `onRequest` or `preHandler`. */
    adaptiveConcurrency(options: AdaptiveConcurrencyGuardOptions): SluiceHook;
  }
}
