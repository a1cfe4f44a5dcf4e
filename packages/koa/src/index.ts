import './types.js';

// The keys, algorithms, limiters and shedders, so a Koa app needs one import.
export {
  byIp,
  byRoute,
  byToken,
  ConcurrencyLimiter,
  compose,
  type Decision,
  eventLoopDelaySignal,
  FleetShedder,
  fixedWindow,
  gcra,
  type HeaderFormat,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  UtilizationShedder,
} from '@sluice/core';
export type { RefusalHandler } from './exchange.js';
export type { ConcurrencyLimitOptions, FleetShedOptions, UtilizationShedOptions } from './guards.js';
export { concurrencyLimit, fleetShed, utilizationShed } from './guards.js';
export type { RateLimitMiddleware, RateLimitOptions } from './rate-limit.js';
export { rateLimit } from './rate-limit.js';
