import './types.js';

// The public API of @sluice/core (keys, algorithms, limiters, shedders, stores), so an Express app needs one import.
export * from '@sluice/core';
// How sluice reads an Express request (core's expressRequestAccess, typed for Express): for frameworks built on Express.
export { expressAccess } from './access.js';
export type { ExpressRateLimitMiddleware } from './erl/middleware.js';
export type {
  ClientRateLimitInfo,
  ExpressRateLimitHandler,
  ExpressRateLimitInfo,
  ExpressRateLimitLogger,
  ExpressRateLimitOptions,
  ExpressRateLimitStore,
  LegacyExpressRateLimitStore,
  ResolvedExpressRateLimitOptions,
} from './erl/types.js';
export type { ExpressRateLimitPlan } from './from-express-rate-limit.js';
export { fromExpressRateLimit } from './from-express-rate-limit.js';
export type {
  AdaptiveConcurrencyGuardOptions,
  ConcurrencyLimitOptions,
  FleetShedOptions,
  UtilizationShedOptions,
} from './guards.js';
export { adaptiveConcurrency, concurrencyLimit, fleetShed, utilizationShed } from './guards.js';
export type { RateLimitMiddleware, RateLimitOptions } from './rate-limit.js';
export { rateLimit } from './rate-limit.js';
export type { RefusalHandler } from './refuse.js';
