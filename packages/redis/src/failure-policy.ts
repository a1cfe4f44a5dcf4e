import type { Decision, Store } from '@sluice/core';
import { decide, type LimitCall } from '@sluice/core/adapter';
import type { CallGate } from './call-gate.js';
import type { FailurePolicy } from './options.js';

/**
 * What the store answers when Redis does not (an error, a timeout, an open breaker): the failure
 * policy's decisions. `'allow'` fails open, `'deny'` fails closed, a fallback store decides (and
 * when it throws too, the store fails open and reports it as `'fallback'`).
 */
export class FailureAnswers {
  constructor(
    private readonly policy: FailurePolicy,
    private readonly gate: CallGate,
  ) {}

  consume(calls: readonly LimitCall[], now: number | undefined): Decision[] | Promise<Decision[]> {
    const policy = this.policy;
    if (typeof policy === 'object') return this.fallback(calls, () => policy.consume(calls, now), true);
    return this.decisions(policy, calls, true);
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] | Promise<Decision[]> {
    const policy = this.policy;
    if (typeof policy === 'object') return this.fallback(calls, () => policy.peek(calls, now), false);
    return this.decisions(policy, calls, false);
  }

  /**
   * A refund Redis did not take: the fallback store took the consumption while Redis was
   * unavailable, so it gets the refund (a failure reported as `'fallback'`); nothing otherwise.
   */
  async refund(calls: readonly LimitCall[], now: number | undefined): Promise<undefined> {
    const policy = this.policy;
    if (typeof policy !== 'object' || policy.refund === undefined) return undefined;
    try {
      await policy.refund(calls, now);
    } catch (error) {
      this.gate.report('fallback', calls.length, error);
    }
    return undefined;
  }

  private async fallback(
    calls: readonly LimitCall[],
    run: () => Decision[] | Promise<Decision[]>,
    consuming: boolean,
  ): Promise<Decision[]> {
    try {
      return await run();
    } catch (error) {
      this.gate.report('fallback', calls.length, error);
      return this.decisions('allow', calls, consuming);
    }
  }

  /**
   * Fail open: allowed, reported as a fresh limit would be after (consume) or before (peek) this
   * request; nothing is counted anywhere. Fail closed: refused with `'store-unavailable'`, to retry
   * when the breaker next probes Redis.
   */
  private decisions(
    policy: Exclude<FailurePolicy, Store>,
    calls: readonly LimitCall[],
    consuming: boolean,
  ): Decision[] {
    if (policy === 'allow') {
      return calls.map((call) => {
        const limit = call.algorithm.limit;
        return decide(
          true,
          limit,
          Math.max(0, limit - (consuming ? call.cost : 0)),
          0,
          0,
          0,
          call.policy,
          undefined,
        );
      });
    }
    const retryAfter = this.gate.retryAfter();
    return calls.map((call) =>
      decide(false, call.algorithm.limit, 0, 0, retryAfter, 0, call.policy, 'store-unavailable'),
    );
  }
}
