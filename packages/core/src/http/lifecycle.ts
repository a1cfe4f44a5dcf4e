import type { Lease } from '../concurrency/lease.js';
import type { Decision } from '../decision.js';
import type { MaybePromise } from '../store.js';
import { giveBackEarlier, Taken, took } from './across-middlewares.js';
import { type ClientResponse, clientLeft, leftOnArrival } from './client.js';
import type { HttpGuard } from './guards.js';
import type { Refusal } from './problem.js';
import type { HttpLimiter } from './rate-limit.js';

/**
 * What an adapter does for a request's lifecycle: its framework's glue, written once per adapter
 * as a plain object and called with the adapter's per-request context (`{ req, res, next }` in
 * Express, Koa's `ctx`…). `R` is what the framework's middleware returns: nothing in Express,
 * `next()`'s promise in Koa and Hono, `true` in a Nest guard.
 */
export interface HttpExchange<Ctx, Req, R> {
  /** The request that keys, `skip` and `cost` read. */
  request(ctx: Ctx): Req;
  /** The Node response (or `signalClient()` of the request's signal) that says when the client leaves. */
  client(ctx: Ctx): ClientResponse;
  /** Sets one response header. */
  setHeader(ctx: Ctx, name: string, value: string): void;
  /**
   * Reads a response header already set, when an earlier middleware of the same adapter may have
   * set `RateLimit` lists this one extends (Express: an app-wide and a route's own middleware).
   * Absent: each middleware's headers replace the previous ones.
   */
  getHeader?(ctx: Ctx, name: string): string | undefined;
  /**
   * The response's status code, read when it ended (`count` tells failed responses apart by it).
   */
  statusCode(ctx: Ctx): number;
  /** Keeps the rate-limit decision for the app (`req.rateLimit`), before its headers are set. */
  record(ctx: Ctx, decision: Decision): void;
  /** Passes the request on to the next middleware or the handler. */
  proceed(ctx: Ctx): R;
  /** Answers a refused request (status and body); `RateLimit*` and `Retry-After` are already set. */
  refuse(ctx: Ctx, decision: Decision, refusal: Refusal): R;
  /**
   * Calls `done` once the response is over, however it ends (sent, failed, or the client left):
   * how an admitted request's lease is given back, and its units under `count`. `finished` is
   * `false` when the response was never sent whole (the client left first). Called before `proceed`.
   */
  whenDone(ctx: Ctx, done: (finished: boolean) => void): void;
}

/** The lifecycle of one middleware: `undefined` when the client left (nothing is sent). */
export type Lifecycle<Ctx, R> = (ctx: Ctx) => MaybePromise<R | undefined>;

/**
 * The rate-limit lifecycle, the order every adapter follows: check (and hold, in delay mode)
 * while the client is watched; a client gone before the answer gets nothing and its units back;
 * then the decision, its headers, its hooks (`onDecision`, `onBlocked`, `onLimited`), and either
 * the next middleware or the refusal (`Retry-After`, the adapter's answer). Synchronous when the store answers synchronously.
 * Rejects only when the adapter's `proceed` or `refuse` throws (the framework's error path).
 */
export function rateLimitLifecycle<Ctx, Req, R>(
  limiter: HttpLimiter<Req>,
  exchange: HttpExchange<Ctx, Req, R>,
): Lifecycle<Ctx, R> {
  /** The decision on the request, in its headers, and to its hooks. */
  const told = (ctx: Ctx, req: Req, decision: Decision): void => {
    exchange.record(ctx, decision);
    limiter.writeHeaders(req, decision, ctx, exchange.setHeader, exchange.getHeader);
    limiter.decided(req, decision);
  };
  const answer = (ctx: Ctx, req: Req, decision: Decision | undefined | null): MaybePromise<R | undefined> => {
    if (decision === null) return left(req);
    if (decision === undefined) return exchange.proceed(ctx);
    if (!decision.allowed) {
      return afterGiveBack(req, () => {
        told(ctx, req, decision);
        return refuse(exchange, ctx, decision, limiter.refusal(decision));
      });
    }
    told(ctx, req, decision);
    // Under `count`, the response's outcome decides whether its units stay taken.
    if (limiter.countsOutcome) {
      exchange.whenDone(ctx, (finished) => limiter.outcome(req, exchange.statusCode(ctx), finished));
    }
    // Kept for a later sluice middleware that refuses the request (recorded before the request goes on).
    took(new Taken(limiter, req, ctx, decision, exchange.setHeader, exchange.getHeader));
    return exchange.proceed(ctx);
  };
  return (ctx) => {
    const req = exchange.request(ctx);
    const result = limiter.handle(req, exchange.client(ctx));
    if (result instanceof Promise) return result.then((decision) => answer(ctx, req, decision));
    return answer(ctx, req, result);
  };
}

