import { type HttpExchange, type Lifecycle, PROBLEM_JSON, whenEnded } from '@sluice/core/adapter';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { RefusalHandler } from './refuse.js';

/** One Express request as the core lifecycle sees it. */
export interface ExpressContext {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
}

/** The Express glue of the core lifecycle: headers on `res`, `next()`, the refusal. */
function expressExchange(handler: RefusalHandler | undefined): HttpExchange<ExpressContext, Request, void> {
  return {
    request: (ctx) => ctx.req,
    client: (ctx) => ctx.res,
    setHeader: (ctx, name, value) => {
      ctx.res.setHeader(name, value);
    },
    // An app-wide middleware's RateLimit lists, which a route's own middleware extends.
    getHeader: (ctx, name) => {
      const value = ctx.res.getHeader(name);
      return typeof value === 'string' ? value : undefined;
    },
    record: (ctx, decision) => {
      ctx.req.rateLimit = decision;
    },
    proceed: (ctx) => ctx.next(),
    refuse: (ctx, decision, refusal) => {
      if (handler !== undefined) return handler(ctx.req, ctx.res, ctx.next, decision);
      ctx.res.statusCode = refusal.status;
      ctx.res.setHeader('Content-Type', `${PROBLEM_JSON}; charset=utf-8`);
      ctx.res.end(JSON.stringify(refusal.body));
    },
    whenDone: (ctx, done) => whenEnded(ctx.res, done),
  };
}

/**
 * A named Express middleware running one lifecycle built over the Express glue; a failure of the
 * glue (a throwing `handler`) goes to `next(error)`.
 * @param name the middleware's function name, as stack traces and `app._router` show it
 */
export function expressMiddleware(
  lifecycle: (exchange: HttpExchange<ExpressContext, Request, void>) => Lifecycle<ExpressContext, void>,
  handler: RefusalHandler | undefined,
  name: string,
): RequestHandler {
  const run = lifecycle(expressExchange(handler));
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    const result = run({ req, res, next });
    if (result instanceof Promise) result.catch(next);
  };
  return Object.defineProperty(middleware, 'name', { value: name });
}
