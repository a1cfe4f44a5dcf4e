import { type Decision, type HttpLimiter, PROBLEM_JSON, type SetHeader } from '@sluice/core';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { SluiceOptions } from './options.js';

/** A callback-style hook: no promise per request when the store answers synchronously. */
export type SluiceHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

const setHeader: SetHeader<FastifyReply> = (reply, name, value) => {
  reply.header(name, value);
};

/** The hook that applies one compiled limiter to a request. */
export function sluiceHook(
  limiter: HttpLimiter<FastifyRequest>,
  handler: SluiceOptions['handler'] | undefined,
): SluiceHook {
  const respond = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    decision: Decision | undefined,
  ) => {
    if (decision === undefined) return done();
    request.rateLimit = decision;
    limiter.headers.write(decision, reply, setHeader);
    if (decision.allowed) return done();
    limiter.limited(request, decision);
    const refusal = limiter.refusal(decision);
    if (refusal.retryAfter !== undefined) reply.header('Retry-After', String(refusal.retryAfter));
    reply.code(refusal.status);
    if (handler === undefined) {
      reply.type(`${PROBLEM_JSON}; charset=utf-8`).send(JSON.stringify(refusal.body));
      return;
    }
    // Replying from a hook: `done` must not be called; whatever the handler returns is the payload.
    Promise.resolve()
      .then(() => handler(request, reply, decision))
      .then(
        (payload) => {
          if (!reply.sent) reply.send(payload);
        },
        (error: unknown) => {
          if (!reply.sent) reply.send(error);
        },
      );
  };

  const hold = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    decision: Decision,
  ) => {
    const controller = new AbortController();
    const raw = reply.raw;
    // 'close' before the response ended means the client went away while held.
    const gone = () => {
      if (!raw.writableEnded) controller.abort();
    };
    raw.once('close', gone);
    limiter.wait(request, decision, controller.signal).then(
      (final) => {
        raw.removeListener('close', gone);
        if (final !== null) respond(request, reply, done, final);
      },
      (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
    );
  };

  const settle = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    decision: Decision | undefined,
  ) => {
    if (decision !== undefined && limiter.mustWait(decision)) hold(request, reply, done, decision);
    else respond(request, reply, done, decision);
  };

  return function sluiceRateLimit(request, reply, done) {
    const result = limiter.evaluate(request);
    if (result instanceof Promise) {
      result.then(
        (decision) => settle(request, reply, done, decision),
        (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
      );
    } else {
      settle(request, reply, done, result);
    }
  };
}
