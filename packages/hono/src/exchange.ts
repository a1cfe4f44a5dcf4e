import type { ServerResponse } from 'node:http';
import type { Decision } from '@sluice/core';
import {
  type ClientResponse,
  functionOption,
  type HttpExchange,
  type Lifecycle,
  named,
  PROBLEM_CONTENT_TYPE,
  signalClient,
  whenEnded,
} from '@sluice/core/adapter';
import type { Context, MiddlewareHandler, Next } from 'hono';

/** A custom answer to a refused request (`handler` of every sluice middleware). */
export type RefusalHandler = (c: Context, decision: Decision) => Response | Promise<Response>;

/** One Hono request as the core lifecycle sees it. */
interface HonoContext {
  readonly c: Context;
  readonly next: Next;
  /** Where no Node response says when the response ended: run once `next()` has settled. */
  done?: (finished: boolean) => void;
}

type Result = Promise<void> | Response | Promise<Response>;

/**
 * Deno warns, once per process, on any app that reads a served request's `signal` ("request.signal
 * aborts on successful responses (legacy behavior)", its legacy-abort deprecation): there the
 * signal is read only once a request has waited (an asynchronous store's answer, a hold), never
 * as it arrives, so an app on a synchronous store (the in-memory default) never reads it.
 */
const deferSignal = (): boolean => typeof (globalThis as { Deno?: unknown }).Deno !== 'undefined';

/** The Node response under `@hono/node-server` (its `HttpBindings`), if that is where Hono runs. */
const outgoing = (c: Context): ServerResponse | undefined =>
  (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;

/**
 * The answer to a request whose client left before it was passed on: nobody receives it, but Hono
 * needs a response; 499 is nginx's "client closed request", so access logs tell it apart.
 */
const gone = () => new Response(null, { status: 499 });

/** The `handler` option, checked at creation (a coded error when it is not a function). */
export const handlerOption = (handler: unknown): RefusalHandler | undefined =>
  functionOption('handler', handler as RefusalHandler | undefined);

/** The Hono glue of the core lifecycle: `c.header`, `next()`, a returned refusal `Response`. */
function honoExchange(handler: RefusalHandler | undefined): HttpExchange<HonoContext, Context, Result> {
  const deferred = deferSignal();
  return {
    request: (ctx) => ctx.c,
    client: (ctx): ClientResponse =>
      outgoing(ctx.c) ?? signalClient(() => ctx.c.req.raw.signal, { deferred }),
    setHeader: (ctx, name, value) => {
      ctx.c.header(name, value);
    },
    // An app-wide middleware's RateLimit lists, which a route's own middleware extends. (`c.res`
    // holds the headers `c.header` set so far.)
    getHeader: (ctx, name) => ctx.c.res.headers.get(name) ?? undefined,
    statusCode: (ctx) => outgoing(ctx.c)?.statusCode ?? ctx.c.res.status,
    record: (ctx, decision) => {
      ctx.c.set('rateLimit', decision);
    },
    proceed: (ctx) => {
      const done = ctx.done;
      return done === undefined ? ctx.next() : ctx.next().finally(() => done(true));
    },
    refuse: (ctx, decision, refusal) => {
      if (handler !== undefined) return handler(ctx.c, decision);
      return ctx.c.body(JSON.stringify(refusal.body), refusal.status as 429 | 503, {
        'Content-Type': PROBLEM_CONTENT_TYPE,
      });
    },
    whenDone: (ctx, done) => {
      const response = outgoing(ctx.c);
      if (response === undefined) ctx.done = done;
      else whenEnded(response, done);
    },
  };
}

/**
 * A named Hono middleware running one lifecycle built over the Hono glue.
 * @param name the middleware's function name, as `showRoutes()` and stack traces show it
 */
export function honoMiddleware(
  lifecycle: (exchange: HttpExchange<HonoContext, Context, Result>) => Lifecycle<HonoContext, Result>,
  handler: RefusalHandler | undefined,
  name: string,
): MiddlewareHandler {
  const run = lifecycle(honoExchange(handler));
  return named<MiddlewareHandler>(async (c, next) => (await run({ c, next })) ?? gone(), name);
}
