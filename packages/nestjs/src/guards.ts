import type { CanActivate, ExecutionContext } from '@nestjs/common';
import {
  concurrencyGuard,
  fleetGuard,
  guardLifecycle,
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpGuard,
  type HttpUtilizationShedOptions,
  type Lifecycle,
  utilizationGuard,
} from '@sluice/core/adapter';
import { expressAccess } from '@sluice/express';
import type { Request } from 'express';
import { nestDefaults } from './defaults.js';
import { activate, nestExchange } from './exchange.js';

/** Options of `ConcurrencyLimitGuard`. */
export type ConcurrencyLimitOptions = HttpConcurrencyOptions<Request>;
/** Options of `FleetShedGuard`. */
export type FleetShedOptions = HttpFleetShedOptions<Request>;
/** Options of `UtilizationShedGuard`. */
export type UtilizationShedOptions = HttpUtilizationShedOptions<Request>;

/** A guard over one compiled sluice guard: the lease is released when the response ends. */
abstract class LeaseGuard implements CanActivate {
  private readonly run: readonly Lifecycle<ExecutionContext, boolean>[];

  protected constructor(guard: HttpGuard<Request>) {
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
    super(concurrencyGuard('ConcurrencyLimitGuard', options, expressAccess, nestDefaults));
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
    super(fleetGuard('FleetShedGuard', options, nestDefaults));
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
    super(utilizationGuard('UtilizationShedGuard', options, nestDefaults));
  }
}
