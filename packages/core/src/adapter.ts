// `@sluice/core/adapter`: what adapters (Express, Fastify, …) and stores (Redis, the server) are
// built from, and nothing else. Apps import `@sluice/core`; nothing here is needed to limit
// requests. Stable within a minor version of sluice; every name is pinned by
// test/core/public-api.test.ts, so one added here is a decision, not an accident.

// Algorithms: the registry of kinds, and what a store that runs them elsewhere (Lua) shares.
export type { Transition } from './algorithm.js';
export { bindName, EPSILON, fingerprint } from './algorithm.js';
export { ALGORITHM_FACTORIES } from './algorithm-factories.js';
export type { AlgorithmFactoryName, AlgorithmParam } from './algorithm-kinds.js';
export { ALGORITHM_KIND_LIST, ALGORITHM_KINDS, isAlgorithmKind } from './algorithm-kinds.js';
export type { FixedWindowState } from './algorithms/fixed-window.js';
export type { GcraState } from './algorithms/gcra.js';
export type { LeakyBucketQueueState } from './algorithms/leaky-bucket-queue.js';
export type { SlidingWindowCounterState } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowLogState } from './algorithms/sliding-window-log.js';
export type { TokenBucketState } from './algorithms/token-bucket.js';
// Stores: the all-or-nothing step over a batch, the charge step, blocks, and the bounds of time.
export type { BlockPolicy, BlockState } from './block.js';
export { blockedDecision, blockLeft } from './block.js';
// Leases: the store contract of the concurrency limiter and the fleet shedder.
export { leaseDecision } from './concurrency/lease-decision.js';
export type { LeaseAcquire, LeaseCall, LeaseStore } from './concurrency/lease-store.js';
export { MemoryLeases } from './concurrency/memory-leases.js';
// Decisions, durations, errors, option checks.
export { ceilMs, combine, decide, withFields } from './decision.js';
export { MAX_DURATION, parseDuration } from './duration.js';
export { describeValue } from './errors.js';
export { FingerprintMap } from './fingerprint-map.js';
export type { HttpAdaptiveConcurrencyOptions } from './http/adaptive-guard.js';
// HTTP: the request lifecycle every adapter runs, the Node glue, and what they are built from.
export type { ClientResponse } from './http/client.js';
export { signalClient } from './http/client.js';
export { CompiledLimiters, withControl } from './http/control.js';
export { DEFAULT_LOG_LINES } from './http/default-log-lines.js';
export type { CountWords, ErrorLogWriters } from './http/error-log.js';
export { fewErrorLines, releaseLines, SUMMARY_INTERVAL } from './http/error-log.js';
export type { ExpressLikeRequest } from './http/express-request.js';
export { expressRequestAccess, nodeHeader } from './http/express-request.js';
export type { FastifyLikeRequest } from './http/fastify-request.js';
export { fastifyRequestAccess } from './http/fastify-request.js';
export type {
  HttpConcurrencyOptions,
  HttpFleetShedOptions,
  HttpGuardOptions,
  HttpUtilizationShedOptions,
  Priority,
} from './http/guard-options.js';
export type { GuardName } from './http/guards.js';
export { HttpGuard } from './http/guards.js';
export type { GetHeader, HeaderLimit, PlanOf, SetHeader } from './http/headers.js';
export { HEADER_FORMATS, RateLimitHeaders } from './http/headers.js';
export { clientAddress } from './http/ip.js';
export type { EndedResponse, HttpExchange, Lifecycle } from './http/lifecycle.js';
export { guardLifecycle, rateLimitLifecycle, whenEnded } from './http/lifecycle.js';
export type { HttpGuardOptionsByName, MiddlewareAdapter } from './http/middleware-factories.js';
export {
  buildGuard,
  GUARD_ENGINES,
  guardMiddlewares,
  rateLimitMiddleware,
} from './http/middleware-factories.js';
export { guardFunctionName, named, RATE_LIMIT_FUNCTION_NAME } from './http/middleware-name.js';
export type { NodeExchangeParts, NodeResponse } from './http/node-exchange.js';
export { nodeExchange, nodeResponseHeaders, stringHeader, writeProblem } from './http/node-exchange.js';
export { firstInProcess } from './http/once-per-process.js';
export type { HttpLimit, HttpLimitOptions } from './http/options.js';
export { HTTP_OPTIONS, LIMIT_OPTIONS } from './http/options.js';
export type { Refusal } from './http/problem.js';
export { PROBLEM_CONTENT_TYPE, refusal } from './http/problem.js';
export { HttpLimiter, httpLimits } from './http/rate-limit.js';
export type { AdapterDefaults, RequestAccessBase } from './http/reporter.js';
export { CONSOLE_DEFAULTS } from './http/reporter.js';
export { REPLAY_GRACE_DEFAULT, replayGraceOption } from './replay-grace.js';
export type { BlockWrite, StateWrite } from './store.js';
export { batchStep, chargeStep, UNCHANGED } from './store.js';
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
