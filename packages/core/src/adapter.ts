// `@sluice/core/adapter`: what adapters (Express, Fastify, …) and stores (Redis, the server) are
// built from. Apps import `@sluice/core`; nothing here is needed to limit requests. Stable within a
// minor version of sluice, but shaped by the packages of this repository, not by apps.

// Algorithms: the registry of kinds, and the parts a store that runs them elsewhere (Lua) shares.
export type { Transition } from './algorithm.js';
export { bindName, EPSILON, fingerprint, slackFor } from './algorithm.js';
export type { AlgorithmFactoryName, AlgorithmParam } from './algorithm-kinds.js';
export { ALGORITHM_KIND_LIST, ALGORITHM_KINDS, isAlgorithmKind } from './algorithm-kinds.js';
export type { FixedWindowState } from './algorithms/fixed-window.js';
export type { GcraState } from './algorithms/gcra.js';
export type { LeakyBucketQueueState } from './algorithms/leaky-bucket-queue.js';
export type { SlidingWindowCounterState } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowLogState } from './algorithms/sliding-window-log.js';
export type { TokenBucketState } from './algorithms/token-bucket.js';
// Blocks: what a store keeps beside a limit's state while its key is blocked.
export type { BlockPolicy, BlockState } from './block.js';
export { blockedDecision, blockingDecision, blockLeft, resolveBlock, startBlock } from './block.js';
// Leases: the store contract of the concurrency limiter and the fleet shedder.
export { leaseDecision } from './concurrency/lease-decision.js';
export { leaseId } from './concurrency/lease-id.js';
export type { LeaseAcquire, LeaseCall, LeaseStore } from './concurrency/lease-store.js';
export { MemoryLeases } from './concurrency/memory-leases.js';
// Decisions, durations, errors.
export { ceilMs, combine, decide, retryMs, shadowed } from './decision.js';
export { MAX_DURATION, parseDuration } from './duration.js';
export { describeValue } from './errors.js';
// HTTP: the request lifecycle every adapter runs, and what it is compiled from.
export type { ClientResponse, ClientWatch } from './http/client.js';
export { clientLeft, signalClient, watchClient } from './http/client.js';
export { CompiledLimiters, withControl } from './http/control.js';
export type { ExpressLikeRequest } from './http/express-request.js';
export { expressRequestAccess, nodeHeader } from './http/express-request.js';
export type { FastifyLikeRequest } from './http/fastify-request.js';
export { fastifyRequestAccess } from './http/fastify-request.js';
export type { GuardAdapter, HttpGuardOptionsByName } from './http/guard-factories.js';
export { buildGuard, GUARD_ENGINES, guardMiddlewares } from './http/guard-factories.js';
export type {
  HttpConcurrencyOptions,
  HttpFleetShedOptions,
  HttpGuardOptions,
  HttpUtilizationShedOptions,
  Priority,
} from './http/guard-options.js';
export {
  CONCURRENCY_ENGINE,
  CONCURRENCY_OPTIONS,
  FLEET_ENGINE,
  FLEET_OPTIONS,
  GUARD_OPTIONS,
  UTILIZATION_ENGINE,
  UTILIZATION_OPTIONS,
} from './http/guard-options.js';
export type { GuardName } from './http/guards.js';
export { concurrencyGuard, fleetGuard, HttpGuard, utilizationGuard } from './http/guards.js';
export type { GetHeader, HeaderLimit, PlanOf, SetHeader } from './http/headers.js';
export { HEADER_FORMATS, RateLimitHeaders, resetSeconds, seconds } from './http/headers.js';
export type { AddressList } from './http/ip.js';
export { addressList, clientAddress } from './http/ip.js';
export type { EndedResponse, HttpExchange, Lifecycle } from './http/lifecycle.js';
export { guardLifecycle, rateLimitLifecycle, whenEnded } from './http/lifecycle.js';
export type { CompiledLimit, Reservation } from './http/limit-set.js';
export { LimitSet } from './http/limit-set.js';
export { guardFunctionName, named, RATE_LIMIT_FUNCTION_NAME } from './http/middleware-name.js';
export type { NodeExchangeParts, NodeResponse } from './http/node-exchange.js';
export { nodeExchange, nodeResponseHeaders, stringHeader, writeProblem } from './http/node-exchange.js';
export type { HttpLimit, HttpLimitOptions } from './http/options.js';
export { HTTP_OPTIONS } from './http/options.js';
export { PLAN_CACHE_OPTIONS, PlanCache } from './http/plan-cache.js';
export type { Refusal } from './http/problem.js';
export {
  PROBLEM_CONTENT_TYPE,
  PROBLEM_JSON,
  problemDetails,
  QUOTA_EXCEEDED,
  refusal,
  refusalStatus,
  retryAfterSeconds,
  TEMPORARY_REDUCED_CAPACITY,
} from './http/problem.js';
export { HttpLimiter, httpLimits } from './http/rate-limit.js';
export type { AdapterDefaults, RequestAccessBase } from './http/reporter.js';
export { CONSOLE_DEFAULTS, DEFAULT_LOG_LINES, Reporter } from './http/reporter.js';
// Limiter and stores.
export { assertAlgorithm, limitCall } from './limit-definitions.js';
export type { ResolvedRetryRange } from './shedding/retry-hint.js';
export { retryHint } from './shedding/retry-hint.js';
export type { ControllerParams, ControllerState } from './shedding/utilization-controller.js';
export {
  controlStep,
  dropProbabilities,
  restingState,
  shedLevel,
} from './shedding/utilization-controller.js';
export type { BlockWrite, LimitCall, StateWrite } from './store.js';
export { batchStep, chargeStep, settleBatch, UNCHANGED } from './store.js';
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
