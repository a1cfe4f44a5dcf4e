import { type CanActivate, type CustomDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { type Decision, ErrorCode, type RateLimitControl, SluiceError } from '@sluice/core';
import {
  type AdapterDefaults,
  booleanOption,
  CompiledLimiters,
  type HttpExchange,
  HttpLimiter,
  type HttpLimitOptions,
  type Lifecycle,
  type RequestAccessBase,
  rateLimitLifecycle,
} from '@sluice/core/adapter';
import { nestDefaults } from './defaults.js';
import { activate, assertHttp, nestExchange } from './exchange.js';
import { type NestRequest, nestAccess } from './request.js';

/**
 * Options of `RateLimitGuard` and `@RateLimit()`: the shared options, on Express or Fastify. `Req`
 * is your platform's request type when your functions name it (`skip: (req: Request) => …`).
 */
export type RateLimitOptions<Req = NestRequest> = HttpLimitOptions<Req>;

/** Options of `RateLimitGuard`: its global limits' options, and whether it has global limits. */
export interface RateLimitGuardOptions<Req = NestRequest> extends RateLimitOptions<Req> {
  /**
   * `true`: the guard's global limits apply to every handler it guards (its `limits` or
   * `algorithm`, or without them the default limit: 100 requests a minute per address, named
   * `'default'`). `false`: the guard has no global limits and applies only the controllers' and
   * handlers' `@RateLimit()`; it then takes no other option (`ERR_SLUICE_INVALID_OPTION`).
   * @default true
   */
  global?: boolean;
}

type Compiled = Lifecycle<ExecutionContext, boolean>;

/** Every limiter compiled (the guard's and each `@RateLimit()`), so `settle` finds those that admitted a request. */
const compiled = new CompiledLimiters<unknown>();

/** Metadata keys of the decorators. */
export const RATE_LIMIT = 'sluice:rate-limit';
export const SKIP_RATE_LIMIT = 'sluice:skip-rate-limit';

function compile<Req>(
  where: string,
  options: RateLimitOptions<Req>,
): { run: Compiled; limiter: HttpLimiter<Req> } {
  const access = nestAccess as RequestAccessBase<Req>;
  const limiter = new HttpLimiter<Req>(where, options, access, nestDefaults as AdapterDefaults<Req>);
  compiled.add(limiter as HttpLimiter<unknown>);
  const exchange = nestExchange as HttpExchange<ExecutionContext, Req, boolean>;
  return { run: rateLimitLifecycle(limiter, exchange), limiter };
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
export function RateLimit<Req = NestRequest>(options: RateLimitOptions<Req>): CustomDecorator<string> {
  return SetMetadata(RATE_LIMIT, compile('@RateLimit', options).run);
}

/** Exempts a controller or a route handler from the guard's global limits (its own `@RateLimit` still applies). */
export function SkipRateLimit(): CustomDecorator<string> {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}

const reflector = new Reflector();
// biome-ignore lint/complexity/noBannedTypes: Nest's handlers and classes are typed as Function.
const own = (target: Function, key: string): unknown => reflector.get(key, target);

/**
 * The Nest guard applying sluice rate limits: the global limits given here (without `limits` or
 * `algorithm`, the default limit: 100 requests a minute per address; `{ global: false }` for
 * none), then the controller's and the handler's `@RateLimit()`. Refused requests throw
 * `RateLimitException` (429 or 503, the problem body, RateLimit headers and `Retry-After` set).
 * Nest on Express or Fastify; a context that is not HTTP (GraphQL, WebSockets) is refused with
 * `ERR_SLUICE_UNSUPPORTED` unless `@SkipRateLimit()` leaves it no limit to apply.
 * @example
 * app.useGlobalGuards(new RateLimitGuard()); // 100 requests a minute per address
 * @example
 * app.useGlobalGuards(new RateLimitGuard({ name: 'burst', algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }));
 */
export class RateLimitGuard<Req = NestRequest> implements CanActivate, RateLimitControl<Req> {
  private readonly global: Compiled | undefined;
  private readonly limiter: HttpLimiter<Req> | undefined;

  constructor(options: RateLimitGuardOptions<Req> = {}) {
    const own = globalOptions(options);
    const compiled = own === undefined ? undefined : compile('RateLimitGuard', own);
    this.global = compiled?.run;
    this.limiter = compiled?.limiter;
  }

  /** What the guard's global limits hold for this request, without consuming (see `RateLimitControl`). */
  peek(req: Req): Promise<Decision | undefined> {
    return this.limiter?.peek(req) ?? noGlobal();
  }

  /** Forgets the global limits' state for this request's keys, or for one key. */
  reset(target: Req | string): Promise<void> {
    return this.limiter?.reset(target) ?? noGlobal();
  }

  /**
   * Settles a request to its actual cost on every sluice limit that admitted it (the guard's
   * global limits and the route's `@RateLimit()`); never rejects.
   */
  settle(req: Req, actual: number): Promise<void> {
    return compiled.settle(req, actual);
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
    // A handler with no limit to apply is passed by whatever its context (`@SkipRateLimit()` on a resolver).
    if (lifecycles.length === 0) return true;
    assertHttp(
      context,
      'RateLimitGuard',
      'put @SkipRateLimit() on that resolver or gateway (no @RateLimit() on it), or register the guard on HTTP controllers only (@UseGuards)',
    );
    return activate(lifecycles, context);
  }
}

/** The guard's global limits' options; `undefined` with `global: false`, which takes nothing else. */
function globalOptions<Req>(options: RateLimitGuardOptions<Req>): RateLimitOptions<Req> | undefined {
  // Anything but an object is left to the limiter's own error.
  if (options === null || typeof options !== 'object') return options as RateLimitOptions<Req>;
  const { global, ...own } = options;
  if (booleanOption('global', global ?? true)) return own;
  const stray = Object.keys(own).filter((option) => own[option as keyof typeof own] !== undefined);
  if (stray.length > 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `RateLimitGuard: global: false has no global limits, so ${stray.join(', ')} would never be used; give ${stray.length === 1 ? 'it' : 'them'} to @RateLimit(), or drop global: false`,
      { option: 'global', value: global },
    );
  }
  return undefined;
}

function noGlobal(): Promise<never> {
  return Promise.reject(
    new SluiceError(
      ErrorCode.MISSING_OPTION,
      'this RateLimitGuard was made with global: false, without global limits to read',
      { option: 'global' },
    ),
  );
}
