import { type CanActivate, type CustomDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { HttpLimiter, type HttpLimitOptions, type Lifecycle, rateLimitLifecycle } from '@sluice/core/adapter';
import { expressAccess } from '@sluice/express';
import type { Request } from 'express';
import { nestDefaults } from './defaults.js';
import { activate, nestExchange } from './exchange.js';

/** Options of `RateLimitGuard` and `@RateLimit()`: the shared options (Nest on Express). */
export type RateLimitOptions = HttpLimitOptions<Request>;

type Compiled = Lifecycle<ExecutionContext, boolean>;

/** Metadata keys of the decorators. */
export const RATE_LIMIT = 'sluice:rate-limit';
export const SKIP_RATE_LIMIT = 'sluice:skip-rate-limit';

function compile(where: string, options: RateLimitOptions): Compiled {
  const limiter = new HttpLimiter<Request>(where, options, expressAccess, nestDefaults);
  return rateLimitLifecycle(limiter, nestExchange);
}

/**
 * A controller's or a route handler's own limits, checked after the guard's global ones (class,
 * then method). The options are checked here, when the class is defined. Needs a
 * `RateLimitGuard` registered (globally or with `@UseGuards`), which applies them.
 * @example
 * \@Post('login')
 * \@RateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) })
 * login() {}
 */
export function RateLimit(options: RateLimitOptions): CustomDecorator<string> {
  return SetMetadata(RATE_LIMIT, compile('@RateLimit', options));
}

/** Exempts a controller or a route handler from the guard's global limits (its own `@RateLimit` still applies). */
export function SkipRateLimit(): CustomDecorator<string> {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}

const reflector = new Reflector();
// biome-ignore lint/complexity/noBannedTypes: Nest's handlers and classes are typed as Function.
const own = (target: Function, key: string): unknown => reflector.get(key, target);

/**
 * The Nest guard applying sluice rate limits: the global limits given here (optional), then the
 * controller's and the handler's `@RateLimit()`. Refused requests throw `RateLimitException`
 * (429 or 503, the problem body, RateLimit headers and `Retry-After` set). Nest on Express.
 * @example
 * app.useGlobalGuards(new RateLimitGuard({ name: 'burst', algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }));
 */
export class RateLimitGuard implements CanActivate {
  private readonly global: Compiled | undefined;

  constructor(options?: RateLimitOptions) {
    this.global = options === undefined ? undefined : compile('RateLimitGuard', options);
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const handler = context.getHandler();
    const type = context.getClass();
    const lifecycles: Compiled[] = [];
    if (
      this.global !== undefined &&
      own(handler, SKIP_RATE_LIMIT) !== true &&
      own(type, SKIP_RATE_LIMIT) !== true
    ) {
      lifecycles.push(this.global);
    }
    for (const target of [type, handler]) {
      const limits = own(target, RATE_LIMIT) as Compiled | undefined;
      if (limits !== undefined) lifecycles.push(limits);
    }
    return activate(lifecycles, context);
  }
}
