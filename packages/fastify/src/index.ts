import './types.js';

// The keys, algorithms, limiters and shedders, so a Fastify app needs one import.
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
export type { SluiceHook } from './hook.js';
export type {
  ConcurrencyLimitOptions,
  FastifyHookOptions,
  FleetShedOptions,
  SluiceOptions,
  SluicePluginOptions,
  UtilizationShedOptions,
} from './options.js';
export { sluice, sluice as default } from './plugin.js';
