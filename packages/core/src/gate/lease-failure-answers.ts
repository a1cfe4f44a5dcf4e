import type { LeaseAcquire, LeaseCall, LeaseStore } from '../concurrency/lease-store.js';
import { type Decision, decide } from '../decision.js';
import { ErrorCode, SluiceError } from '../errors.js';
import type { CallGate } from './call-gate.js';
import type { FailureAnswerOptions } from './failure-answers.js';
import { PolicyLeases } from './policy-leases.js';

/**
 * What a store answers for a concurrency lease when its backend does not: `'local'` and a store
 * given as the policy decide on that store's leases (`outageShare` of each limit, at least one
 * lease) and take that lease's release, `'allow'` admits with a lease whose release does nothing,
 * `'deny'` refuses with reason `'store-unavailable'`. The leases it answered are remembered, so
 * that their release goes where they were taken, never to the backend.
 */
export class LeaseFailureAnswers {
  private readonly policyLeases = new PolicyLeases();
  private readonly policy: FailureAnswerOptions['failurePolicy'];
  private readonly fallbackStore: FailureAnswerOptions['fallback'];
  private readonly share: number;

  constructor(
    options: FailureAnswerOptions,
    private readonly gate: CallGate,
    private readonly clock: () => number,
    /** The store's name in error messages. */
    private readonly store: string,
  ) {
    this.policy = options.failurePolicy;
    this.fallbackStore = options.fallback;
    this.share = options.outageShare;
  }

  /** Leases answered by the failure policy and not yet released. */
  get size(): number {
    return this.policyLeases.size;
  }

  async acquire(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    if (this.policy === 'deny') return this.unavailable(call);
    const answer = await this.fallback((leases) => leases.acquire(this.scaled(call), now));
    if (answer !== undefined) {
      if (answer.decision.allowed) this.remember(call, answer.leases);
      return answer.decision;
    }
    // Fail open: admitted as a fresh set would admit it, held nowhere.
    this.remember(call, undefined);
    return decide(true, call.limit, call.limit - 1, 0, 0, 0, call.policy, undefined);
  }

  async peek(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    if (this.policy === 'deny') return this.unavailable(call);
    const answer = await this.fallback((leases) => leases.peek(this.scaled(call), now));
    return answer?.decision ?? decide(true, call.limit, call.limit, 0, 0, 0, call.policy, undefined);
  }

  /**
   * The release of a lease the policy answered (never rejects), or `undefined` when it was not one:
   * then it is the backend's to release.
   */
  release(call: LeaseCall, now: number | undefined): Promise<boolean> | undefined {
    const policy = this.policyLeases.take(call.id);
    if (policy === undefined) return undefined;
    const store = policy.store;
    if (store === undefined) return Promise.resolve(false);
    return (async () => {
      try {
        return await store.release(call, now);
      } catch (error) {
        this.gate.report('fallback', 1, error);
        return false;
      }
    })();
  }

  /** Deletes the fallback store's lease set (the backend's is the caller's to delete). */
  async reset(space: string, key: string): Promise<void> {
    await this.fallbackStore?.leases?.reset(space, key);
  }

  /** The call against `outageShare` of its limit, at least one lease. */
  private scaled(call: LeaseAcquire): LeaseAcquire {
    if (this.share === 1) return call;
    return { ...call, limit: Math.max(1, Math.floor(call.limit * this.share + 1e-9)) };
  }

  clear(): void {
    this.policyLeases.clear();
  }

  /**
   * The fallback store's answer when the policy is a store with leases; `undefined` (fail open)
   * when the policy is `'allow'`, the store has no leases, or it failed too (both reported).
   */
  private async fallback(
    run: (leases: LeaseStore) => Decision | Promise<Decision>,
  ): Promise<{ decision: Decision; leases: LeaseStore } | undefined> {
    const policy = this.fallbackStore;
    if (policy === undefined) return undefined;
    const leases = policy.leases;
    if (leases === undefined) {
      this.gate.report(
        'fallback',
        1,
        new SluiceError(
          ErrorCode.UNSUPPORTED,
          `${this.store}: the fallback store has no leases (store.leases); the lease was admitted (fail open)`,
        ),
      );
      return undefined;
    }
    try {
      return { decision: await run(leases), leases };
    } catch (error) {
      this.gate.report('fallback', 1, error);
      return undefined;
    }
  }

  private unavailable(call: LeaseAcquire): Decision {
    return decide(false, call.limit, 0, 0, this.gate.retryAfter(), 0, call.policy, 'store-unavailable');
  }

  private remember(call: LeaseAcquire, store: LeaseStore | undefined): void {
    const now = this.clock();
    this.policyLeases.add(call.id, now + call.ttl, store, now);
  }
}
