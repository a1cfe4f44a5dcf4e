import { ErrorCode, SluiceError } from '@sluice/core';
import { type BreakerState, CircuitBreaker } from './breaker.js';
import type { RedisStoreErrorEvent, ResolvedOptions } from './options.js';
import { withTimeout } from './timeout.js';

export type Operation = RedisStoreErrorEvent['operation'];

/**
 * What every call to Redis goes through, limits and leases alike: the circuit breaker, the
 * timeout, and the `onError` report. Callers supply what to answer instead (the failure policy).
 */
export class Guard {
  private readonly breaker: CircuitBreaker | undefined;

  constructor(private readonly options: ResolvedOptions) {
    const { breaker, clock, onBreakerChange } = options;
    this.breaker =
      breaker === undefined
        ? undefined
        : new CircuitBreaker(breaker.failures, breaker.cooldown, clock, (state, previous) =>
            onBreakerChange?.(state, previous),
          );
  }

  /** The circuit breaker's state (`'closed'` when there is no breaker). */
  get state(): BreakerState {
    return this.breaker?.state ?? 'closed';
  }

  /** ms until the breaker next lets a call through (its whole cooldown while closed); 1000 with no breaker. */
  retryAfter(): number {
    return this.breaker?.retryAfter() ?? 1000;
  }

  /**
   * Runs `attempt` under the breaker and the timeout; any failure is reported and answered by
   * `fail`, so the result never rejects (unless `fail` does). An open breaker answers with `fail`
   * at once, without a report.
   */
  async run<T>(
    operation: Operation,
    keys: number,
    attempt: () => Promise<T>,
    fail: () => T | Promise<T>,
  ): Promise<T> {
    if (this.breaker !== undefined && !this.breaker.admit()) return fail();
    try {
      const result = await withTimeout(attempt(), this.options.timeout, operation);
      this.breaker?.success();
      return result;
    } catch (error) {
      this.breaker?.failure();
      this.report(operation, keys, error);
      return fail();
    }
  }

  /**
   * For administrative calls whose caller must know they did not happen (`reset`): rejects with
   * `ERR_SLUICE_STORE_FAILURE` when the breaker is open or Redis fails (after reporting it).
   */
  async strict(operation: Operation, keys: number, attempt: () => Promise<unknown>): Promise<void> {
    if (this.breaker !== undefined && !this.breaker.admit()) {
      throw new SluiceError(
        ErrorCode.STORE_FAILURE,
        `RedisStore: the circuit breaker is open; ${operation} not applied`,
      );
    }
    try {
      await withTimeout(attempt(), this.options.timeout, operation);
      this.breaker?.success();
    } catch (error) {
      this.breaker?.failure();
      this.report(operation, keys, error);
      throw new SluiceError(ErrorCode.STORE_FAILURE, `RedisStore: ${operation} failed: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  report(operation: Operation, keys: number, error: unknown): void {
    const onError = this.options.onError;
    if (onError === undefined) return;
    try {
      onError({ operation, keys, error, breaker: this.state });
    } catch {
      // A throwing hook must not turn a handled failure into a crash.
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
