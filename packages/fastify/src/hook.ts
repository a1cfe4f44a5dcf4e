import {
  guardLifecycle,
  type HttpExchange,
  type HttpGuard,
  type HttpLimiter,
  type Lifecycle,
  named,
  nodeExchange,
  PROBLEM_CONTENT_TYPE,
  RATE_LIMIT_FUNCTION_NAME,
  rateLimitLifecycle,
} from '@sluice/core/adapter';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { FastifyHookOptions } from './options.js';
import { hasAppErrorHandler, RateLimitedError } from './refused-error.js';

type Handler = FastifyHookOptions['handler'];

/** A callback-style hook: no promise per request when the store answers synchronously. */
export type SluiceHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

/** One Fastify request as the core lifecycle sees it. */
interface FastifyContext {
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly done: HookHandlerDoneFunction;
}

const toError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * The Fastify glue of the core lifecycle: headers on the reply, `done()`, the refusal. No
 * `getHeader`: the reply's headers are not the raw response's until sent, and a route's limits
 * are merged with the plugin's into one hook.
 */
function fastifyExchange(
  handler: Handler,
  presetStatus = true,
): HttpExchange<FastifyContext, FastifyRequest, void> {
  return nodeExchange<FastifyContext, FastifyRequest, void>({
    request: (ctx) => ctx.request,
    response: (ctx) => ctx.reply.raw,
    setHeader: (ctx, name, value) => {
      ctx.reply.header(name, value);
    },
    record: (ctx, decision) => {
      ctx.request.rateLimit = decision;
    },
    proceed: (ctx) => ctx.done(),
    refuse: ({ request, reply, done }, decision, refusal) => {
      if (handler === undefined) {
        // Through the app's error handler when it has one, as @fastify/rate-limit's refusals go:
        // its custom body and its logging see them. The headers are already on the reply.
        if (hasAppErrorHandler(request)) {
          done(new RateLimitedError(refusal, decision));
          return;
        }
        reply.code(refusal.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(refusal.body));
        return;
      }
      if (presetStatus) reply.code(refusal.status);
      // Replying from a hook: `done` is not called when the reply is sent; whatever the handler
      // returns is the payload.
      Promise.resolve()
        .then(() => handler(request, reply, decision))
        .then(
          (payload) => {
            if (!reply.sent) reply.send(payload);
          },
          // A thrown refusal goes to the app's error handler, as a hook's error does.
          (error: unknown) => {
            if (!reply.sent) done(error as Error);
          },
        );
    },
  });
}

/** A hook running one lifecycle; a failure of the glue goes to Fastify's error path. */
function hookOf(run: Lifecycle<FastifyContext, void>, name: string): SluiceHook {
  return named<SluiceHook>((request, reply, done) => {
    const result = run({ request, reply, done });
    if (result instanceof Promise) result.then(undefined, (error: unknown) => done(toError(error)));
  }, name);
}

/**
 * The hook that applies one compiled limiter to a request.
 * @param presetStatus whether the reply's status is the refusal's before `handler` runs; the
 *   @fastify/rate-limit layer leaves it as it was, for the app's error handler, as there
 *   (`reply.redirect()` in it then answers 302, not the status set before)
 */
export function rateLimitHook(
  limiter: HttpLimiter<FastifyRequest>,
  handler: Handler,
  presetStatus = true,
): SluiceHook {
  return hookOf(
    rateLimitLifecycle(limiter, fastifyExchange(handler, presetStatus)),
    RATE_LIMIT_FUNCTION_NAME,
  );
}

/**
 * The hook of one compiled guard: the lease is taken when the hook runs and given back when the
 * raw response ends. A refused request reaches no later hook nor the handler.
 * @param name the hook's function name
 */
export function guardHook(guard: HttpGuard<FastifyRequest>, handler: Handler, name: string): SluiceHook {
  return hookOf(guardLifecycle(guard, fastifyExchange(handler)), name);
}
