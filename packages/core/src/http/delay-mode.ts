import type { Decision } from '../decision.js';
import type { MaybePromise } from '../store.js';
import { type ClientResponse, watchClient } from './client.js';
import type { Reporter } from './reporter.js';
import type { Reservations } from './reservations.js';

/**
 * The hold: how a rate-limit middleware makes a request wait before it proceeds. A queue's
 * admission (`delay`) is held for its delay; under `onLimit: 'delay'` a refusal that would pass
 * within `maxDelay` is held until a unit should be free, then checked once more. A client that
 * leaves while held gets nothing, and the units its request took are given back.
 */
export class DelayMode<Req> {
  constructor(
    /** `onLimit: 'delay'`: refusals within `maxDelay` are held too. */
    private readonly delayRefusals: boolean,
    /** ms. */
    private readonly maxDelay: number,
    private readonly hold: (ms: number, signal: AbortSignal) => Promise<void>,
    private readonly reporter: Reporter<Req>,
    private readonly reservations: Reservations<Req>,
    /** Checks the request again once a refusal's wait is over. */
    private readonly again: (req: Req) => MaybePromise<Decision | undefined>,
  ) {}

  /** Whether the adapter must hold the request (`wait`) before acting on `decision`. */
  mustWait(decision: Decision): boolean {
    if (decision.allowed) return decision.delay > 0;
    return (
      this.delayRefusals &&
      decision.reason === 'rate-limited' &&
      decision.retryAfter > 0 &&
      decision.retryAfter <= this.maxDelay
    );
  }

  /**
   * Holds a request that `mustWait`. Resolves to the decision to act on (`undefined`: not
   * limited), or `null` when `signal` aborted (the client went away: its queue slot is given back
   * and nothing must be sent).
   */
  async wait(req: Req, decision: Decision, signal: AbortSignal): Promise<Decision | undefined | null> {
    const reservations = this.reservations;
    if (decision.allowed) {
      if (decision.delay > this.maxDelay) {
        // The queue admitted it, but for longer than this middleware may hold a request.
        return overlong(decision, this.maxDelay, await reservations.giveBack(req));
      }
      if (!(await this.held(decision.delay, signal, req))) {
        await reservations.giveBack(req);
        return null;
      }
      return decision;
    }
    // Not consumed: wait until a unit should be free, then ask once more.
    if (!(await this.held(decision.retryAfter, signal, req))) return null;
    const again = await this.again(req);
    if (signal.aborted) return reservations.abandon(req, again);
    if (again?.allowed && again.delay > 0) return this.wait(req, again, signal);
    return again;
  }

  /** `wait`, with a signal that aborts when the client leaves, watched until it is over. */
  async watched(
    req: Req,
    decision: Decision,
    response: ClientResponse,
  ): Promise<Decision | undefined | null> {
    const client = watchClient(response);
    try {
      return await this.wait(req, decision, client.signal);
    } finally {
      client.stop();
    }
  }

  /** Holds for `ms`: false when the client left meanwhile. A failing `hold` is reported and ends the hold. */
  private async held(ms: number, signal: AbortSignal, req: Req): Promise<boolean> {
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
}

/**
 * A queue admission longer than `maxDelay`, as a refusal: each limit that would have held the
 * request longer refuses with that wait as its `retryAfter`, so its RateLimit reset and
 * `Retry-After` name the same instant, and counts the `refunded` units as left.
 */
function overlong(decision: Decision, maxDelay: number, refunded: number): Decision {
  const refuse = (d: Decision): Decision => ({
    ...d,
    allowed: false,
    remaining: Math.min(d.limit, d.remaining + refunded),
    retryAfter: d.delay,
    delay: 0,
    reason: 'rate-limited',
  });
  // Only limits that queued the request (delay > 0) had units to give back.
  const back = (d: Decision): Decision =>
    d.delay > 0 ? { ...d, remaining: Math.min(d.limit, d.remaining + refunded) } : d;
  return {
    ...refuse(decision),
    limits: decision.limits.map((d) => (d.delay > maxDelay ? refuse(d) : back(d))),
  };
}
