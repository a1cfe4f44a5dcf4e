import { describeValue, ErrorCode, SluiceError } from './errors.js';

/** Milliseconds as a number, or a readable string: `'500ms'`, `'30s'`, `'15m'`, `'1h'`, `'1d'`, `'1.5h'`. */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

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
  return ms;
}
