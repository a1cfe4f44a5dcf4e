import type { Decision } from '@sluice/core';
import type { LeaseAcquire, LeaseCall, LeaseStore } from '@sluice/core/adapter';
import { hostKeys } from './host-keys.js';
import { acquireIn, peekLeaseIn, releaseIn } from './lease-steps.js';
import type { Job, StateDb } from './state-db.js';

/**
 * HostStore's concurrency leases (the concurrency limiter and the fleet shedder): each lease set
 * stored in the environment like a limit's state and changed inside a write transaction
 * (lease-steps.ts), so a lease limit is exact across the host's processes. A set lasts until its
 * newest lease expires; a lease of a killed process is removed once its ttl has passed.
 */
export class HostLeases implements LeaseStore {
  constructor(
    private readonly run: <T>(ids: readonly string[], job: Job<T>) => Promise<T>,
    private readonly db: StateDb,
    private readonly clock: () => number,
  ) {}

  acquire(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    const id = hostKeys.lease(call.space, call.key);
    return this.run([id], (tx) => acquireIn(tx, id, call, now ?? tx.now, tx.now));
  }

  /** What acquire would answer, from the latest committed state (no lock taken). */
  peek(call: LeaseAcquire, now: number | undefined): Decision {
    const storeNow = this.clock();
    return peekLeaseIn(
      this.db.snapshot(),
      hostKeys.lease(call.space, call.key),
      call,
      now ?? storeNow,
      storeNow,
    );
  }

  release(call: LeaseCall, now: number | undefined): Promise<boolean> {
    const id = hostKeys.lease(call.space, call.key);
    return this.run([id], (tx) => releaseIn(tx, id, call.id, now ?? tx.now, tx.now));
  }

  reset(space: string, key: string): Promise<void> {
    const id = hostKeys.lease(space, key);
    return this.run([id], (tx) => tx.write(id, undefined, 0, tx.now));
  }
}
