import { describeValue, ErrorCode, SluiceError } from './errors.js';

/** Milliseconds as a number, or a readable string: `'500ms'`, `'30s'`, `'15m'`, `'1h'`, `'1d'`, `'1.5h'`. */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/**
 * The longest duration, in ms, any option accepts, and the longest span an algorithm's state may
 * cover (a full backlog, an empty bucket): 1e13 ms, about 317 years. Times stay below 2^44 ms
 * until the year 2500, where a double still resolves 0.002 ms (finer than the algorithms' slack),
 * and every ttl is an integer Redis reads back (`PX`; 1e17 is written `1e+17`, which Redis refuses).
 */
export const MAX_DURATION = 1e13;

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * Reads a duration option into milliseconds. Throws a coded error naming the option when it is
 * unreadable, not finite, or not above zero: a silent default would hide the mistake.
 */
export function parseDuration(option: string, value: unknown): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = DURATION.exec(value.trim());
    if (!match) {
      throw new SluiceError(
        ErrorCode.INVALID_DURATION,
        `${option} must be milliseconds or a duration like '500ms', '30s', '15m', '1h', '1d'; got ${describeValue(value)}`,
        { option, value },
      );
    }
    ms = Number(match[1]) * UNIT_MS[match[2] as DurationUnit];
  } else {
    throw new SluiceError(
      ErrorCode.INVALID_DURATION,
      `${option} must be milliseconds or a duration string; got ${describeValue(value)}`,
      { option, value },
    );
  }
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a finite duration above 0 ms; got ${describeValue(value)}`,
      { option, value },
    );
  }
  if (ms > MAX_DURATION) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be at most ${MAX_DURATION} ms (about 317 years); got ${describeValue(value)}`,
      { option, value },
    );
  }
  return ms;
}

/**
 * Refuses an algorithm whose state can cover more than MAX_DURATION (`span` ms, `what` says how it
 * is made), though each of its options is in range. Names the duration `option` to lower.
 */
export function assertSpan(option: string, value: unknown, span: number, what: string): void {
  if (!(span <= MAX_DURATION)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${what} (${span} ms) must be at most ${MAX_DURATION} ms (about 317 years): lower ${option} or the counts`,
      { option, value },
    );
  }
}
