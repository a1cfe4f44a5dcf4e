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

  const respond = (req: Request, res: Response, next: NextFunction, decision: Decision | undefined) => {
    if (decision === undefined) return next();
    req.rateLimit = decision;
    limiter.headers.write(decision, res, setHeader, getHeader);
    if (decision.allowed) return next();
    limiter.limited(req, decision);
    refuse(req, res, next, decision, limiter.refusal(decision), handler);
  };

  const hold = (req: Request, res: Response, next: NextFunction, decision: Decision) => {
    const controller = new AbortController();
    // 'close' before the response ended means the client went away while held.
    const gone = () => {
      if (!res.writableEnded) controller.abort();
    };
    res.once('close', gone);
    limiter
      .wait(req, decision, controller.signal)
      .then((final) => {
        res.removeListener('close', gone);
        if (final !== null) respond(req, res, next, final);
      })
      .catch(next);
  };

  const settle = (req: Request, res: Response, next: NextFunction, decision: Decision | undefined) => {
    if (decision !== undefined && limiter.mustWait(decision)) hold(req, res, next, decision);
    else respond(req, res, next, decision);
  };

  return function sluiceRateLimit(req: Request, res: Response, next: NextFunction): void {
    const result = limiter.evaluate(req);
    if (result instanceof Promise) {
      result.then((decision) => settle(req, res, next, decision)).catch(next);
    } else {
      settle(req, res, next, result);
    }
  };
}
