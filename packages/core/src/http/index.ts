export type { ClientResponse, ClientWatch } from './client.js';
export { clientLeft, signalClient, watchClient } from './client.js';
export type { RateLimitControl } from './control.js';
export { withControl } from './control.js';
export type {
  HttpConcurrencyOptions,
  HttpFleetShedOptions,
  HttpGuardOptions,
  HttpUtilizationShedOptions,
  Priority,
} from './guard-options.js';
export {
  CONCURRENCY_ENGINE,
  CONCURRENCY_OPTIONS,
  FLEET_ENGINE,
  FLEET_OPTIONS,
  GUARD_OPTIONS,
  UTILIZATION_ENGINE,
  UTILIZATION_OPTIONS,
} from './guard-options.js';
export type { GetHeader, HeaderFormat, HeaderLimit, PlanOf, SetHeader } from './headers.js';
export { HEADER_FORMATS, RateLimitHeaders, resetSeconds, seconds } from './headers.js';
export type { GuardDefaults, GuardKind } from './http-guard.js';
export { concurrencyGuard, fleetGuard, HttpGuard, utilizationGuard } from './http-guard.js';
export type { AdapterDefaults, RequestAccessBase } from './http-limiter.js';
export { HttpLimiter, httpLimits } from './http-limiter.js';
export type { AddressList } from './ip.js';
export { addressList, clientAddress } from './ip.js';
export type {
  AnyKey,
  ByIpOptions,
  ByTokenOptions,
  KeyFunction,
  ProxyTrust,
  RequestAccess,
  WarningCode,
} from './keys.js';
export { byIp, byRoute, byToken, compose } from './keys.js';
export type { EndedResponse, HttpExchange, Lifecycle } from './lifecycle.js';
export { guardLifecycle, rateLimitLifecycle, whenEnded } from './lifecycle.js';
export type { CompiledLimit, Reservation } from './limit-set.js';
export { LimitSet } from './limit-set.js';
export type {
  CountWhen,
  HttpLimit,
  HttpLimitOptions,
  LimitKey,
  ResponseOutcome,
  SluiceWarning,
} from './options.js';
export { HTTP_OPTIONS } from './options.js';
export type { PlanCacheOptions, PlanChanged, PlanFunction } from './plan-cache.js';
export { PLAN_CACHE_OPTIONS, PlanCache } from './plan-cache.js';
export type { ProblemDetails, Refusal } from './problem.js';
export {
  PROBLEM_JSON,
  problemDetails,
  QUOTA_EXCEEDED,
  refusal,
  refusalStatus,
  retryAfterSeconds,
  TEMPORARY_REDUCED_CAPACITY,
} from './problem.js';
