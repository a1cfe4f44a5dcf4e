import type { Decision } from '@sluice/core';
import { type LeaseAcquire, leaseDecision } from '@sluice/core/adapter';

/**
 * A lease set as the server stores it: the Redis twin's sorted set of `id → startedAt` as two
 * arrays ordered by `startedAt` (ties in arrival order), and the ttl of the last acquire (release
 * expires stale leases by it). Each function is one atomic step of `LeaseStore`'s contract
 * (core's lease-store.ts), run inside a StateDb transaction, so a set is exact whichever worker
 * serves the call. The set is stored until its newest lease expires ({@link leaseTtl}).
 */
export type LeaseSet = readonly [times: readonly number[], ids: readonly string[], ttl: number];

/** What a step leaves: the set to store (`undefined`: delete it) or `KEEP` (nothing to write). */
export const KEEP = Symbol('keep');

/** The leases still held at `now`: those started after `now - ttl`. */
function live(set: LeaseSet | undefined, now: number, ttl: number): [times: number[], ids: string[]] {
  if (set === undefined) return [[], []];
  const [times, ids] = set;
  let first = 0;
  while (first < times.length && times[first]! <= now - ttl) first++;
  return [times.slice(first), ids.slice(first)];
}

/** acquire: renew a lease held, add one below the limit, or refuse (nothing written). */
export function acquireLease(
  set: LeaseSet | undefined,
  call: LeaseAcquire,
  now: number,
): { decision: Decision; next: LeaseSet | typeof KEEP } {
  const [times, ids] = live(set, now, call.ttl);
  const renewed = ids.indexOf(call.id);
  if (renewed < 0 && ids.length >= call.limit) {
    return { decision: leaseDecision(false, ids.length, times[0], times.at(-1), call, now), next: KEEP };
  }
  if (renewed >= 0) {
    times.splice(renewed, 1);
    ids.splice(renewed, 1);
  }
  // In `startedAt` order; equal times keep arrival order.
  let at = times.length;
  while (at > 0 && times[at - 1]! > now) at--;
  times.splice(at, 0, now);
  ids.splice(at, 0, call.id);
  return {
    decision: leaseDecision(true, ids.length, times[0], times.at(-1), call, now),
    next: [times, ids, call.ttl],
  };
}

/** peek: what acquire would answer, nothing written. */
export function peekLease(set: LeaseSet | undefined, call: LeaseAcquire, now: number): Decision {
  const [times, ids] = live(set, now, call.ttl);
  const allowed = ids.length < call.limit || ids.includes(call.id);
  return leaseDecision(allowed, ids.length, times[0], times.at(-1), call, now);
}

/** release: `found` when `id` was still held; the set without it (deleted when empty). */
export function releaseLease(
  set: LeaseSet | undefined,
  id: string,
  now: number,
): { found: boolean; next: LeaseSet | undefined | typeof KEEP } {
  if (set === undefined) return { found: false, next: KEEP };
  const [times, ids] = live(set, now, set[2]);
  const at = ids.indexOf(id);
  if (at >= 0) {
    times.splice(at, 1);
    ids.splice(at, 1);
  }
  return { found: at >= 0, next: ids.length === 0 ? undefined : [times, ids, set[2]] };
}

/** How long a set is stored: until its newest lease expires. */
export function leaseTtl(set: LeaseSet, now: number): number {
  const newest = set[0].at(-1);
  return newest === undefined ? 0 : newest + set[2] - now;
}
