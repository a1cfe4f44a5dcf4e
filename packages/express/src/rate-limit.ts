import type { RateLimitControl } from '@sluice/core';
import { type HttpLimitOptions, rateLimitLifecycle, rateLimitMiddleware } from '@sluice/core/adapter';
import type { Request, RequestHandler } from 'express';
import type { ExpressRateLimitMiddleware } from './erl/middleware.js';
import { EXPRESS, expressMiddleware } from './exchange.js';
import {
  type ExpressRateLimitPlan,
  expressRateLimit,
  isExpressRateLimitPlan,
} from './from-express-rate-limit.js';
import { handlerOption, type RefusalHandler } from './refuse.js';

/** Options of `rateLimit()`: the shared options plus the Express response hook. */
export interface RateLimitOptions extends HttpLimitOptions<Request> {
  /**
   * Answers a refused request instead of the default RFC 9457 problem body. Called after the
   * status-independent headers (`RateLimit*`, `Retry-After`) are set; `req.rateLimit` holds the
   * Decision. It must end the response (or call `next`).
   * @default a 429 or 503 `application/problem+json` response
   */
  handler?: RefusalHandler;
}

/** The middleware, with `peek(req)`, `reset(req | key)` and `settle(req, actual)` for the app's own code. */
export type RateLimitMiddleware = RequestHandler & RateLimitControl<Request>;

/**
 * Express middleware (Express 4 and 5) limiting requests with one or several layered limits.
 * Without options, 100 requests a minute per client address (`slidingWindowCounter`, named
 * `'default'`); options without `limits`, `algorithm` or `name` (only a `store`, a `key`…) get
 * that limit too.
 * @example
 * app.use(rateLimit()); // 100 requests a minute per address
 * @example
 * app.use(rateLimit({ limits: [
 *   { name: 'burst', key: byIp(), algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) },
 * ] }));
 * app.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) }), login);
 */
export function rateLimit(options?: RateLimitOptions): RateLimitMiddleware;
/** express-rate-limit's middleware, from `fromExpressRateLimit(options)`. */
export function rateLimit(options: ExpressRateLimitPlan): ExpressRateLimitMiddleware;
export function rateLimit(
  options: RateLimitOptions | ExpressRateLimitPlan = {},
): RateLimitMiddleware | ExpressRateLimitMiddleware {
  if (isExpressRateLimitPlan(options)) return expressRateLimit(options);
  return rateLimitMiddleware(EXPRESS, options, (limiter, name) =>
    expressMiddleware(
      (exchange) => rateLimitLifecycle(limiter, exchange),
      handlerOption(options.handler),
      name,
    ),
  );
}
