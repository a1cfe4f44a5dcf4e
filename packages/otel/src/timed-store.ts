import type { MaybePromise, Store } from '@sluice/core';

/** The store calls that are timed, by the name `sluice.store.duration` gives them. */
export type StoreOperation = 'consume' | 'peek' | 'refund' | 'charge' | 'reset';

/** Which store call took how long: `(operation, ms)`. */
export type StoreTiming = (operation: StoreOperation, ms: number) => void;

/**
 * How each member of the `Store` contract is passed on: timed under an operation's name, or as it
 * is (`shutdown`, `leases`). Typed against `Store`, so a member added to the contract is a compile
 * error here until the wrapper passes it on: a dropped optional method (a `charge` the wrapper did
 * not have) silently switches a feature off behind it.
 */
const MEMBERS = {
  consume: 'consume',
  // The Limiter's direct path for a single limit: the same operation as `consume`.
  consumeOne: 'consume',
  peek: 'peek',
  reset: 'reset',
  refund: 'refund',
  charge: 'charge',
  shutdown: undefined,
  leases: undefined,
  // A flag, not a method: passed on as it is (the wrapper answers as the store does).
  synchronous: undefined,
} as const satisfies Record<keyof Store, StoreOperation | undefined>;

type Method = (...args: unknown[]) => unknown;

/**
 * The same store, with the duration of every `consume` (and `consumeOne`), `peek`, `refund`,
 * `charge` and `reset` given to `record` (a failed call is timed too: a timeout is the latency
 * users feel). Leases and `shutdown` pass through untimed. An optional method the store lacks is
 * absent from the wrapper too. A memory store's synchronous answers stay synchronous.
 */
export function timedStore(store: Store, record: StoreTiming): Store {
  const timed = <T>(operation: StoreOperation, run: () => MaybePromise<T>): MaybePromise<T> => {
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
  const source = store as unknown as Record<string, unknown>;
  const wrapped: Record<string, unknown> = {};
  for (const [member, operation] of Object.entries(MEMBERS) as [string, StoreOperation | undefined][]) {
    const value = source[member];
    if (value === undefined) continue;
    if (typeof value !== 'function') {
      wrapped[member] = value;
    } else if (operation === undefined) {
      wrapped[member] = (value as Method).bind(store);
    } else {
      wrapped[member] = (...args: unknown[]) => timed(operation, () => (value as Method).apply(store, args));
    }
  }
  return wrapped as unknown as Store;
}
