/**
 * Stable error codes. A code never changes meaning once released; messages may be reworded.
 */
export const ErrorCode = {
  /** An option has a value outside what it accepts (zero, negative, NaN, Infinity, wrong type). */
  INVALID_OPTION: 'ERR_SLUICE_INVALID_OPTION',
  /** An option name that does not exist (usually a typo). */
  UNKNOWN_OPTION: 'ERR_SLUICE_UNKNOWN_OPTION',
  /** A required option was not given. */
  MISSING_OPTION: 'ERR_SLUICE_MISSING_OPTION',
  /** A duration string that cannot be read (`'15 minuets'`, `'1y'`). */
  INVALID_DURATION: 'ERR_SLUICE_INVALID_DURATION',
  /** A `cost` at call time that is not an integer ≥ 1. */
  INVALID_COST: 'ERR_SLUICE_INVALID_COST',
  /** A `now` at call time that is not a number from 0 to `MAX_TIME` (ms since the epoch). */
  INVALID_TIME: 'ERR_SLUICE_INVALID_TIME',
  /** A key at call time that is not a string. */
  INVALID_KEY: 'ERR_SLUICE_INVALID_KEY',
  /** An algorithm object that sluice does not know. */
  UNKNOWN_ALGORITHM: 'ERR_SLUICE_UNKNOWN_ALGORITHM',
  /** Two layered limits with the same name. */
  DUPLICATE_LIMIT: 'ERR_SLUICE_DUPLICATE_LIMIT',
  /** A store that does not support an operation (a custom store without leases, say). */
  UNSUPPORTED: 'ERR_SLUICE_UNSUPPORTED',
  /** The store failed and the failure policy is `'throw'`. */
  STORE_FAILURE: 'ERR_SLUICE_STORE_FAILURE',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The one error type sluice throws. `code` is stable; `option` and `value` say what was wrong. */
export class SluiceError extends Error {
  override readonly name = 'SluiceError';
  readonly code: ErrorCode;
  readonly option: string | undefined;
  readonly value: unknown;

  constructor(
    code: ErrorCode,
    message: string,
    details: { option?: string; value?: unknown; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.option = details.option;
    this.value = details.value;
  }
}

/** Renders a bad value for an error message without throwing on odd inputs (symbols, cycles). */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(value);
}

/** A store's failure as a coded error (`ERR_SLUICE_STORE_FAILURE`, the cause kept); a SluiceError as it is. */
export function storeFailure(error: unknown): SluiceError {
  if (error instanceof SluiceError) return error;
  return new SluiceError(
    ErrorCode.STORE_FAILURE,
    `the store failed: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}
