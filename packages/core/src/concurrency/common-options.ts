import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions, assertTime } from '../validate.js';

/** A non-empty string naming a limiter or shedder. */
export function nameOption(value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `name must be a non-empty string; got ${describeValue(value)}`,
      { option: 'name', value },
    );
  }
  return value;
}

/** The `now` of a call's options, checked. */
export function readNow(options: { now?: number } | undefined, known: readonly string[]): number | undefined {
  if (options === undefined) return undefined;
  assertKnownOptions('acquire', options, known);
  if (options.now !== undefined) assertTime(options.now);
  return options.now;
}
