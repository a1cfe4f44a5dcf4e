import type { Decision } from '../decision.js';
import type { HttpLimiter } from './rate-limit.js';

/**
 * What the app can do with a rate-limit middleware from its own code: read a request's limits,
 * forget a client's state, and settle a request to its actual cost. Every adapter's middleware
 * carries these methods.
 */
export interface RateLimitControl<Req> {
  /**
   * What the limits have for this request, without consuming anything: the combined Decision for
   * its cost, or `undefined` when it would not be limited (skipped, allow-listed, no key).
   * Rejects when the store or one of the request's functions fails.
   */
  peek(req: Req): Promise<Decision | undefined>;
  /**
   * Forgets the limits' state for this request's keys, or for one key as the limits' key
   * functions return it (`'ip:203.0.113.7'`, `'user:42'`).
   */
  reset(target: Req | string): Promise<void>;
  /**
   * Settles an admitted request to its actual cost (an integer ≥ 0): the difference from what it
   * took is given back or taken, never below zero. Never rejects: store failures go to `onError`.
   * Throws `ERR_SLUICE_INVALID_COST` for an actual cost that is not an integer ≥ 0.
   */
  settle(req: Req, actual: number): Promise<void>;
}

/** `target` (a middleware function) with the `RateLimitControl` methods of `limiter`. */
export function withControl<T extends object, Req>(
  target: T,
  limiter: HttpLimiter<Req>,
): T & RateLimitControl<Req> {
  const control: RateLimitControl<Req> = {
    peek: (req) => limiter.peek(req),
    reset: (target) => limiter.reset(target),
    settle: (req, actual) => limiter.settle(req, actual),
  };
  return Object.assign(target, control);
}

/**
 * Every rate limit an adapter compiled for one app (Fastify's plugin, routes and decorator hooks;
 * Nest's guard and `@RateLimit()` decorators), so that one `settle(req, actual)` reaches each
 * limit that admitted the request.
 */
export class CompiledLimiters<Req> {
  private readonly limiters: HttpLimiter<Req>[] = [];

  /** Keeps `limiter` among those `settle` reaches; answers it. */
  add(limiter: HttpLimiter<Req>): HttpLimiter<Req> {
    this.limiters.push(limiter);
    return limiter;
  }

  /** Settles the request on every limit that admitted it (see `RateLimitControl.settle`). */
  async settle(req: Req, actual: number): Promise<void> {
    await Promise.all(this.limiters.map((limiter) => limiter.settle(req, actual)));
  }
}
