import './types.js';

// The keys and algorithms, so an Express app needs one import.
export {
  byIp,
  byRoute,
  byToken,
  compose,
  type Decision,
  fixedWindow,
  gcra,
  type HeaderFormat,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
export type { RateLimitOptions } from './rate-limit.js';
export { rateLimit } from './rate-limit.js';
