// The public API for apps: algorithms, limiters, shedders, keys, stores, errors. What adapters and
// stores are built from (validation helpers, HTTP plumbing, the store contract's parts) is
// `@sluice/core/adapter`. A name added here is pinned by test/core/public-api.test.ts.
export type {
  AdaptiveConcurrencyOptions,
  AdaptiveLease,
  PartitionSnapshot,
  ReleaseOutcome,
} from './adaptive/adaptive-concurrency.js';
export { AdaptiveConcurrency } from './adaptive/adaptive-concurrency.js';
export type { AimdOptions } from './adaptive/aimd.js';
export { aimd } from './adaptive/aimd.js';
export type { ControllerKind, LimitController } from './adaptive/controller.js';
export type { EnvoyGradientOptions } from './adaptive/envoy-gradient.js';
export { envoyGradient } from './adaptive/envoy-gradient.js';
export type { Gradient2Options } from './adaptive/gradient2.js';
export { gradient2 } from './adaptive/gradient2.js';
export type { RttSample, WindowOptions } from './adaptive/sample-window.js';
export type { VegasOptions } from './adaptive/vegas.js';
export { vegas } from './adaptive/vegas.js';
export type { Algorithm } from './algorithm.js';
export type { AlgorithmKind } from './algorithm-kinds.js';
export type { FixedWindowOptions } from './algorithms/fixed-window.js';
export { fixedWindow } from './algorithms/fixed-window.js';
export type { GcraOptions } from './algorithms/gcra.js';
export { gcra } from './algorithms/gcra.js';
export type { LeakyBucketQueueOptions } from './algorithms/leaky-bucket-queue.js';
export { leakyBucketQueue } from './algorithms/leaky-bucket-queue.js';
export type { SlidingWindowCounterOptions } from './algorithms/sliding-window-counter.js';
export { slidingWindowCounter } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowLogOptions } from './algorithms/sliding-window-log.js';
export { slidingWindowLog } from './algorithms/sliding-window-log.js';
export type { TokenBucketOptions } from './algorithms/token-bucket.js';
export { tokenBucket } from './algorithms/token-bucket.js';
export type { BlockOptions } from './block.js';
export type { AcquireOptions, ConcurrencyLimiterOptions } from './concurrency/concurrency-limiter.js';
export { ConcurrencyLimiter } from './concurrency/concurrency-limiter.js';
export type { Lease } from './concurrency/lease.js';
export type { Decision, RefusalReason } from './decision.js';
export type { Duration } from './duration.js';
export { ErrorCode, SluiceError } from './errors.js';
export type { RateLimitControl } from './http/control.js';
export type { HeaderFormat } from './http/headers.js';
export type {
  AnyKey,
  ByIpOptions,
  ByTokenOptions,
  KeyFunction,
  ProxyTrust,
  RequestAccess,
  WarningCode,
} from './http/keys.js';
export { byIp, byRoute, byToken, compose } from './http/keys.js';
export type { CountWhen, LimitKey, ResponseOutcome, SluiceWarning } from './http/options.js';
export type { PlanCacheOptions, PlanChanged, PlanFunction } from './http/plan-cache.js';
export type { ProblemDetails } from './http/problem.js';
export type { LimitDefinition, ResolvedLimit } from './limit-definitions.js';
export type { CheckOptions, LimiterOptions, LimitKeys } from './limiter.js';
export { Limiter } from './limiter.js';
export type { MemoryStoreOptions } from './memory-store.js';
export { MemoryStore } from './memory-store.js';
export type { FleetShedderOptions } from './shedding/fleet-shedder.js';
export { FleetShedder } from './shedding/fleet-shedder.js';
export { DEFAULT_PRIORITIES } from './shedding/priorities.js';
export type { RetryRange } from './shedding/retry-hint.js';
export type { ClosableSignal, EventLoopDelayOptions } from './shedding/signals.js';
export { eventLoopDelaySignal, eventLoopUtilizationSignal } from './shedding/signals.js';
export type { UtilizationShedderOptions } from './shedding/utilization-shedder.js';
export { UtilizationShedder } from './shedding/utilization-shedder.js';
export type { LimitCall, MaybePromise, Store } from './store.js';
