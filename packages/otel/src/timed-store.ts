import type { Decision, MaybePromise, Store } from '@sluice/core';
import type { LimitCall } from '@sluice/core/adapter';

/** Which store call took how long: `(operation, ms)`. */
export type StoreTiming = (operation: 'consume' | 'peek' | 'refund' | 'reset', ms: number) => void;

/**
 * The same store, with the duration of every `consume`, `peek`, `refund` and `reset` given to
 * `record` (a failed call is timed too: a timeout is the latency users feel). Leases and
 * `shutdown` pass through untimed. A memory store's synchronous answers stay synchronous.
 */
export function timedStore(store: Store, record: StoreTiming): Store {
  const timed = <T>(operation: Parameters<StoreTiming>[0], run: () => MaybePromise<T>): MaybePromise<T> => {
    const start = performance.now();
    let result: MaybePromise<T>;
    try {
      result = run();
    } catch (error) {
      record(operation, performance.now() - start);
      throw error;
    }
    if (!(result instanceof Promise)) {
      record(operation, performance.now() - start);
      return result;
    }
    return result.then(
      (value) => {
        record(operation, performance.now() - start);
        return value;
      },
      (error: unknown) => {
        record(operation, performance.now() - start);
        throw error;
      },
    );
  };
  const wrapped: Store = {
    consume: (calls: readonly LimitCall[], now: number | undefined): MaybePromise<Decision[]> =>
      timed('consume', () => store.consume(calls, now)),
    peek: (calls, now) => timed('peek', () => store.peek(calls, now)),
    reset: (calls) => timed('reset', () => store.reset(calls)),
    shutdown: () => store.shutdown(),
  };
  const refund = store.refund;
  if (refund !== undefined) {
    (wrapped as { refund: Store['refund'] }).refund = (calls, now) =>
      timed('refund', () => refund.call(store, calls, now));
  }
  if (store.leases !== undefined) (wrapped as { leases: Store['leases'] }).leases = store.leases;
  return wrapped;
}