/**
 * The guard lifecycle (concurrency limit, load shedders): the lease is taken when the request
 * arrives and given back exactly once when the response ends (`Lease.release` is idempotent); a
 * client gone before the store answered gives its lease back at once and is sent nothing; a
 * refused request is answered here and never reaches the app.
 */
export function guardLifecycle<Ctx, Req, R>(
  guard: HttpGuard<Req>,
  exchange: HttpExchange<Ctx, Req, R>,
): Lifecycle<Ctx, R> {
  const admit = (ctx: Ctx, req: Req, lease: Lease | undefined): MaybePromise<R> => {
    if (lease === undefined) return exchange.proceed(ctx);
    const decision = lease.decision;
    guard.decided(req, decision);
    if (decision.allowed) {
      if (guard.takesLeases) {
        exchange.whenDone(ctx, (finished) =>
          guard.ended(req, lease, () => exchange.statusCode(ctx), finished),
        );
      }
      return exchange.proceed(ctx);
    }
    return afterGiveBack(req, () => {
      guard.limited(req, decision);
      return refuse(exchange, ctx, decision, guard.refusal(decision));
    });
  };
  return (ctx) => {
    const client = exchange.client(ctx);
    const req = exchange.request(ctx);
    // Gone before it got here: no lease for a request nobody will read.
    if (leftOnArrival(client)) return left(req);
    const result = guard.enter(req);
    if (!(result instanceof Promise)) return admit(ctx, req, result);
    // The client may leave while the store answers; its lease must not outlive it. Read when the
    // answer arrives: a watcher per request (an AbortSignal and a listener) would cost more.
    return result.then((lease) => {
      if (!clientLeft(client)) return admit(ctx, req, lease);
      void lease?.release();
      return left(req);
    });
  };
}

/**
 * Runs `refused` once what earlier sluice rate limits took for this request has gone back: a
 * refusal is told after the give-back, so the next request sees the units.
 */
function afterGiveBack<R>(req: unknown, refused: () => R): MaybePromise<R> {
  const back = giveBackEarlier(req);
  return back === undefined ? refused() : back.then(refused);
}

/**
 * A request whose client left before it was passed on: nothing is sent, and what earlier sluice
 * rate limits took for it goes back, as a refusal's would (the request never runs).
 */
function left(req: unknown): undefined {
  void giveBackEarlier(req);
  return undefined;
}

function refuse<Ctx, Req, R>(
  exchange: HttpExchange<Ctx, Req, R>,
  ctx: Ctx,
  decision: Decision,
  refusal: Refusal,
): R {
  if (refusal.retryAfter !== undefined) exchange.setHeader(ctx, 'Retry-After', String(refusal.retryAfter));
  return exchange.refuse(ctx, decision, refusal);
}

/** The part of a Node `ServerResponse` (Express `res`, Fastify `reply.raw`, Koa `ctx.res`) that says when it ended. */
export interface EndedResponse {
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

/**
 * Calls `done` once when a Node response ends, however it ends: 'finish' (handed to the OS:
 * `finished` true) or 'close' first (the client left: an aborted request never finishes).
 */
export function whenEnded(response: EndedResponse, done: (finished: boolean) => void): void {
  let called = false;
  const once = (finished: boolean) => {
    if (called) return;
    called = true;
    done(finished);
  };
  response.once('finish', () => once(true));
  response.once('close', () => once(false));
}
