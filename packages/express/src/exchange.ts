import {
  CONSOLE_DEFAULTS,
  type HttpExchange,
  type Lifecycle,
  type MiddlewareAdapter,
  named,
  nodeExchange,
  nodeResponseHeaders,
  writeProblem,
} from '@sluice/core/adapter';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { expressAccess } from './access.js';
import type { RefusalHandler } from './refuse.js';

/** What every sluice middleware of Express reads requests with, reports to, and accepts of its own. */
export const EXPRESS: MiddlewareAdapter<Request> = {
  access: expressAccess,
  defaults: CONSOLE_DEFAULTS,
  options: ['handler'],
};

/** One Express request as the core lifecycle sees it. */
export interface ExpressContext {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
}

/** Express's response is the Node one: its headers are the response's (an app-wide middleware's RateLimit lists, which a route's own extends). */
const headers = nodeResponseHeaders((ctx: ExpressContext) => ctx.res);

/** The Express glue of the core lifecycle: `req.rateLimit`, `next()`, the refusal. */
function expressExchange(handler: RefusalHandler | undefined): HttpExchange<ExpressContext, Request, void> {
  return nodeExchange<ExpressContext, Request, void>({
    ...headers,
    request: (ctx) => ctx.req,
    response: (ctx) => ctx.res,
    record: (ctx, decision) => {
      ctx.req.rateLimit = decision;
    },
    proceed: (ctx) => ctx.next(),
    refuse: (ctx, decision, refusal) => {
      if (handler !== undefined) return handler(ctx.req, ctx.res, ctx.next, decision);
      writeProblem(ctx.res, refusal);
    },
  });
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
  return named((req: Request, res: Response, next: NextFunction): void => {
    const result = run({ req, res, next });
    if (result instanceof Promise) result.catch(next);
  }, name);
}
