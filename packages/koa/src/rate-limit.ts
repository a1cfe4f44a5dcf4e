import type { RateLimitControl } from '@sluice/core';
import { type HttpLimitOptions, rateLimitLifecycle, rateLimitMiddleware } from '@sluice/core/adapter';
import type { Context, Middleware } from 'koa';
import { handlerOption, KOA, koaMiddleware, type RefusalHandler } from './exchange.js';

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

/** The middleware, with `peek(ctx)`, `reset(ctx | key)` and `settle(ctx, actual)` for the app's own code. */
export type RateLimitMiddleware = Middleware & RateLimitControl<Context>;

/**
 * Koa middleware limiting requests with one or several layered limits: `app.use()` for every
 * route, `router.use()` for a router's routes, or in a route's own middleware (@koa/router).
 * Without options, 100 requests a minute per client address (`slidingWindowCounter`, named
 * `'default'`); options without `limits`, `algorithm` or `name` (only a `store`, a `key`…) get
 * that limit too.
 * @example
 * app.use(rateLimit()); // 100 requests a minute per address
 * @example
 * app.use(rateLimit({ name: 'burst', algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }));
 * router.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) }), login);
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  return rateLimitMiddleware(KOA, options, (limiter, name) =>
    koaMiddleware((exchange) => rateLimitLifecycle(limiter, exchange), handlerOption(options.handler), name),
  );
}
