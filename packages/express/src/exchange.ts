import { type HttpExchange, PROBLEM_JSON, whenEnded } from '@sluice/core';
import type { NextFunction, Request, Response } from 'express';
import type { RefusalHandler } from './refuse.js';

/** One Express request as the core lifecycle sees it. */
export interface ExpressContext {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
}

/** The Express glue of the core lifecycle: headers on `res`, `next()`, the refusal. */
export function expressExchange(
  handler: RefusalHandler | undefined,
): HttpExchange<ExpressContext, Request, void> {
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
    statusCode: (ctx) => ctx.res.statusCode,
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
