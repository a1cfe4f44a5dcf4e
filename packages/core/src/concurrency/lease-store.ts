import type { Decision } from '../decision.js';
import type { MaybePromise } from '../maybe.js';

/**
 * One lease operation on one lease set. `space` and `key` together name the set (a store keeps
 * spaces apart the way it keeps algorithm fingerprints apart); `id` names the lease.
 */
export interface LeaseCall {
  /** The limiter's name: two limiters with different names never share a lease set. */
  readonly space: string;
  /** The caller's key, unmodified (any string). The fleet shedder uses one global key. */
  readonly key: string;
  /** The lease: unique across the fleet for at least `ttl` (see `leaseId`). */
  readonly id: string;
}

/** What an acquire (or a peek) needs besides the set: all validated by the limiter. */
export interface LeaseAcquire extends LeaseCall {
  /** Most leases held at once in this set. Integer ≥ 1. */
  readonly limit: number;
  /** ms after which a lease that was never released counts as lost and is removed. > 0. */
  readonly ttl: number;
  /** The longest `retryAfter` a refusal reports, in ms (the short hint). > 0. */
  readonly retryAfter: number;
  /** Copied into the decision's `policy`. */
  readonly policy: string;
}

/**
 * Where concurrency leases live: a store-level extension (`Store.leases`), optional so that a
 * third-party store without it still satisfies `Store`; the limiters refuse such a store at
 * creation with `ERR_SLUICE_UNSUPPORTED`.
 *
 * ## State shape (the Redis twin mirrors it exactly)
 *
 * Each `(space, key)` is one sorted set of `id → startedAt` (ms, the `now` of the acquire that
 * added it), the seed's design. Every operation is one atomic step:
 *
 * - `acquire(call, now)`:
 *   1. remove every member with `startedAt <= now - ttl` (ZREMRANGEBYSCORE -inf now-ttl);
 *   2. if `id` is already a member (a renewal): set its score to `now`, allowed;
 *   3. else if the count is below `limit`: add `(now, id)`, allowed;
 *   4. else refused with reason `'concurrency'`, nothing added;
 *   5. the set expires `newest + ttl - now` ms from now (PEXPIRE), and is deleted when empty.
 *   The decision comes from `leaseDecision(allowed, count, oldest, newest, call, now)` where
 *   `count` is the set's size after the step and `oldest` / `newest` its lowest and highest
 *   scores (undefined when empty).
 * - `peek(call, now)`: steps 1–4 without writing (step 1 may be written: it is invisible).
 * - `release(call, now)`: remove stale members as in step 1, then remove `id`; `true` when `id`
 *   was still held. Deletes the set when empty. Releasing twice, or after expiry, is harmless.
 * - `reset(space, key)`: delete the set.
 *
 * `now` is ms; `undefined` means the store reads its own clock.
 */
export interface LeaseStore {
  acquire(call: LeaseAcquire, now: number | undefined): MaybePromise<Decision>;
  peek(call: LeaseAcquire, now: number | undefined): MaybePromise<Decision>;
  release(call: LeaseCall, now: number | undefined): MaybePromise<boolean>;
  reset(space: string, key: string): MaybePromise<void>;
}
