import type { Decision } from '../decision.js';
import type { MaybePromise } from '../store.js';

/**
 * The answer to an acquire: the decision, and the way to give the slot back.
 *
 * Call `release()` when the request is over, whatever way it ended (finished, errored, client
 * gone). It is idempotent: only the first call reaches the store, later calls return `false`.
 * Releasing a refused lease, or one whose ttl already expired, is harmless. It never throws or
 * rejects: a store failure is reported to `onError` and answers `false` (the lease then
 * expires after its ttl).
 */
export interface Lease {
  readonly decision: Decision;
  /**
   * Gives the slot back. Resolves to `true` when this call freed a slot that was still taken.
   * @param now ms; @default the store's clock
   */
  release(now?: number): MaybePromise<boolean>;
}

const NOTHING_TO_RELEASE = () => false;

/** A lease for a refused acquire: nothing to give back. */
export function refusedLease(decision: Decision): Lease {
  return { decision, release: NOTHING_TO_RELEASE };
}

/**
 * Wraps a store's release so that it runs at most once and never rejects.
 * @param give the store call; may throw or reject
 */
export function takenLease(
  decision: Decision,
  give: (now: number | undefined) => MaybePromise<boolean>,
  onError: ((error: unknown) => void) | undefined,
): Lease {
  let released = false;
  const failed = (error: unknown): false => {
    try {
      onError?.(error);
    } catch {
      // A throwing hook must not turn a release into a crash: the lease expires after its ttl.
    }
    return false;
  };
  return {
    decision,
    release(now?: number): MaybePromise<boolean> {
      if (released) return false;
      released = true;
      try {
        const result = give(now);
        return typeof result === 'boolean' ? result : result.catch(failed);
      } catch (error) {
        return failed(error);
      }
    },
  };
}
