import { ceilMs } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions } from '../validate.js';

/** The range a shed request's `retryAfter` is drawn from, uniformly. */
export interface RetryRange {
  /** Shortest hint: ms or `'1s'`… @default '1s' */
  min?: Duration;
  /** Longest hint: ms or `'5s'`…, ≥ `min`. @default '5s' */
  max?: Duration;
}

/** `[min, max]` in ms. */
export type ResolvedRetryRange = readonly [min: number, max: number];

const KNOWN = ['min', 'max'] as const satisfies readonly (keyof RetryRange)[];

export function retryRangeOption(value: RetryRange | undefined): ResolvedRetryRange {
  if (value === undefined) return [1000, 5000];
  assertKnownOptions('retryAfter', value, KNOWN);
  const min = parseDuration('retryAfter.min', value.min ?? '1s');
  const max = parseDuration('retryAfter.max', value.max ?? Math.max(min, 5000));
  if (max < min) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `retryAfter.max must be ≥ retryAfter.min (${min} ms); got ${describeValue(value.max)}`,
      { option: 'retryAfter.max', value: value.max },
    );
  }
  return [min, max];
}

/**
 * A jittered retry hint: shed clients that all retry after the same delay come back as one
 * wave. `u` is a uniform draw in [0, 1).
 */
export function retryHint(range: ResolvedRetryRange, u: number): number {
  return ceilMs(range[0] + u * (range[1] - range[0]));
}
