// `@sluice/redis/gate`: the failure handling of a store on a remote backend (timeout, start-up
// wait, circuit breakers, failure policy, onError, the failure log), store-neutral: RedisStore's,
// and ServerStore's over a sluice-server. It imports neither Redis client nor node-redis. Not for apps.
export type { BreakerOptions, BreakerState } from './gate/breaker.js';
export type { GateClient, GateOptions, Operation } from './gate/call-gate.js';
export { CallGate } from './gate/call-gate.js';
export { FailureAnswers } from './gate/failure-answers.js';
export type {
  FailureOptions,
  FailurePolicy,
  ResolvedFailureOptions,
  StoreErrorEvent,
  StoreLogger,
} from './gate/failure-options.js';
export { resolveFailureOptions } from './gate/failure-options.js';
export { LeaseFailureAnswers } from './gate/lease-failure-answers.js';
export type { RemoteCalls } from './gate/remote-calls.js';
export { remoteCalls } from './gate/remote-calls.js';
