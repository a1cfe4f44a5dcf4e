import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type * as shared from '@sluice/core/adapter';
import {
  type AdapterDefaults,
  buildGuard,
  type GuardName,
  guardLifecycle,
  type Lifecycle,
  type RequestAccessBase,
} from '@sluice/core/adapter';
import { nestDefaults } from './defaults.js';
import { activate, assertHttp, nestExchange } from './exchange.js';
import { type NestRequest, nestAccess } from './request.js';

/** Options of `ConcurrencyLimitGuard`; `Req` is your platform's request type, if your functions name it. */
export type ConcurrencyLimitOptions<Req = NestRequest> = shared.HttpConcurrencyOptions<Req>;
/** Options of `FleetShedGuard`. */
export type FleetShedOptions<Req = NestRequest> = shared.HttpFleetShedOptions<Req>;
/** Options of `UtilizationShedGuard`. */
export type UtilizationShedOptions<Req = NestRequest> = shared.HttpUtilizationShedOptions<Req>;
/** Options of `AdaptiveConcurrencyGuard`. */
export type AdaptiveConcurrencyGuardOptions<Req = NestRequest> = shared.HttpAdaptiveConcurrencyOptions<Req>;

/** A guard over one compiled sluice guard: the lease is released when the response ends. */
abstract class LeaseGuard<Req> implements CanActivate {
  private readonly run: readonly Lifecycle<ExecutionContext, boolean>[];

  /** @param where the guard's class name, as its option errors give it */
  protected constructor(
    name: GuardName,
    options: shared.HttpGuardOptionsByName<Req>[GuardName],
    private readonly where: string,
  ) {
    const adapter = {
      access: nestAccess as RequestAccessBase<Req>,
      defaults: nestDefaults as AdapterDefaults<Req>,
    };
    const guard = buildGuard(name, options, adapter, where);
    this.run = [guardLifecycle(guard, nestExchange as shared.HttpExchange<ExecutionContext, Req, boolean>)];
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    assertHttp(
      context,
      this.where,
      `apply it to HTTP controllers with @UseGuards rather than globally in an app that also serves such contexts`,
    );
    return activate(this.run, context);
  }
}

/**
 * Stripe's concurrent requests limiter as a Nest guard: at most `limit` requests in flight per
 * key; past it, `RateLimitException` (429, short `Retry-After`). The lease is given back when the
 * response ends, however it ends.
 * @example
 * \@UseGuards(new ConcurrencyLimitGuard({ limit: 2, key: byToken(), name: 'exports', ttl: '5m' }))
 */
export class ConcurrencyLimitGuard<Req = NestRequest> extends LeaseGuard<Req> {
  constructor(options: ConcurrencyLimitOptions<Req>) {
    super('concurrencyLimit', options, 'ConcurrencyLimitGuard');
  }
}

/**
 * Stripe's fleet usage load shedder as a Nest guard: one in-flight budget for every process
 * sharing the store, with shares reserved for the more important priorities; past a priority's
 * share, `RateLimitException` (503, jittered `Retry-After`).
 * @example
 * app.useGlobalGuards(new FleetShedGuard({ shedder: fleet, priority: (req) => (req.url.startsWith('/pay') ? 'critical' : 'normal') }));
 */
export class FleetShedGuard<Req = NestRequest> extends LeaseGuard<Req> {
  constructor(options: FleetShedOptions<Req>) {
    super('fleetShed', options, 'FleetShedGuard');
  }
}

/**
 * Stripe's worker utilization load shedder as a Nest guard: while this process is overloaded, the
 * least important requests get `RateLimitException` (503). No store, no lease.
 * @example
 * app.useGlobalGuards(new UtilizationShedGuard({ shedder: local, priority: () => 'normal' }));
 */
export class UtilizationShedGuard<Req = NestRequest> extends LeaseGuard<Req> {
  constructor(options: UtilizationShedOptions<Req>) {
    super('utilizationShed', options, 'UtilizationShedGuard');
  }
}

/**
 * `AdaptiveConcurrency` as a Nest guard: a concurrency limit found from latency (Vegas by
 * default); past it, or past the request's partition's share, `RateLimitException` (503,
 * jittered `Retry-After`). The lease is given back when the response ends: its latency, or a drop
 * (a 503 or 504, the client gone). One limiter for the app: give the guards of several
 * controllers the same `limiter`.
 * @example
 * const limiter = new AdaptiveConcurrency({ partitions: { critical: 0.8, low: 0.2 } });
 * app.useGlobalGuards(new AdaptiveConcurrencyGuard({ limiter, priority: (req) => (req.url.startsWith('/pay') ? 'critical' : 'low') }));
 */
export class AdaptiveConcurrencyGuard<Req = NestRequest> extends LeaseGuard<Req> {
  constructor(options: AdaptiveConcurrencyGuardOptions<Req>) {
    super('adaptiveConcurrency', options, 'AdaptiveConcurrencyGuard');
  }
}
