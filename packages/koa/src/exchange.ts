import type { Decision } from '@sluice/core';
import {
  CONSOLE_DEFAULTS,
  functionOption,
  type HttpExchange,
  type Lifecycle,
  type MiddlewareAdapter,
  named,
  nodeExchange,
  PROBLEM_CONTENT_TYPE,
} from '@sluice/core/adapter';
import type { Context, Middleware, Next } from 'koa';
import { koaAccess } from './access.js';

/** A custom answer to a refused request (`handler` of every sluice middleware): set `ctx.body` (`ctx.status` is preset). */
export type RefusalHandler = (ctx: Context, decision: Decision) => void | Promise<void>;

/** What every sluice middleware of Koa reads requests with, reports to, and accepts of its own. */
export const KOA: MiddlewareAdapter<Context> = {
  access: koaAccess,
  defaults: CONSOLE_DEFAULTS,
  options: ['handler'],
};

/** One Koa request as the core lifecycle sees it. */
interface KoaContext {
  readonly ctx: Context;
  readonly next: Next;
}

type Result = unknown;

/** The `handler` option, checked at creation (a coded error when it is not a function). */
export const handlerOption = (handler: unknown): RefusalHandler | undefined =>
  functionOption('handler', handler as RefusalHandler | undefined);

/** The Koa glue of the core lifecycle: `ctx.set`, `next()`, the refusal in `ctx.status`/`ctx.body`. */
function koaExchange(handler: RefusalHandler | undefined): HttpExchange<KoaContext, Context, Result> {
  return nodeExchange<KoaContext, Context, Result>({
    request: (k) => k.ctx,
    response: (k) => k.ctx.res,
    setHeader: (k, name, value) => {
      k.ctx.set(name, value);
    },
    // An app-wide middleware's RateLimit lists, which a route's own middleware extends.
    getHeader: (k, name) => {
      const value = k.ctx.response.get(name);
      return typeof value === 'string' && value !== '' ? value : undefined;
    },
    record: (k, decision) => {
      k.ctx.state.rateLimit = decision;
    },
    proceed: (k) => k.next(),
    refuse: (k, decision, refusal) => {
      k.ctx.status = refusal.status;
      if (handler !== undefined) return handler(k.ctx, decision);
      // The type first: a string body would otherwise set text/plain.
      k.ctx.type = PROBLEM_CONTENT_TYPE;
      k.ctx.body = JSON.stringify(refusal.body);
    },
  });
}

/**
 * A named Koa middleware running one lifecycle built over the Koa glue. Koa awaits what it
 * returns: `next()`'s promise when passed on, so errors downstream reach Koa's error handling.
 * @param name the middleware's function name, as stack traces show it
 */
export function koaMiddleware(
  lifecycle: (exchange: HttpExchange<KoaContext, Context, Result>) => Lifecycle<KoaContext, Result>,
  handler: RefusalHandler | undefined,
  name: string,
): Middleware {
  const run = lifecycle(koaExchange(handler));
  return named<Middleware>((ctx, next) => run({ ctx, next }), name);
}
