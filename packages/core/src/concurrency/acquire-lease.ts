import type { Decision } from '../decision.js';
import { describeValue, ErrorCode, SluiceError, storeFailure } from '../errors.js';
import type { MaybePromise, Store } from '../store.js';
import { type Lease, refusedLease, takenLease } from './lease.js';
import type { LeaseAcquire, LeaseStore } from './lease-store.js';

/** The store's lease extension, or a coded error at creation when the store has none. */
export function requireLeases(where: string, store: Store): LeaseStore {
  const leases = (store as Partial<Store> | undefined)?.leases;
  if (leases === undefined || leases === null || typeof leases.acquire !== 'function') {
    throw new SluiceError(
      ErrorCode.UNSUPPORTED,
      `${where} needs a store with leases (MemoryStore, RedisStore); got ${describeValue(store)} without them`,
      { option: 'store', value: store },
    );
  }
  return leases;
}

/**
 * Takes a lease and wraps the answer: synchronous when the store is. A store failure rejects with
 * `ERR_SLUICE_STORE_FAILURE` (the caller's failure policy decides), as `Limiter.check` does.
 * @param shape rewrites a refusal (the fleet shedder turns `'concurrency'` into `'shed'`)
 */
export function acquireLease(
  leases: LeaseStore,
  call: LeaseAcquire,
  now: number | undefined,
  onError: ((error: unknown) => void) | undefined,
  shape?: (refused: Decision) => Decision,
): MaybePromise<Lease> {
  const wrap = (decision: Decision): Lease => {
    if (!decision.allowed) return refusedLease(shape === undefined ? decision : shape(decision));
    return takenLease(decision, (at) => leases.release(call, at), onError);
  };
  let result: MaybePromise<Decision>;
  try {
    result = leases.acquire(call, now);
  } catch (error) {
    return Promise.reject(storeFailure(error));
  }
  if (typeof (result as PromiseLike<Decision>).then !== 'function') return wrap(result as Decision);
  return Promise.resolve(result).then(wrap, (error: unknown) => Promise.reject(storeFailure(error)));
}
