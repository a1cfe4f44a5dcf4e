import { describeValue, ErrorCode, SluiceError } from './errors.js';
import { MAX_TIME } from './time-range.js';

/**
 * Throws on any option name not in `known`. The known list is typed against the options type at
 * each call site (`satisfies readonly (keyof Options)[]`), so a renamed option fails to compile.
 */
export function assertKnownOptions(where: string, options: object, known: readonly string[]): void {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${where} options must be an object; got ${describeValue(options)}`,
      {
        option: where,
        value: options,
      },
    );
  }
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new SluiceError(
        ErrorCode.UNKNOWN_OPTION,
        `${where}: unknown option ${JSON.stringify(name)}; accepted: ${known.join(', ')}`,
        { option: name, value: (options as Record<string, unknown>)[name] },
      );
    }
  }
}

export function requireOption<T>(option: string, value: T | undefined): T {
  if (value === undefined) {
    throw new SluiceError(ErrorCode.MISSING_OPTION, `${option} is required`, { option });
  }
  return value;
}

/** An integer ≥ `min` (1 unless said otherwise) and ≤ `max`. */
export function integerOption(
  option: string,
  value: unknown,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be an integer ${range}; got ${describeValue(value)}`,
      {
        option,
        value,
      },
    );
  }
  return value;
}

/** A finite number above zero. */
export function positiveOption(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a finite number above 0; got ${describeValue(value)}`,
      { option, value },
    );
  }
  return value;
}

export function booleanOption(option: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be true or false; got ${describeValue(value)}`,
      {
        option,
        value,
      },
    );
  }
  return value;
}

export function oneOfOption<T extends string>(option: string, value: unknown, accepted: readonly T[]): T {
  if (typeof value !== 'string' || !accepted.includes(value as T)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be one of ${accepted.map((a) => `'${a}'`).join(', ')}; got ${describeValue(value)}`,
      { option, value },
    );
  }
  return value as T;
}

/** The per-call cost: an integer ≥ 1. Checked on every call because it comes from the request. */
export function assertCost(cost: unknown): asserts cost is number {
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new SluiceError(ErrorCode.INVALID_COST, `cost must be an integer ≥ 1; got ${describeValue(cost)}`, {
      option: 'cost',
      value: cost,
    });
  }
}

/** A `now` at call time: ms since the epoch, from 0 to `MAX_TIME` (see `time-range.ts`). */
export function assertTime(now: unknown): asserts now is number {
  if (typeof now !== 'number' || !(now >= 0 && now <= MAX_TIME)) {
    throw new SluiceError(
      ErrorCode.INVALID_TIME,
      `now must be ms since the epoch, from 0 to ${MAX_TIME} (2109-05-15); got ${describeValue(now)}`,
      {
        option: 'now',
        value: now,
      },
    );
  }
}

export function assertKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') {
    throw new SluiceError(ErrorCode.INVALID_KEY, `key must be a string; got ${describeValue(key)}`, {
      option: 'key',
      value: key,
    });
  }
}

/** An optional function option: `undefined`, or a function. */
export function functionOption<F>(option: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a function; got ${describeValue(value)}`,
      {
        option,
        value,
      },
    );
  }
  return value;
}
