import { describeValue, ErrorCode, SluiceError } from './errors.js';

/**
 * The latest `now` accepted, ms since the epoch: 2^42 ms, 2109-05-15. Every algorithm computes in
 * doubles of ms since the epoch; below 2^42 a double resolves 2^-11 ms or better, half of
 * {@link MIN_UNIT_TIME}, so a unit of admission always moves the time it is added to. Past it
 * the arithmetic loses units (at 1e300, `now - 1000` is `now`, and a fresh key was refused with
 * `retryAfter: 0`). Earliest: 0 (the epoch), as Smyte refuses negative client times.
 */
export const MAX_TIME = 2 ** 42;

/**
 * The shortest time per unit of admission an algorithm accepts, in ms: 2^-10 ms, 1024 units per
 * ms per key. A token bucket's `refillInterval / refillAmount` (stepped: `refillInterval`), GCRA's
 * and the leaky bucket queue's `period / rate`, a window, a sliding window counter's sub-window
 * (`window / precision`). Shorter units are below what the arithmetic can honour at epoch-scale
 * times (`tokenBucket({ capacity: 10, refillInterval: 0.0001 })` refused a fresh key with
 * `retryAfter: 0`, since `now - 1e-4` is `now` at 1.7e12 ms).
 */
export const MIN_UNIT_TIME = 2 ** -10;

/**
 * Throws a coded error naming `option` when `unit` (ms per unit of admission, derived from it) is
 * shorter than {@link MIN_UNIT_TIME}. `what` says how the unit is derived, for the message.
 */
export function assertUnit(option: string, value: unknown, unit: number, what: string): void {
  if (unit >= MIN_UNIT_TIME) return;
  throw new SluiceError(
    ErrorCode.INVALID_OPTION,
    `${what} must be at least 2^-10 ms (1024 per ms per key), the shortest time the arithmetic can honour at epoch-scale times; got ${unit} ms from ${option} ${describeValue(value)}`,
    { option, value },
  );
}
