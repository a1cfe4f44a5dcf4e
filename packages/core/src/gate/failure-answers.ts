import { type Decision, decide } from '../decision.js';
import type { LimitCall, Store } from '../store.js';
import type { CallGate } from './call-gate.js';
import type { ResolvedFailureOptions } from './failure-options.js';

/** What `FailureAnswers` reads of the resolved failure options. */
export type FailureAnswerOptions = Pick<ResolvedFailureOptions, 'failurePolicy' | 'fallback' | 'outageShare'>;

/** The policy's decisions for a consume or a peek the backend did not answer. */
type PolicyAnswer = (
  calls: readonly LimitCall[],
  now: number | undefined,
  slot?: number,
) => Decision[] | Promise<Decision[]>;

/**
 * What the store answers when its backend does not (an error, a timeout, an open breaker): the
 * failure policy's decisions. `'local'` and a store given as the policy decide on that store,
 * against `outageShare` of each limit (and when it throws too, the answer fails open and is
 * reported as `'fallback'`); `'allow'` fails open, `'deny'` fails closed.
 */
export class FailureAnswers {
  private readonly policy: ResolvedFailureOptions['failurePolicy'];
  private readonly fallback: Store | undefined;
  private readonly share: number;

  constructor(
    options: FailureAnswerOptions,
    private readonly gate: CallGate,
  ) {
    this.policy = options.failurePolicy;
    this.fallback = options.fallback;
    this.share = options.outageShare;
  }

  /** `slot`: a Cluster call's slot, whose node's breaker says when to retry (`'deny'`). */
  readonly consume: PolicyAnswer = (calls, now, slot) => this.answer('consume', calls, now, slot);

  readonly peek: PolicyAnswer = (calls, now, slot) => this.answer('peek', calls, now, slot);

  /** The fallback store's decisions (scaled to `outageShare`), else the policy's own. */
  private answer(
    mode: 'consume' | 'peek',
    calls: readonly LimitCall[],
    now: number | undefined,
    slot: number | undefined,
  ): Decision[] | Promise<Decision[]> {
    const fallback = this.fallback;
    const consuming = mode === 'consume';
    if (fallback !== undefined) {
      return this.decideOn(calls, () => fallback[mode](this.scaled(calls), now), consuming);
    }
    return this.decisions(calls, consuming, slot);
  }

  /**
   * A refund the backend did not take: the fallback store took the consumption while the backend
   * was unavailable, so it gets the refund (a failure reported as `'fallback'`); nothing otherwise.
   */
  async refund(calls: readonly LimitCall[], now: number | undefined): Promise<undefined> {
    const fallback = this.fallback;
    if (fallback?.refund === undefined) return undefined;
    try {
      await fallback.refund(this.scaled(calls), now);
    } catch (error) {
      this.gate.report('fallback', calls.length, error);
    }
    return undefined;
  }

  /**
   * A charge the backend did not take: the fallback store, which holds the consumption while the
   * backend is unavailable, is charged instead (a failure reported as `'fallback'`); nothing taken
   * otherwise. Answers the units taken, in the limit's units.
   */
  async charge(calls: readonly LimitCall[], now: number | undefined): Promise<number[] | undefined> {
    const fallback = this.fallback;
    if (fallback?.charge === undefined) return undefined;
    try {
      const taken = await fallback.charge(this.scaled(calls), now);
      return this.share === 1 ? taken : taken.map((units) => units * this.share);
    } catch (error) {
      this.gate.report('fallback', calls.length, error);
      return undefined;
    }
  }

  /**
   * The calls as the fallback store sees them: each unit counts `1 / outageShare` there, so a
   * process uses `outageShare` of each limit while the backend is away.
   */
  private scaled(calls: readonly LimitCall[]): readonly LimitCall[] {
    const share = this.share;
    if (share === 1) return calls;
    return calls.map((call) => ({ ...call, cost: call.cost / share }));
  }

  private async decideOn(
    calls: readonly LimitCall[],
    run: () => Decision[] | Promise<Decision[]>,
    consuming: boolean,
  ): Promise<Decision[]> {
    let decisions: Decision[];
    try {
      decisions = await run();
    } catch (error) {
      this.gate.report('fallback', calls.length, error);
      return this.open(calls, consuming);
    }
    return this.share === 1 ? decisions : decisions.map((decision) => this.unscaled(decision));
  }

  /**
   * A fallback decision in the limit's units: `remaining` is what this process may still admit
   * (the scaled units left times the share, whole), so headers never promise more than the share.
   */
  private unscaled(decision: Decision): Decision {
    const remaining = Math.floor(decision.remaining * this.share + 1e-9);
    const limits =
      decision.limits.length === 0 ? decision.limits : decision.limits.map((d) => this.unscaled(d));
    return { ...decision, remaining, limits };
  }

  /**
   * `'allow'`: allowed, counted nowhere, with reason `'store-unavailable'` so that no quota is
   * reported for it (nothing was counted: a fresh quota would be untrue). `'deny'`: refused with
   * `'store-unavailable'`, to retry when the breaker next probes the backend.
   */
  private decisions(calls: readonly LimitCall[], consuming: boolean, slot: number | undefined): Decision[] {
    if (this.policy !== 'deny') return this.open(calls, consuming);
    const retryAfter = this.gate.retryAfter(slot);
    return calls.map((call) =>
      decide(false, call.algorithm.limit, 0, 0, retryAfter, 0, call.policy, 'store-unavailable'),
    );
  }

  private open(calls: readonly LimitCall[], consuming: boolean): Decision[] {
    return calls.map((call) => {
      const limit = call.algorithm.limit;
      const remaining = Math.max(0, limit - (consuming ? call.cost : 0));
      return decide(true, limit, remaining, 0, 0, 0, call.policy, 'store-unavailable');
    });
  }
}
