import type { RateLimitControl } from '@sluice/core';
import {
  HttpLimiter,
  type HttpLimitOptions,
  RATE_LIMIT_FUNCTION_NAME,
  rateLimitLifecycle,
  withControl,
} from '@sluice/core/adapter';
import type { Context, MiddlewareHandler } from 'hono';
import { ACCESS_OPTIONS, type HonoAccessOptions, honoAccess } from './access.js';
import { honoDefaults } from './defaults.js';
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

/**
 * Hono middleware limiting requests with one or several layered limits: `app.use()` for every
 * route, or in a route's own handlers for that route.
 * @example
 * app.use(rateLimit({ name: 'burst', algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }));
 * app.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) }), login);
 */
/** The middleware, with `peek(c)`, `reset(c | key)` and `settle(c, actual)` for the app's own code. */
export type RateLimitMiddleware = MiddlewareHandler & RateLimitControl<Context>;

export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const limiter = new HttpLimiter<Context>('rateLimit', options, honoAccess(options), honoDefaults, [
    'handler',
    ...ACCESS_OPTIONS,
  ]);
  const middleware = honoMiddleware(
    (exchange) => rateLimitLifecycle(limiter, exchange),
    handlerOption(options.handler),
    RATE_LIMIT_FUNCTION_NAME,
  );
  return withControl(middleware, limiter);
}
