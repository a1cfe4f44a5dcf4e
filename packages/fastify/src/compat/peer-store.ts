import type { Decision, LimitCall, Store } from '@sluice/core';
import { decide } from '@sluice/core/adapter';

/** An @fastify/rate-limit store: its `incr(key, cb, timeWindow, max)` counts, `child()` makes a route's. */
export interface PeerStoreInstance {
  incr(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
    max: number,
  ): void;
  read?(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
    max: number,
  ): void;
  child(routeOptions: Record<string, unknown>): PeerStoreInstance;
}

/** The class given as `store`, constructed with the plugin's resolved options, as there. */
export type PeerStoreClass = new (options: Record<string, unknown>) => PeerStoreInstance;

/** Whether `store` is an @fastify/rate-limit store class rather than a sluice store. */
export function isPeerStoreClass(store: unknown): store is PeerStoreClass {
  return (
    typeof store === 'function' &&
    typeof (store as { prototype?: { incr?: unknown } }).prototype?.incr === 'function'
  );
}

/**
 * An @fastify/rate-limit store under sluice's `Store` contract, so an app keeps the store it runs
 * (a knex or DynamoDB one): the store counts as it always did (its own window, `continueExceeding`,
 * backoff), and its `{ current, ttl }` becomes a decision for `max` (the limit's `limit`) over
 * `timeWindow` (its `window`). sluice's algorithm, blocks and refunds are not applied: the store's
 * counting is its own. `peek` needs the store's `read`, as `{ increment: false }` does there.
 */
export class PeerStore implements Store {
  private readonly store: PeerStoreInstance;
  private readonly failed: (error: unknown) => void;

  /** @param failed hears each error of the store, answered as a RedisStore under `failurePolicy: 'allow'` answers its own */
  constructor(store: PeerStoreInstance, failed: (error: unknown) => void) {
    this.store = store;
    this.failed = failed;
  }

  /**
   * The store's counts; a failure answers "let through, uncounted" (`'store-unavailable'`), and
   * each limit's `skipOnError` then says whether the request goes on or fails with the error.
   */
  consume(calls: readonly LimitCall[]): Promise<Decision[]> {
    return Promise.all(
      calls.map((call) =>
        this.call('incr', call).catch((error: unknown) => {
          this.failed(error);
          return decide(
            true,
            call.algorithm.limit,
            call.algorithm.limit,
            0,
            0,
            0,
            call.policy,
            'store-unavailable',
          );
        }),
      ),
    );
  }

  peek(calls: readonly LimitCall[]): Promise<Decision[]> {
    if (typeof this.store.read !== 'function') {
      return Promise.reject(
        new Error(
          'The configured rate-limit store does not implement a `read` method, which is required to use `{ increment: false }`',
        ),
      );
    }
    return Promise.all(calls.map((call) => this.call('read', call)));
  }

  /** The store has no way to forget a key: nothing to do. */
  reset(): void {}

  shutdown(): void {}

  private call(method: 'incr' | 'read', call: LimitCall): Promise<Decision> {
    const max = call.algorithm.limit;
    const timeWindow = call.algorithm.window;
    return new Promise((resolve, reject) => {
      const done = (error: Error | null, result?: { current: number; ttl: number }) => {
        if (error !== null || result === undefined)
          return reject(error ?? new Error('the store answered nothing'));
        const { current, ttl } = result;
        const allowed = current <= max;
        resolve(
          decide(
            allowed,
            max,
            Math.max(0, max - current),
            ttl,
            allowed ? 0 : ttl,
            0,
            call.policy,
            allowed ? undefined : 'rate-limited',
          ),
        );
      };
      if (method === 'read') this.store.read!(call.key, done, timeWindow, max);
      else this.store.incr(call.key, done, timeWindow, max);
    });
  }
}
