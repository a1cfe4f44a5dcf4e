/** A value now, or later: what a store or a step answers (synchronously where it can). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * `next(value)`, at once when `value` is not a promise: a chain of steps that may each answer
 * synchronously (the memory store, sync keys) allocates no promise unless one of them is async.
 * (Not named `then`: a module exporting `then` is a thenable, which `await import()` would call.)
 */
export function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** Every value of `values`, as an array at once when none is a promise. */
export function all<T>(values: readonly MaybePromise<T>[]): MaybePromise<T[]> {
  for (const value of values) if (value instanceof Promise) return Promise.all(values);
  return values as T[];
}
