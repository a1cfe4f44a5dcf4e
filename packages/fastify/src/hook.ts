import {
  clientLeft,
  type Decision,
  type HttpGuard,
  type HttpLimiter,
  type Lease,
  PROBLEM_JSON,
  type Refusal,
  releaseWhenDone,
  type SetHeader,
} from '@sluice/core';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { FastifyHookOptions } from './options.js';

type Handler = FastifyHookOptions['handler'];

/** A callback-style hook: no promise per request when the store answers synchronously. */
export type SluiceHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

const setHeader: SetHeader<FastifyReply> = (reply, name, value) => {
  reply.header(name, value);
};

const toError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** Answers a refused request: `Retry-After`, status, then the user's handler or the problem body. */
function refuse(
  request: FastifyRequest,
  reply: FastifyReply,
  decision: Decision,
  refusal: Refusal,
  handler: Handler,
): void {
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
}

/** The hook that applies one compiled limiter to a request. */
export function sluiceHook(limiter: HttpLimiter<FastifyRequest>, handler: Handler): SluiceHook {
  const respond = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    decision: Decision | undefined | null,
  ) => {
    // null: the client left before the request was passed on; nothing to send, no handler to run.
    if (decision === null) return;
    if (decision === undefined) return done();
    request.rateLimit = decision;
    limiter.headers.write(decision, reply, setHeader);
    if (decision.allowed) return done();
    limiter.limited(request, decision);
    refuse(request, reply, decision, limiter.refusal(decision), handler);
  };

  return function sluiceRateLimit(request, reply, done) {
    const result = limiter.handle(request, reply.raw);
    if (result instanceof Promise) {
      result.then(
        (decision) => respond(request, reply, done, decision),
        (error: unknown) => done(toError(error)),
      );
    } else {
      respond(request, reply, done, result);
    }
  };
}
/**
 * The hook of one compiled guard: the lease is taken when the hook runs and given back exactly
 * once when the raw response ends, however it ends (finished, failed, or the client left). A
 * refused request is answered here and reaches no later hook nor the handler.
 * @param name the hook's function name
 */
export function guardHook(guard: HttpGuard<FastifyRequest>, handler: Handler, name: string): SluiceHook {
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    lease: Lease | undefined,
  ) => {
    if (lease === undefined) return done();
    const decision = lease.decision;
    if (decision.allowed) {
      if (guard.holdsLeases) releaseWhenDone(reply.raw, lease);
      return done();
    }
    guard.limited(request, decision);
    refuse(request, reply, decision, guard.refusal(decision), handler);
  };

  const hook: SluiceHook = (request, reply, done) => {
    // Gone before it got here: no lease for a request nobody will read.
    if (clientLeft(reply.raw)) return;
    const result = guard.enter(request);
    if (!(result instanceof Promise)) return admit(request, reply, done, result);
    // The client may leave while the store answers; its lease must not outlive it.
    const raw = reply.raw;
    let gone = false;
    const leave = () => {
      gone = true;
    };
    raw.once('close', leave);
    result.then(
      (lease) => {
        raw.removeListener('close', leave);
        if (gone) void lease?.release();
        else admit(request, reply, done, lease);
      },
      (error: unknown) => done(toError(error)),
    );
  };
  return Object.defineProperty(hook, 'name', { value: name });
}
