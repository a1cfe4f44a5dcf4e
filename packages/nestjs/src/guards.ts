import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type * as shared from '@sluice/core/adapter';
import { buildGuard, type GuardName, guardLifecycle, type Lifecycle } from '@sluice/core/adapter';
import { expressAccess } from '@sluice/express';
import type { Request } from 'express';
import { nestDefaults } from './defaults.js';
import { activate, nestExchange } from './exchange.js';

/** Options of `ConcurrencyLimitGuard`. */
export type ConcurrencyLimitOptions = shared.HttpConcurrencyOptions<Request>;
/** Options of `FleetShedGuard`. */
export type FleetShedOptions = shared.HttpFleetShedOptions<Request>;
/** Options of `UtilizationShedGuard`. */
export type UtilizationShedOptions = shared.HttpUtilizationShedOptions<Request>;

const NEST = { access: expressAccess, defaults: nestDefaults };

/** A guard over one compiled sluice guard: the lease is released when the response ends. */
abstract class LeaseGuard implements CanActivate {
  private readonly run: readonly Lifecycle<ExecutionContext, boolean>[];

  /** @param where the guard's class name, as its option errors give it */
  protected constructor(
    name: GuardName,
    options: shared.HttpGuardOptionsByName<Request>[GuardName],
    where: string,
  ) {
    const guard = buildGuard(name, options, NEST, where);
    this.run = [guardLifecycle(guard, nestExchange)];
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
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
export class ConcurrencyLimitGuard extends LeaseGuard {
  constructor(options: ConcurrencyLimitOptions) {
    super('concurrencyLimit', options, 'ConcurrencyLimitGuard');
  }
}

/**
 * Stripe's fleet usage load shedder as a Nest guard: one in-flight budget for every process
 * sharing the store, with shares reserved for the more important priorities; past a priority's
 * share, `RateLimitException` (503, jittered `Retry-After`).
 * @example
 * app.useGlobalGuards(new FleetShedGuard({ shedder: fleet, priority: (req) => (req.path.startsWith('/pay') ? 'critical' : 'normal') }));
 */
export class FleetShedGuard extends LeaseGuard {
  constructor(options: FleetShedOptions) {
    super('fleetShed', options, 'FleetShedGuard');
  }
}

/**
 * Stripe's worker utilization load shedder as a Nest guard: while this process is overloaded, the
 * least important requests get `RateLimitException` (503). No store, no lease.
 * @example
 * app.useGlobalGuards(new UtilizationShedGuard({ shedder: local, priority: () => 'normal' }));
 */
export class UtilizationShedGuard extends LeaseGuard {
  constructor(options: UtilizationShedOptions) {
    super('utilizationShed', options, 'UtilizationShedGuard');
  }
}
