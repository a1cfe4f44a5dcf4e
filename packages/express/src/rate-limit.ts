import {
  type Decision,
  type GetHeader,
  HttpLimiter,
  type HttpLimitOptions,
  type SetHeader,
} from '@sluice/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { expressAccess } from './access.js';
import { expressDefaults } from './defaults.js';
import { handlerOption, type RefusalHandler, refuse } from './refuse.js';

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

const setHeader: SetHeader<Response> = (res, name, value) => {
  res.setHeader(name, value);
};

// An app-wide middleware's RateLimit lists, which a route's own middleware extends.
const getHeader: GetHeader<Response> = (res, name) => {
  const value = res.getHeader(name);
  return typeof value === 'string' ? value : undefined;
};

/**
 * Express middleware (Express 4 and 5) limiting requests with one or several layered limits.
 * @example
 * app.use(rateLimit({ limits: [
 *   { name: 'burst', key: byIp(), algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) },
 * ] }));
 * app.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) }), login);
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const limiter = new HttpLimiter<Request>('rateLimit', options, expressAccess, expressDefaults, ['handler']);
  const handler = handlerOption(options.handler);

  const respond = (
    req: Request,
    res: Response,
    next: NextFunction,
    decision: Decision | undefined | null,
  ) => {
    // null: the client left before the request was passed on; nothing to send, no handler to run.
    if (decision === null) return;
    if (decision === undefined) return next();
    req.rateLimit = decision;
    limiter.headers.write(decision, res, setHeader, getHeader);
    if (decision.allowed) return next();
    limiter.limited(req, decision);
    refuse(req, res, next, decision, limiter.refusal(decision), handler);
  };

  return function sluiceRateLimit(req: Request, res: Response, next: NextFunction): void {
    const result = limiter.handle(req, res);
    if (result instanceof Promise) {
      result.then((decision) => respond(req, res, next, decision)).catch(next);
    } else {
      respond(req, res, next, result);
    }
  };
}
