import './types.js';

// The keys and algorithms, so a Fastify app needs one import.
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
export type { SluiceHook } from './hook.js';
export type { SluiceOptions } from './options.js';
export { sluice, sluice as default } from './plugin.js';
