// `@sluice/redis/gate`: RedisStore's failure handling (timeout, start-up wait, circuit breaker,
// failure policy, onError), for other stores on a Redis-protocol client (ServerStore). Not for apps.
export type { GateClient, GateOptions, Operation } from './call-gate.js';
export { CallGate } from './call-gate.js';
export { FailureAnswers } from './failure-policy.js';
export { LeaseFailureAnswers } from './lease-failure.js';
export type { FailureOptions, ResolvedFailureOptions } from './options.js';
export { resolveFailureOptions } from './options.js';
