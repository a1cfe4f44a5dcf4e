import type { RateLimitControl } from '@sluice/core';
import {
  CONSOLE_DEFAULTS,
  HttpLimiter,
  type HttpLimitOptions,
  RATE_LIMIT_FUNCTION_NAME,
  rateLimitLifecycle,
  withControl,
} from '@sluice/core/adapter';
import type { Context, Middleware } from 'koa';
import { koaAccess } from './access.js';
import { handlerOption, koaMiddleware, type RefusalHandler } from './exchange.js';

/** Options of `rateLimit()`: the shared options and the refusal answer. */
export interface RateLimitOptions extends HttpLimitOptions<Context> {
  /**
   * Answers a refused request instead of the default RFC 9457 problem body: set `ctx.body`
   * (`ctx.status` is preset: 429 or 503). Called after the `RateLimit*` and `Retry-After` headers are set;
   * `ctx.state.rateLimit` holds the Decision.
   * @default a 429 or 503 `application/problem+json` response
   */
  handler?: RefusalHandler;
}

/**
 * Koa middleware limiting requests with one or several layered limits: `app.use()` for every
 * route, `router.use()` for a router's routes, or in a route's own middleware (@koa/router).
 * @example
 * app.use(rateLimit({ name: 'burst', algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }));
 * router.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) }), login);
 */
/** The middleware, with `peek(ctx)`, `reset(ctx | key)` and `settle(ctx, actual)` for the app's own code. */
export type RateLimitMiddleware = Middleware & RateLimitControl<Context>;

export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const limiter = new HttpLimiter<Context>('rateLimit', options, koaAccess, CONSOLE_DEFAULTS, ['handler']);
  const middleware = koaMiddleware(
    (exchange) => rateLimitLifecycle(limiter, exchange),
    handlerOption(options.handler),
    RATE_LIMIT_FUNCTION_NAME,
  );
  return withControl(middleware, limiter);
}
