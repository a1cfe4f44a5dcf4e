export type { Algorithm, AlgorithmKind, Transition } from './algorithm.js';
export { bindName, EPSILON, fingerprint, slackFor } from './algorithm.js';
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
export type { BlockOptions, BlockPolicy, BlockState } from './block.js';
export { blockedDecision, blockingDecision, blockLeft, resolveBlock, startBlock } from './block.js';
export type { AcquireOptions, ConcurrencyLimiterOptions } from './concurrency/concurrency-limiter.js';
export { ConcurrencyLimiter } from './concurrency/concurrency-limiter.js';
export type { Lease } from './concurrency/lease.js';
export { leaseDecision } from './concurrency/lease-decision.js';
export { leaseId } from './concurrency/lease-id.js';
export type { LeaseAcquire, LeaseCall, LeaseStore } from './concurrency/lease-store.js';
export { MemoryLeases } from './concurrency/memory-leases.js';
export type { Decision, RefusalReason } from './decision.js';
export { ceilMs, combine, decide, retryMs, shadowed } from './decision.js';
export type { Duration } from './duration.js';
export { MAX_DURATION, parseDuration } from './duration.js';
export { describeValue, ErrorCode, SluiceError } from './errors.js';
export * from './http/index.js';
export type { CheckOptions, LimitDefinition, LimiterOptions, LimitKeys, ResolvedLimit } from './limiter.js';
export { assertAlgorithm, Limiter, limitCall } from './limiter.js';
export type { MemoryStoreOptions } from './memory-store.js';
export { MemoryStore } from './memory-store.js';
export type { FleetShedderOptions } from './shedding/fleet-shedder.js';
export { FleetShedder } from './shedding/fleet-shedder.js';
export { DEFAULT_PRIORITIES } from './shedding/priorities.js';
export type { ResolvedRetryRange, RetryRange } from './shedding/retry-hint.js';
export { retryHint } from './shedding/retry-hint.js';
export type { ClosableSignal, EventLoopDelayOptions } from './shedding/signals.js';
export { eventLoopDelaySignal, eventLoopUtilizationSignal } from './shedding/signals.js';
export type { ControllerParams, ControllerState } from './shedding/utilization-controller.js';
export {
  controlStep,
  dropProbabilities,
  restingState,
  shedLevel,
} from './shedding/utilization-controller.js';
export type { UtilizationShedderOptions } from './shedding/utilization-shedder.js';
export { UtilizationShedder } from './shedding/utilization-shedder.js';
export type { BlockWrite, LimitCall, MaybePromise, StateWrite, Store } from './store.js';
export { settleBatch, UNCHANGED } from './store.js';
export { MAX_TIME, MIN_UNIT_TIME } from './time-range.js';
export {
  assertKnownOptions,
  booleanOption,
  functionOption,
  integerOption,
  oneOfOption,
  positiveOption,
  requireOption,
} from './validate.js';
