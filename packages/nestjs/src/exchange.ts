import type { ExecutionContext } from '@nestjs/common';
import { type HttpExchange, type Lifecycle, PROBLEM_JSON, whenEnded } from '@sluice/core/adapter';
import type { Request, Response } from 'express';
import { RateLimitException } from './exception.js';

/** The Nest glue of the core lifecycle: headers on the Express response, `true`, the exception. */
export const nestExchange: HttpExchange<ExecutionContext, Request, boolean> = {
  request: (context) => context.switchToHttp().getRequest<Request>(),
  client: (context) => context.switchToHttp().getResponse<Response>(),
  setHeader: (context, name, value) => {
    context.switchToHttp().getResponse<Response>().setHeader(name, value);
  },
  // The global guard's RateLimit lists, which a class's or method's @RateLimit extends.
  getHeader: (context, name) => {
    const value = context.switchToHttp().getResponse<Response>().getHeader(name);
    return typeof value === 'string' ? value : undefined;
  },
  record: (context, decision) => {
    context.switchToHttp().getRequest<Request>().rateLimit = decision;
  },
  proceed: () => true,
  refuse: (context, decision, refusal) => {
    // Nest's filter keeps a +json type it finds, so the default reply is sluice's problem body.
    context
      .switchToHttp()
      .getResponse<Response>()
      .setHeader('Content-Type', `${PROBLEM_JSON}; charset=utf-8`);
    throw new RateLimitException(decision, refusal.body, refusal.status);
  },
  whenDone: (context, done) => whenEnded(context.switchToHttp().getResponse<Response>(), done),
};

/**
 * `canActivate` over lifecycles run one after another: a request passes when each passes; one
 * whose client left (`undefined`) is stopped with `false` (nothing is sent to it).
 */
export function activate(
  lifecycles: readonly Lifecycle<ExecutionContext, boolean>[],
  context: ExecutionContext,
  from = 0,
): boolean | Promise<boolean> {
  for (let i = from; i < lifecycles.length; i++) {
    const result = lifecycles[i]!(context);
    if (result instanceof Promise) {
      return result.then((passed) => passed === true && activate(lifecycles, context, i + 1));
    }
    if (result !== true) return false;
  }
  return true;
}
