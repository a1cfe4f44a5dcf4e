import { describeValue, ErrorCode, SluiceError } from './errors.js';

/**
 * Milliseconds as a number, or a readable string: `'500ms'`, `'30s'`, `'15m'`, `'1h'`, `'1d'`,
 * `'1.5h'`, `'2w'`, and the long forms people write: `'1 minute'`, `'15 minutes'`, `'2 days'`
 * (units, any case: ms, millisecond(s), msec(s); s, sec(s), second(s); m, min(s), minute(s); h,
 * hr(s), hour(s); d, day(s); w, week(s)).
 */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
type DurationUnit =
  | 'ms'
  | 's'
  | 'm'
  | 'h'
  | 'd'
  | 'w'
  | `${'millisecond' | 'msec' | 'second' | 'sec' | 'minute' | 'min' | 'hour' | 'hr' | 'day' | 'week'}${'' | 's'}`;

/**
 * The longest duration, in ms, any option accepts, and the longest span an algorithm's state may
 * cover (a full backlog, an empty bucket): 1e13 ms, about 317 years. Times stay below 2^44 ms
 * until the year 2500, where a double still resolves 0.002 ms (finer than the algorithms' slack),
 * and every ttl is an integer Redis reads back (`PX`; 1e17 is written `1e+17`, which Redis refuses).
 */
export const MAX_DURATION = 1e13;

/** Each unit's ms, by every name it is written with (lower case). */
const UNIT_MS = new Map<string, number>();
for (const [ms, names] of [
  [1, ['ms', 'msec', 'msecs', 'millisecond', 'milliseconds']],
  [1_000, ['s', 'sec', 'secs', 'second', 'seconds']],
  [60_000, ['m', 'min', 'mins', 'minute', 'minutes']],
  [3_600_000, ['h', 'hr', 'hrs', 'hour', 'hours']],
  [86_400_000, ['d', 'day', 'days']],
  [604_800_000, ['w', 'week', 'weeks']],
] as const) {
  for (const name of names) UNIT_MS.set(name, ms);
}
const DURATION = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i;

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
    const unit = match === null ? undefined : UNIT_MS.get(match[2]!.toLowerCase());
    if (match === null || unit === undefined) {
      throw new SluiceError(
        ErrorCode.INVALID_DURATION,
        `${option} must be milliseconds or a duration like '500ms', '30s', '15m', '1h', '1d', '1 minute', '2 days'; got ${describeValue(value)}`,
        { option, value },
      );
    }
    ms = Number(match[1]) * unit;
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
