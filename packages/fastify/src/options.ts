import type { Decision } from '@sluice/core';
import type {
  HttpAdaptiveConcurrencyOptions,
  HttpConcurrencyOptions,
  HttpFleetShedOptions,
  HttpLimitOptions,
  HttpUtilizationShedOptions,
} from '@sluice/core/adapter';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The Fastify-only options of every sluice hook: where it runs and how it refuses. */
export interface FastifyHookOptions {
  /**
   * The hook it runs in. `'onRequest'` refuses before the body is read or parsed;
   * `'preHandler'` runs after authentication hooks and validation (so keys and priorities can
   * read `request.user`).
   * @default 'onRequest'
   */
  hook?: 'onRequest' | 'preHandler';
  /**
   * Answers a refused request instead of the default RFC 9457 problem body. Called after the
   * `RateLimit*` (rate limits only) and `Retry-After` headers are set; the status is preset (429
   * or 503). Its return value, if the reply was not sent, is sent as the payload.
   * @default a 429 or 503 `application/problem+json` reply
   */
  handler?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown;
}

/** Options of the rate limits: the plugin's, `config.rateLimit` on a route, and `app.rateLimit()`. */
export interface SluiceOptions extends HttpLimitOptions<FastifyRequest>, FastifyHookOptions {}

/** Options of `concurrencyLimit`: the plugin option, `config.concurrencyLimit` and `app.concurrencyLimit()`. */
export interface ConcurrencyLimitOptions extends HttpConcurrencyOptions<FastifyRequest>, FastifyHookOptions {}
/** Options of `fleetShed`: the plugin option, `config.fleetShed` and `app.fleetShed()`. */
export interface FleetShedOptions extends HttpFleetShedOptions<FastifyRequest>, FastifyHookOptions {}
/** Options of `utilizationShed`: the plugin option, `config.utilizationShed` and `app.utilizationShed()`. */
export interface UtilizationShedOptions
  extends HttpUtilizationShedOptions<FastifyRequest>,
    FastifyHookOptions {}

/** Options of `adaptiveConcurrency`: the plugin option, `config.adaptiveConcurrency` and `app.adaptiveConcurrency()`. */
export interface AdaptiveConcurrencyGuardOptions
  extends HttpAdaptiveConcurrencyOptions<FastifyRequest>,
    FastifyHookOptions {}

/** The guards, by the name of their plugin option, route config and decorator. */
export interface GuardOptionsByName {
  concurrencyLimit: ConcurrencyLimitOptions;
  fleetShed: FleetShedOptions;
  utilizationShed: UtilizationShedOptions;
  adaptiveConcurrency: AdaptiveConcurrencyGuardOptions;
}

/** The plugin's options: the global rate limits, and the guards applied to every route. */
export interface SluicePluginOptions extends SluiceOptions {
  /**
   * `true`: the plugin's rate limit applies to every route registered after it (its `limits` or
   * `algorithm`, or without them the default limit: 100 requests a minute per address, named
   * `'default'`). `false`: the plugin sets up no rate limit of its own; only routes with a
   * `config.rateLimit` (their limits, or the default limit for `{}`) and `app.rateLimit()` hooks
   * are limited, with the plugin's other options (`store`, `headers`…) as their defaults. With
   * `false`, the plugin takes no `limits`, `algorithm`, `key`, `name`, `enforce` or `block`
   * (`ERR_SLUICE_INVALID_OPTION`). The guards (`concurrencyLimit`…) are not concerned.
   * @default true
   */
  global?: boolean;
  /**
   * At most `limit` requests in flight per key on every route (429 past it). Inline options share
   * the plugin's `store` unless they bring their own.
   * @default none
   */
  concurrencyLimit?: ConcurrencyLimitOptions;
  /** The fleet usage load shedder on every route (503 past a priority's share). @default none */
  fleetShed?: FleetShedOptions;
  /** The worker utilization load shedder on every route (503 while overloaded). @default none */
  utilizationShed?: UtilizationShedOptions;
  /**
   * A concurrency limit found from latency on every route (503 past it), with priority
   * partitions. Routes' `config.adaptiveConcurrency` without a limiter of their own share its limit.
   * @default none
   */
  adaptiveConcurrency?: AdaptiveConcurrencyGuardOptions;
}

/** The hooks' own option names, beside the shared ones. */
export const FASTIFY_OPTIONS = ['hook', 'handler'] as const satisfies readonly (keyof FastifyHookOptions)[];

/** The plugin's own option names, beside the hooks' and the guards'. */
export const PLUGIN_OPTIONS = ['global'] as const satisfies readonly (keyof SluicePluginOptions)[];

/**
 * The guard names, in the order their hooks run: shedders first, so a shed request costs no lease
 * or quota; the adaptive limit after the per-key concurrency limit, so it measures admitted work.
 */
export const GUARD_NAMES = [
  'utilizationShed',
  'fleetShed',
  'concurrencyLimit',
  'adaptiveConcurrency',
] as const satisfies readonly (keyof GuardOptionsByName)[];
