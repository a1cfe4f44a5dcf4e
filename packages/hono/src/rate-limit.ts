import type { RateLimitControl } from '@sluice/core';
import { type HttpLimitOptions, rateLimitLifecycle, rateLimitMiddleware } from '@sluice/core/adapter';
import type { Context, MiddlewareHandler } from 'hono';
import type { HonoAccessOptions } from './access.js';
import { honoAdapter } from './defaults.js';
import { handlerOption, honoMiddleware, type RefusalHandler } from './exchange.js';

/** Options of `rateLimit()`: the shared options, the client address, and the refusal answer. */
export interface RateLimitOptions extends HttpLimitOptions<Context>, HonoAccessOptions {
  /**
   * Answers a refused request instead of the default RFC 9457 problem body: return the
   * `Response`. Called after the `RateLimit*` and `Retry-After` headers are set with `c.header`
   * (a response built with `c.json()`/`c.body()` carries them); `c.get('rateLimit')` holds the
   * Decision.
   * @default a 429 or 503 `application/problem+json` response
   */
  handler?: RefusalHandler;
}

/** The middleware, with `peek(c)`, `reset(c | key)` and `settle(c, actual)` for the app's own code. */
export type RateLimitMiddleware = MiddlewareHandler & RateLimitControl<Context>;

/**
 * Hono middleware limiting requests with one or several layered limits: `app.use()` for every
 * route, or in a route's own handlers for that route.
 * Without options, 100 requests a minute per client address (`slidingWindowCounter`, named
 * `'default'`); options without `limits`, `algorithm` or `name` (only a `store`, a `key`…) get
 * that limit too.
 * @example
 * app.use(rateLimit()); // 100 requests a minute per address
 * @example
 * app.use(rateLimit({ name: 'burst', algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }));
 * app.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) }), login);
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  return rateLimitMiddleware(honoAdapter(options), options, (limiter, name) =>
    honoMiddleware((exchange) => rateLimitLifecycle(limiter, exchange), handlerOption(options.handler), name),
  );
}
