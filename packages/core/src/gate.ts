// `@sluice/core/gate`: the failure handling of a store on a remote backend (timeout, start-up
// wait, circuit breakers, failure policy, onError, the failure log), store-neutral: RedisStore's,
// and ServerStore's over a sluice-server. What only a backend's protocol knows (which errors are
// the backend answering) each store brings (`GateOptions.backendAnswered`). Not for apps; every
// name is pinned by test/core/public-api.test.ts.
export type { BreakerOptions, BreakerState } from './gate/breaker.js';
export type { GateClient, GateOptions, Operation } from './gate/call-gate.js';
export { CallGate } from './gate/call-gate.js';
export { FailureAnswers } from './gate/failure-answers.js';
export { formatShare } from './gate/failure-log.js';
export type {
  FailureOptions,
  FailurePolicy,
  ResolvedFailureOptions,
  StoreErrorEvent,
  StoreLogger,
} from './gate/failure-options.js';
export {
  invalidOption,
  resolveFailureOptions,
  shareOption,
  storeFunctionOption,
} from './gate/failure-options.js';
export { LeaseFailureAnswers } from './gate/lease-failure-answers.js';
export type { RemoteCalls } from './gate/remote-calls.js';
export { remoteCalls } from './gate/remote-calls.js';
