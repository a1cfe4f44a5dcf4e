import type { Decision } from '@sluice/core';
import type { LeaseAcquire } from '@sluice/core/adapter';
import { acquireLease, KEEP, type LeaseSet, leaseTtl, peekLease, releaseLease } from './lease-state.js';
import type { StateReader } from './state-reader.js';
import type { StateWriter } from './state-txn.js';

/**
 * `LeaseStore`'s steps on the lease set stored under `id`, each inside a write transaction (a
 * peek from any reader): sluice-server's `SL.LEASE` and HostStore's leases run the same steps, so
 * a lease limit is exact whichever process serves the call. `now` is the call's time, `storeNow`
 * the store's clock (expiry). A set is stored until its newest lease expires.
 */

/** acquire: renew a lease held, add one below the limit, or refuse (nothing written). */
export function acquireIn(
  tx: StateWriter,
  id: string,
  call: LeaseAcquire,
  now: number,
  storeNow: number,
): Decision {
  const { decision, next } = acquireLease(tx.read(id, storeNow) as LeaseSet | undefined, call, now);
  if (next !== KEEP) tx.writeFrom(id, next, leaseTtl(next, now), now);
  return decision;
}

/** peek: what acquire would answer. */
export function peekLeaseIn(
  reader: StateReader,
  id: string,
  call: LeaseAcquire,
  now: number,
  storeNow: number,
): Decision {
  return peekLease(reader.read(id, storeNow) as LeaseSet | undefined, call, now);
}

/** release: whether `leaseId` was still held; the set without it (deleted when empty). */
export function releaseIn(
  tx: StateWriter,
  id: string,
  leaseId: string,
  now: number,
  storeNow: number,
): boolean {
  const { found, next } = releaseLease(tx.read(id, storeNow) as LeaseSet | undefined, leaseId, now);
  if (next !== KEEP) tx.writeFrom(id, next, next === undefined ? 0 : leaseTtl(next, now), now);
  return found;
}
