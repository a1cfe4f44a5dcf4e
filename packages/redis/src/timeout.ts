import { ErrorCode, SluiceError } from '@sluice/core';

/**
 * Settles with `promise`, or rejects after `ms`. The late outcome of `promise` is still observed,
 * so a command that fails after its timeout never becomes an unhandled rejection.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, operation: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new SluiceError(ErrorCode.STORE_FAILURE, `Redis did not answer ${operation} within ${ms} ms`));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
