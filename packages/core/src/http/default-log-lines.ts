/**
 * What the adapters' default reporting says, whatever logger writes it (the console, Nest's
 * `Logger`, Fastify's `log`): the same words in every framework.
 */
export const DEFAULT_LOG_LINES = {
  /** `onError`'s default: a store or a request function failed; the failure policy answered. */
  error: 'limiter error, request handled by the storeFailure policy',
  /** The end of `onError`'s default count line, for the errors it did not write one by one. */
  counted: 'each request handled by the storeFailure policy',
  /** `onReleaseError`'s default. */
  releaseError: 'a lease release failed in the store; the lease expires after its ttl',
  /** The end of `onReleaseError`'s default count line. */
  releaseCounted: 'each lease expires after its ttl',
} as const;
