import { type Decision, withFields } from '../decision.js';
import type { Reporter } from './reporter.js';

/**
 * What delay mode asks of a request before the rate limit acts on its decision:
 * - `'queue'`: a queue admitted it with a delay: hold it `ms`, then pass it on (its units stay
 *   taken; a client that leaves meanwhile gets them back);
 * - `'retry'`: refused under `onLimit: 'delay'` within `maxDelay`: hold it `ms`, until a unit
 *   should be free, then check it once more (nothing was taken);
 * - `'too-long'`: a queue admitted it for longer than `maxDelay`: give its units back and refuse
 *   it (`DelayMode.tooLong`).
 */
export type Hold =
  | { readonly kind: 'queue'; readonly ms: number }
  | { readonly kind: 'retry'; readonly ms: number }
  | { readonly kind: 'too-long' };

/**
 * The hold: how a rate-limit middleware makes a request wait before it proceeds. It says what a
 * decision asks (`next`), waits (`held`), and words a queue admission it may not wait for
 * (`tooLong`); the rate limit (`HttpLimiter.handle`) runs the steps, checks again and gives units
 * back.
 */
export class DelayMode<Req> {
  constructor(
    /** `onLimit: 'delay'`: refusals within `maxDelay` are held too. */
    private readonly delayRefusals: boolean,
    /** ms. */
    private readonly maxDelay: number,
    private readonly hold: (ms: number, signal: AbortSignal) => Promise<void>,
    private readonly reporter: Reporter<Req>,
  ) {}

  /** What `decision` asks before it is acted on; `undefined`: act on it now. */
  next(decision: Decision): Hold | undefined {
    if (decision.allowed) {
      if (decision.delay <= 0) return undefined;
      // The queue admitted it, but for longer than this middleware may hold a request.
      if (decision.delay > this.maxDelay) return TOO_LONG;
      return { kind: 'queue', ms: decision.delay };
    }
    if (
      this.delayRefusals &&
      decision.reason === 'rate-limited' &&
      decision.retryAfter > 0 &&
      decision.retryAfter <= this.maxDelay
    ) {
      return { kind: 'retry', ms: decision.retryAfter };
    }
    return undefined;
  }

  /** Holds for `ms`: false when the client left meanwhile. A failing `hold` is reported and ends the hold. */
  async held(ms: number, signal: AbortSignal, req: Req): Promise<boolean> {
    if (signal.aborted) return false;
    try {
      await this.hold(ms, signal);
      return !signal.aborted;
    } catch (error) {
      if (signal.aborted) return false;
      this.reporter.error(error, req);
      return true;
    }
  }

  /**
   * A queue admission longer than `maxDelay`, as a refusal: each limit that would have held the
   * request longer refuses with that wait as its `retryAfter`, so its RateLimit reset and
   * `Retry-After` name the same instant, and counts the `refunded` units as left.
   */
  tooLong(decision: Decision, refunded: number): Decision {
    const maxDelay = this.maxDelay;
    // withFields, not a spread: a decision's `limits` is a getter a spread would drop.
    const refuse = (d: Decision, limits?: readonly Decision[]): Decision =>
      withFields(
        d,
        {
          allowed: false,
          remaining: Math.min(d.limit, d.remaining + refunded),
          retryAfter: d.delay,
          delay: 0,
          reason: 'rate-limited',
        },
        limits,
      );
    // Only limits that queued the request (delay > 0) had units to give back.
    const back = (d: Decision): Decision =>
      d.delay > 0 ? withFields(d, { remaining: Math.min(d.limit, d.remaining + refunded) }) : d;
    return refuse(
      decision,
      decision.limits.map((d) => (d.delay > maxDelay ? refuse(d) : back(d))),
    );
  }
}

const TOO_LONG: Hold = { kind: 'too-long' };
