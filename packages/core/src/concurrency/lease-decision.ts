import { ceilMs, type Decision, decide } from '../decision.js';
import type { LeaseAcquire } from './lease-store.js';

/**
 * The decision for one lease acquire, from what the atomic step saw: shared by every lease store
 * so that memory and Redis answer alike (the Redis script returns these four numbers).
 *
 * - `remaining`: free slots after the step.
 * - `resetAfter`: ms until every lease held now would have expired (the newest one's ttl).
 * - `retryAfter` (refused): the time until the oldest lease expires, capped by the short hint
 *   `call.retryAfter`: a slot usually frees much sooner, when some request finishes.
 *
 * @param count leases held after the step
 * @param oldest lowest `startedAt` held after the step (undefined when none)
 * @param newest highest `startedAt` held after the step (undefined when none)
 */
export function leaseDecision(
  allowed: boolean,
  count: number,
  oldest: number | undefined,
  newest: number | undefined,
  call: LeaseAcquire,
  now: number,
): Decision {
  const resetAfter = newest === undefined ? 0 : ceilMs(newest + call.ttl - now);
  if (allowed) {
    return decide(
      true,
      call.limit,
      Math.max(0, call.limit - count),
      resetAfter,
      0,
      0,
      call.policy,
      undefined,
    );
  }
  const untilOldest = oldest === undefined ? 0 : oldest + call.ttl - now;
  return decide(
    false,
    call.limit,
    0,
    resetAfter,
    ceilMs(Math.min(call.retryAfter, untilOldest)),
    0,
    call.policy,
    'concurrency',
  );
}
