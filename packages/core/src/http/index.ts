export type { ClientResponse, ClientWatch } from './client.js';
export { clientLeft, signalClient, watchClient } from './client.js';
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
export type { GuardKind } from './guards.js';
export { concurrencyGuard, fleetGuard, HttpGuard, utilizationGuard } from './guards.js';
export type { GetHeader, HeaderFormat, SetHeader } from './headers.js';
export { HEADER_FORMATS, RateLimitHeaders, resetSeconds, seconds } from './headers.js';
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
export type { HttpLimit, HttpLimitOptions, SluiceWarning } from './options.js';
export { HTTP_OPTIONS } from './options.js';
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
export { HttpLimiter, httpLimits } from './rate-limit.js';
export type { AdapterDefaults, RequestAccessBase } from './reporter.js';
export { CONSOLE_DEFAULTS, Reporter } from './reporter.js';
