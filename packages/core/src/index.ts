export type { Algorithm, AlgorithmKind, Transition } from './algorithm.js';
export { EPSILON, fingerprint } from './algorithm.js';
export type { FixedWindowOptions, FixedWindowState } from './algorithms/fixed-window.js';
export { fixedWindow } from './algorithms/fixed-window.js';
export type { GcraOptions, GcraState } from './algorithms/gcra.js';
export { gcra } from './algorithms/gcra.js';
export type { LeakyBucketQueueOptions, LeakyBucketQueueState } from './algorithms/leaky-bucket-queue.js';
export { leakyBucketQueue } from './algorithms/leaky-bucket-queue.js';
export type {
  SlidingWindowCounterOptions,
  SlidingWindowCounterState,
} from './algorithms/sliding-window-counter.js';
export { slidingWindowCounter } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowLogOptions, SlidingWindowLogState } from './algorithms/sliding-window-log.js';
export { slidingWindowLog } from './algorithms/sliding-window-log.js';
export type { TokenBucketOptions, TokenBucketState } from './algorithms/token-bucket.js';
export { tokenBucket } from './algorithms/token-bucket.js';
export type { Decision, RefusalReason } from './decision.js';
export { ceilMs, combine, decide } from './decision.js';
export type { Duration } from './duration.js';
export { parseDuration } from './duration.js';
export { ErrorCode, SluiceError } from './errors.js';
export * from './http/index.js';
export type { CheckOptions, LimitDefinition, LimiterOptions, LimitKeys, ResolvedLimit } from './limiter.js';
export { assertAlgorithm, Limiter } from './limiter.js';
export type { MemoryStoreOptions } from './memory-store.js';
export { MemoryStore } from './memory-store.js';
export type { LimitCall, MaybePromise, StateWrite, Store } from './store.js';
export { settleBatch, UNCHANGED } from './store.js';
export {
  assertKnownOptions,
  booleanOption,
  integerOption,
  oneOfOption,
  positiveOption,
  requireOption,
} from './validate.js';
